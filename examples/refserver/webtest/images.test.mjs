// Issue 35, seed 001: an image over about 300 KB is re-encoded in the
// browser before it is sent, its longest edge at most 1,400 px, as JPEG,
// or as WebP when it has transparent pixels; the original is sent when
// the browser cannot decode it or the copy comes out larger. The test
// makes the images on a canvas, attaches them, and reads what the page
// uploads: the bytes, their type and their pixel dimensions.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, settled, lastTurn, desktop, phone, assert } from "./lib.mjs";

before(launch);
after(close);

const KB = 1024;

// makeImage draws a w×ht image in the page and encodes it: a gradient
// with deterministic noise of the given amplitude (255: all noise),
// the left half transparent when alpha is set.
async function makeImage(page, spec) {
  const b64 = await page.evaluate(async ({ w, ht, type, quality, alpha, noise }) => {
    const c = document.createElement("canvas");
    c.width = w;
    c.height = ht;
    const ctx = c.getContext("2d");
    const img = ctx.createImageData(w, ht);
    let seed = 42;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let y = 0; y < ht; y++) {
      for (let x = 0; x < w; x++) {
        const i = (y * w + x) * 4;
        const n = () => noise * (rnd() - 0.5);
        const mix = noise >= 255 ? 0 : 1;
        img.data[i] = mix * 255 * x / w + n() + (1 - mix) * 128;
        img.data[i + 1] = mix * 255 * y / ht + n() + (1 - mix) * 128;
        img.data[i + 2] = 128 + n();
        img.data[i + 3] = alpha && x < w / 2 ? 0 : 255;
      }
    }
    ctx.putImageData(img, 0, 0);
    const blob = await new Promise((r) => c.toBlob(r, type, quality));
    const buf = new Uint8Array(await blob.arrayBuffer());
    let s = "";
    for (let i = 0; i < buf.length; i += 0x8000) s += String.fromCharCode(...buf.subarray(i, i + 0x8000));
    return btoa(s);
  }, spec);
  return Buffer.from(b64, "base64");
}

// decoded is what the browser reads from base64 image data: its size,
// and the alpha of a pixel in the left half and in the right half.
function decoded(page, data) {
  return page.evaluate(async (b64) => {
    const bytes = Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
    const bm = await createImageBitmap(new Blob([bytes]));
    const c = document.createElement("canvas");
    c.width = bm.width;
    c.height = bm.height;
    const ctx = c.getContext("2d");
    ctx.drawImage(bm, 0, 0);
    const a = (x) => ctx.getImageData(x, Math.floor(bm.height / 2), 1, 1).data[3];
    return { width: bm.width, height: bm.height, leftAlpha: a(2), rightAlpha: a(bm.width - 3) };
  }, data);
}

// sendWith attaches files, sends the message and returns the request's
// attachments as the page uploaded them.
async function sendWith(page, files, text) {
  await page.locator("#attach-input").setInputFiles(files);
  await page.locator("#files .file-chip").nth(files.length - 1).waitFor();
  const request = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/messages"));
  await page.getByLabel("Message", { exact: true }).fill(text);
  await page.getByLabel("Message", { exact: true }).press("Enter");
  const body = (await request).postDataJSON();
  await settled(page);
  return body.attachments;
}

for (const [name, viewport] of [["desktop", desktop], ["phone", phone]]) {
  test(`Images over 300 KB are sent smaller, at most 1,400 px long, transparency kept (${name})`, async () => {
    const page = await open({ viewport });
    await signIn(page, "alice");
    const photo = await makeImage(page, { w: 2400, ht: 1600, type: "image/png", noise: 8 });
    const logo = await makeImage(page, { w: 1800, ht: 1200, type: "image/png", noise: 8, alpha: true });
    for (const [n, b] of [["photo", photo], ["logo", logo]]) {
      assert.ok(b.length > 300 * KB && b.length < 8 * 1024 * KB, `${n}.png is over 300 KB and under 8 MB: ${b.length}`);
    }
    assert.match(await page.locator("#attach-limits").innerText(), /images \(PNG, JPEG, GIF, WebP\) up to 8 MB, sent smaller when over 300 KB\./);
    const sent = await sendWith(page, [{ name: "photo.png", mimeType: "image/png", buffer: photo },
      { name: "logo.png", mimeType: "image/png", buffer: logo }], "What do these show?");
    assert.deepEqual(sent.map((a) => [a.name, a.media_type]), [["photo.png", "image/jpeg"], ["logo.png", "image/webp"]],
      "an opaque image goes as JPEG, a transparent one as WebP");
    const bytes = sent.map((a) => Buffer.from(a.data, "base64"));
    assert.ok(bytes[0].length < photo.length && bytes[1].length < logo.length, "both smaller than they were");
    const [p, l] = [await decoded(page, sent[0].data), await decoded(page, sent[1].data)];
    assert.deepEqual([p.width, p.height], [1400, 933], "the photo's longest edge is 1,400 px, its shape kept");
    assert.deepEqual([l.width, l.height], [1400, 933]);
    assert.deepEqual([l.leftAlpha, l.rightAlpha], [0, 255], "the transparent half stays transparent");
    // The server got those bytes: the demo model reads their size back.
    const answer = await lastTurn(page).locator(".answer .text").first().innerText();
    assert.match(answer, new RegExp(`photo\\.png \\(jpeg image, ${bytes[0].length} bytes\\)`));
    assert.match(answer, new RegExp(`logo\\.png \\(webp image, ${bytes[1].length} bytes\\)`));
    assert.deepEqual(await lastTurn(page).locator(".question-files li").allInnerTexts(), ["photo.png", "logo.png"]);
    await shot(page, "images-sent-" + name);
    await done(page);
  });
}

test("An image the browser cannot decode, or whose copy comes out larger, is sent as it is", async () => {
  const page = await open();
  await signIn(page, "alice");
  // Noise in a low-quality JPEG: the copy, at the page's quality, is larger.
  const noisy = await makeImage(page, { w: 1400, ht: 1000, type: "image/jpeg", quality: 0.5, noise: 255 });
  assert.ok(noisy.length > 300 * KB, `the noisy JPEG is over 300 KB: ${noisy.length}`);
  const small = await makeImage(page, { w: 640, ht: 480, type: "image/png", noise: 0 });
  assert.ok(small.length < 300 * KB, `the small PNG is under 300 KB: ${small.length}`);
  const sent = await sendWith(page, [{ name: "noise.jpg", mimeType: "image/jpeg", buffer: noisy },
    { name: "small.png", mimeType: "image/png", buffer: small }], "and these?");
  assert.deepEqual(sent.map((a) => a.media_type), ["image/jpeg", "image/png"]);
  assert.ok(Buffer.from(sent[0].data, "base64").equals(noisy), "the noisy JPEG went as it was: its copy was larger");
  assert.ok(Buffer.from(sent[1].data, "base64").equals(small), "an image under 300 KB goes as it is");
  assert.match(await lastTurn(page).locator(".answer .text").first().innerText(), new RegExp(`noise\\.jpg \\(jpeg image, ${noisy.length} bytes\\)`));

  // A PNG signature before 400 KB of noise: nothing can decode it. The
  // page sends it as it is; the server refuses it, and it comes back.
  let seed = 7;
  const junk = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    Buffer.from(Array.from({ length: 400 * KB }, () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff))]);
  const broken = await sendWith(page, [{ name: "broken.png", mimeType: "image/png", buffer: junk }], "what about this one?");
  assert.equal(broken[0].media_type, "image/png");
  assert.ok(Buffer.from(broken[0].data, "base64").equals(junk), "the undecodable image went as it was");
  assert.match(await lastTurn(page).locator(".turn-error").innerText(), /PNG/);
  assert.deepEqual(await page.locator("#files .file-chip").allInnerTexts(), ["broken.png\n400 KB\n×"], "it is back, at its own size");
  await done(page);
});
