// Attached files of the next message: the Attach file control, the limits
// line, and one removable chip per file. Files are read in the browser
// (text as text, images as base64) and checked against the limits the
// server reports in GET /ai/status (status.attachments), which checks
// them again. An image over 300 KB is made smaller first (smaller()):
// at most 1,400 px on its longest side, re-encoded on a canvas; the
// original is sent when that fails or does not come out smaller. Names
// are shown as text only.

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
    ? `images (PNG, JPEG, GIF, WebP) up to ${size(l.image_max_bytes)}, sent smaller when over ${size(SHRINK_OVER)}`
    : "no images: this model reads text only";
  return `Up to ${l.max_files} files: text (${l.text_extensions.join(" ")}) up to ${size(l.text_max_bytes)}; ` +
    `the first ${l.text_max_chars.toLocaleString("en-US")} characters are read; ${images}.`;
}

// SHRINK_OVER is the image size, in bytes, above which an image is made
// smaller before it is sent; MAX_EDGE the longest side it is drawn at.
export const SHRINK_OVER = 300 * 1024;
export const MAX_EDGE = 1400;

function encode(canvas, type, quality) {
  return new Promise((resolve) => canvas.toBlob(resolve, type, quality));
}

// transparent says whether any pixel drawn on ctx lets the background
// through.
function transparent(ctx, w, ht) {
  const px = ctx.getImageData(0, 0, w, ht).data;
  for (let i = 3; i < px.length; i += 4) if (px[i] < 255) return true;
  return false;
}

// smaller returns image file f re-encoded with its longest side at most
// MAX_EDGE px: as JPEG, or, when it has transparent pixels, as WebP
// (PNG where the browser writes no WebP), so transparency stays and
// never turns black. null when the browser cannot decode or encode it,
// or when the result is not smaller than f: then f is sent as it is.
// An animated image becomes its first frame.
export async function smaller(f) {
  let bitmap;
  try {
    bitmap = await createImageBitmap(f);
  } catch {
    return null;
  }
  try {
    const scale = Math.min(1, MAX_EDGE / Math.max(bitmap.width, bitmap.height));
    const w = Math.max(1, Math.round(bitmap.width * scale));
    const ht = Math.max(1, Math.round(bitmap.height * scale));
    const canvas = document.createElement("canvas");
    canvas.width = w;
    canvas.height = ht;
    const ctx = canvas.getContext("2d", { willReadFrequently: true });
    ctx.imageSmoothingQuality = "high";
    ctx.drawImage(bitmap, 0, 0, w, ht);
    let blob;
    if (f.type !== "image/jpeg" && transparent(ctx, w, ht)) {
      blob = await encode(canvas, "image/webp", 0.85);
      if (!blob || blob.type !== "image/webp") blob = await encode(canvas, "image/png");
    } else {
      blob = await encode(canvas, "image/jpeg", 0.85);
    }
    return blob && blob.size > 0 && blob.size < f.size ? blob : null;
  } catch {
    return null;
  } finally {
    bitmap.close();
  }
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
        const type = l.image_types.includes(f.type) ? f.type : IMAGE_EXTENSIONS[ext];
        const small = f.size > SHRINK_OVER ? await smaller(f) : null;
        if (small) {
          this.files.push({ name: f.name, size: small.size, original: f.size, media_type: small.type, data: base64(await small.arrayBuffer()) });
        } else {
          this.files.push({ name: f.name, size: f.size, media_type: type, data: base64(await f.arrayBuffer()) });
        }
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
      // A smaller copy says so, with the size it was.
      const sized = f.original ? `${size(f.size)}, made smaller from ${size(f.original)}` : size(f.size);
      const li = h("li", { class: "chip file-chip" }, h("span", { title: f.name }, f.name), h("small", {}, sized), remove);
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
