// The stand-in for a product page the chat links to.
const kind = location.pathname.split("/")[1];
const name = { charts: "chart", datasets: "dataset", dashboards: "dashboard", connections: "connection setup form" }[kind] || "item";
document.getElementById("kind").textContent = name;
document.title = "askbi: " + name;
