// Issue 17: attachments in the composer. An attached CSV is asked about
// through the mock model; files are removable chips before sending and
// named in the transcript, also after a reload; a refused file comes back
// to the composer with the message.

import { test, before, after } from "node:test";
import { launch, close, open, done, shot, signIn, send, settled, lastTurn, phone, assert } from "./lib.mjs";

before(launch);
after(close);

const csv = "country,signups\nUS,3410\nDE,3322\nFR,1200\n";
const file = (name, body, mimeType = "text/plain") => ({ name, mimeType, buffer: Buffer.from(body) });

test("An attached CSV is asked about, with its chip before sending and its name in the transcript.", async () => {
  const page = await open();
  await signIn(page, "alice");
  const limits = await page.locator("#attach-limits").innerText();
  assert.match(limits, /Up to 3 files: text \(\.csv .*\.yml\) up to 1 MB; the first 20,000 characters are read; images \(PNG, JPEG, GIF, WebP\) up to 8 MB, sent smaller when over 300 KB\./);

  const evil = 'evil"><script>window.pwned=1</script>.txt';
  const scripts = await page.locator("script").count();
  await page.locator("#attach-input").setInputFiles([file("signups.csv", csv, "text/csv"), file(evil, "hello")]);
  const chips = page.locator("#files .file-chip");
  await assert.doesNotReject(chips.nth(1).waitFor());
  assert.deepEqual(await chips.locator("span").allInnerTexts(), ["signups.csv", evil], "names are shown as text");
  assert.equal(await page.locator("script").count(), scripts, "a file name added no script");
  assert.equal(await page.evaluate(() => window.pwned), undefined);

  // An unsupported file and a fourth file are refused in words.
  // The notice changes after the files are read: wait for each text.
  const notice = (text) => assert.doesNotReject(page.locator("#notice").filter({ hasText: text }).waitFor(), `the notice says ${text}`);
  await page.locator("#attach-input").setInputFiles([file("run.exe", "MZ")]);
  await notice(/run\.exe is not a supported file/);
  await page.locator("#attach-input").setInputFiles([file("b.txt", "b"), file("c.txt", "c")]);
  await notice(/At most 3 files per message/);
  assert.equal(await chips.count(), 3);
  assert.ok(await page.getByRole("button", { name: "Attach file" }).isDisabled(), "no more than 3 files");

  // Removable before sending, by keyboard too.
  await page.getByRole("button", { name: "Remove file " + evil }).click();
  await page.keyboard.press("Enter"); // focus moved to the next chip's remove button: b.txt
  assert.deepEqual(await chips.locator("span").allInnerTexts(), ["signups.csv"]);
  await shot(page, "attach-chips");

  await send(page, "Which country has the most signups?");
  const turn = lastTurn(page);
  assert.match(await turn.locator(".answer").innerText(), /I received signups\.csv \(columns country, signups; 3 rows; the largest signups is 3410, for US\)/);
  assert.deepEqual(await turn.locator(".question-files li").allInnerTexts(), ["signups.csv"]);
  assert.equal(await chips.count(), 0, "sent files leave the composer");
  await shot(page, "attach-answer");

  // A reload shows the name again, from the server's history.
  await page.reload();
  await page.locator(".turn .question-files li").first().waitFor();
  assert.deepEqual(await page.locator(".turn .question-files li").allInnerTexts(), ["signups.csv"]);
  await done(page);
});

test("A file the server refuses comes back to the composer with the message.", async () => {
  const page = await open();
  await signIn(page, "alice");
  // A PNG header on an executable: the page cannot tell, the server can.
  const fake = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("\x7fELF\x02\x01\x01\x00")]);
  await page.locator("#attach-input").setInputFiles([{ name: "chart.png", mimeType: "image/png", buffer: fake }]);
  await page.locator("#files .file-chip").waitFor();
  await page.getByLabel("Message", { exact: true }).fill("what does this chart show?");
  await page.getByLabel("Message", { exact: true }).press("Enter");
  await settled(page);
  assert.match(await lastTurn(page).locator(".turn-error").innerText(), /PNG/);
  assert.deepEqual(await page.locator("#files .file-chip span").allInnerTexts(), ["chart.png"], "the file is back");
  assert.equal(await page.getByLabel("Message", { exact: true }).inputValue(), "what does this chart show?", "the message is back");
  await done(page);
});

test("At 375 px, long file names stay inside the composer and the transcript.", async () => {
  const page = await open({ viewport: phone });
  await signIn(page, "alice");
  const long = "quarterly-signups-by-country-and-plan-with-a-very-long-name-for-the-board.csv";
  await page.locator("#attach-input").setInputFiles([file(long, csv, "text/csv"), file("b.txt", "b"), file("c.log", "c")]);
  await page.locator("#files .file-chip").nth(2).waitFor();
  const overflow = () => page.evaluate(() => Math.max(document.documentElement.scrollWidth,
    ...[...document.querySelectorAll("#composer *, .turn *")].filter((el) => el.getClientRects().length && !el.closest(".vh"))
      .map((el) => el.getBoundingClientRect().right)));
  assert.ok(await overflow() <= phone.width, "no horizontal overflow with file chips: " + await overflow());
  for (const name of [long, "b.txt", "c.log"]) {
    const b = await page.getByRole("button", { name: "Remove file " + name }).boundingBox();
    assert.ok(b && b.x >= 0 && b.x + b.width <= phone.width, name + "'s remove button is on screen");
  }
  await shot(page, "attach-phone");
  await send(page, "what did I attach?");
  assert.ok(await overflow() <= phone.width, "no horizontal overflow in the transcript: " + await overflow());
  assert.equal(await lastTurn(page).locator(".question-files li").count(), 3);
  await done(page);
});
