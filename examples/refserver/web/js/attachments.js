// Attached files of the next message: the Attach file control, the limits
// line, and one removable chip per file. Files are read in the browser
// (text as text, images as base64) and checked against the limits the
// server reports in GET /ai/status (status.attachments), which checks
// them again. Names are shown as text only.

import { $, h } from "./dom.js";

const IMAGE_EXTENSIONS = { ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp" };

function extension(name) {
  const i = name.lastIndexOf(".");
  return i < 0 ? "" : name.slice(i).toLowerCase();
}

function size(n) {
  return n >= 1 << 20 ? Math.round(n / (1 << 20)) + " MB" : n >= 1 << 10 ? Math.round(n / (1 << 10)) + " KB" : n === 1 ? "1 byte" : n + " bytes";
}

// limitsText says the limits in words.
export function limitsText(l) {
  const images = l.images
    ? `images (PNG, JPEG, GIF, WebP) up to ${size(l.image_max_bytes)}`
    : "no images: this model reads text only";
  return `Up to ${l.max_files} files: text (${l.text_extensions.join(" ")}) up to ${size(l.text_max_bytes)}; ` +
    `the first ${l.text_max_chars.toLocaleString("en-US")} characters are read; ${images}.`;
}

function base64(buf) {
  const bytes = new Uint8Array(buf);
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export class Attachments {
  // limits is status.attachments; onChange() runs when the files change;
  // problem(text) says why a file was not attached.
  constructor(limits, { onChange, problem }) {
    this.limits = limits;
    this.files = []; // {name, size, media_type?, text? | data?}
    this.onChange = onChange;
    this.problem = problem;
    this.button = $("attach");
    this.input = $("attach-input");
    this.list = $("files");
    $("attach-limits").textContent = limitsText(limits);
    const accept = [...limits.text_extensions, ...(limits.images ? Object.keys(IMAGE_EXTENSIONS) : [])];
    this.input.setAttribute("accept", accept.join(","));
    this.button.addEventListener("click", () => this.input.click());
    this.input.addEventListener("change", async () => {
      const picked = [...this.input.files];
      this.input.value = "";
      await this.add(picked);
    });
  }

  // add reads and attaches files, refusing those over the limits.
  async add(picked) {
    const l = this.limits;
    const problems = [];
    for (const f of picked) {
      const ext = extension(f.name);
      if (this.files.length >= l.max_files) { problems.push(`At most ${l.max_files} files per message.`); break; }
      if (l.text_extensions.includes(ext)) {
        if (f.size > l.text_max_bytes) { problems.push(`${f.name} is larger than ${size(l.text_max_bytes)}.`); continue; }
        this.files.push({ name: f.name, size: f.size, text: await f.text() });
      } else if (IMAGE_EXTENSIONS[ext] || l.image_types.includes(f.type)) {
        if (f.size > l.image_max_bytes) { problems.push(`${f.name} is larger than ${size(l.image_max_bytes)}.`); continue; }
        this.files.push({ name: f.name, size: f.size, media_type: l.image_types.includes(f.type) ? f.type : IMAGE_EXTENSIONS[ext], data: base64(await f.arrayBuffer()) });
      } else {
        problems.push(`${f.name} is not a supported file.`);
      }
    }
    this.problem(problems.join(" "));
    // A refusal shows the limits it was measured against.
    $("attach-limits").classList.toggle("shown", problems.length > 0);
    this.show();
  }

  // take returns the files to send and clears them; put gives them back
  // (a message the server refused loses nothing).
  take() {
    const out = this.files;
    this.files = [];
    this.show();
    return out;
  }

  put(files) {
    this.files = files;
    this.show();
  }

  show() {
    this.list.replaceChildren(...this.files.map((f) => {
      const remove = h("button", { type: "button", class: "chip-remove", "aria-label": "Remove file " + f.name }, "×");
      const li = h("li", { class: "chip file-chip" }, h("span", { title: f.name }, f.name), h("small", {}, size(f.size)), remove);
      remove.addEventListener("click", () => {
        const at = this.files.indexOf(f);
        this.files = this.files.filter((x) => x !== f);
        this.problem("");
        $("attach-limits").classList.remove("shown");
        this.show();
        const left = this.list.querySelectorAll(".chip-remove");
        (left[Math.min(at, left.length - 1)] || this.button).focus();
      });
      return li;
    }));
    this.button.disabled = this.files.length >= this.limits.max_files;
    this.onChange();
  }

  // body is the files as the chat API takes them.
  static body(files) {
    return files.map((f) => (f.data ? { name: f.name, media_type: f.media_type, data: f.data } : { name: f.name, text: f.text }));
  }
}
