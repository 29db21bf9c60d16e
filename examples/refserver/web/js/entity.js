// The stand-in for the host product's own form that sets up a native
// source (the chat's setup card opens it with ?type=).
const type = new URLSearchParams(location.search).get("type") || "";
const name = (type ? type + " " : "") + "connection setup form";
document.getElementById("kind").textContent = name;
document.title = "askbi: " + name;
