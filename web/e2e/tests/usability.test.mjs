// What every user expects of the page (issue #17): no serious or critical
// accessibility violation (axe-core from npm, injected by the harness) in
// any state these tests reach, every control reachable by keyboard and
// labelled; the layout usable at 390 px without horizontal scrolling; the
// keyboard shortcuts listed in the page and doing what their buttons do.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, unexpectedErrors, patience, trainQuick, localise, a11yViolations, waitForRunState, fillFields, loadBundledAndGate } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

/** Fails with every serious or critical violation of the page as it is now. */
async function audit(page, state) {
  const found = await a11yViolations(page);
  assert.deepEqual(found, [], `accessibility violations ${state}`);
  console.log(`  axe: no serious or critical violation ${state}`);
}

/** Every enabled control can take the keyboard's focus. */
async function everyControlFocusable(page) {
  const unreachable = await page.evaluate(() =>
    [...document.querySelectorAll("button, input, select, textarea, summary, a[href]")]
      .filter((e) => !e.disabled && e.offsetParent !== null && e.tabIndex < 0)
      .map((e) => e.outerHTML.slice(0, 80)),
  );
  assert.deepEqual(unreachable, [], "controls the keyboard cannot reach");
}

test("no serious or critical accessibility violation in any state the page reaches, and every control takes the keyboard", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    await audit(page, "at start");
    await page.evaluate(() => (document.querySelector('[data-testid="gates"]').open = true));
    await page.locator('[data-testid="precision-log"] > summary').click();
    await page.locator('[data-testid="shortcuts"] > summary').click();
    await audit(page, "with the gates, the precision log and the shortcuts open");
    await trainQuick(page, { steps: 10, evalInterval: 5 });
    await audit(page, "after a run");
    await loadBundledAndGate(page);
    await localise(page, "ROMEO:");
    await audit(page, "with the bundled model gated and localised");
    await everyControlFocusable(page);
    await page.getByTestId("localize-prompt").fill("☃");
    await page.getByTestId("localize-run").click();
    await page.getByTestId("error").waitFor({ timeout: patience(30_000) });
    await audit(page, "with an error shown");
    await page.reload();
    await page.getByTestId("resume-offer").waitFor({ timeout: patience(90_000) });
    await audit(page, "after a reload, with the offer to resume the last run");
    assert.deepEqual(unexpectedErrors(logs, [/localising the fast paths/]), []);
  } finally {
    await browser.close();
  }
});

test("at 390 px wide the page needs no horizontal scrolling", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.setViewportSize({ width: 390, height: 844 });
    const overflow = () =>
      page.evaluate(() => {
        const doc = document.documentElement;
        const wide = [...document.querySelectorAll("body *")]
          .filter((e) => e.getBoundingClientRect().right > doc.clientWidth + 1 && getComputedStyle(e).position !== "fixed")
          .slice(0, 5)
          .map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
        return { scroll: doc.scrollWidth, client: doc.clientWidth, wide };
      });
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    let o = await overflow();
    assert.ok(o.scroll <= o.client, `at start: ${JSON.stringify(o)}`);
    await loadBundledAndGate(page);
    await page.evaluate(() => (document.querySelector('[data-testid="gates"]').open = true));
    await localise(page, "ROMEO:");
    await page.locator('[data-testid="precision-log"] > summary').click();
    o = await overflow();
    assert.ok(o.scroll <= o.client, `with the model, gates and precision views: ${JSON.stringify(o)}`);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("keyboard shortcuts are listed in the page and press their buttons", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    const list = page.getByTestId("shortcuts");
    assert.equal(await list.locator("dt").count(), 5);
    assert.match(await list.textContent(), /Ctrl\/⌘ \+ Enter/);
    await page.locator("body").press("?");
    assert.equal(await list.evaluate((d) => d.open), true, "? opens the list");
    await page.locator("body").press("?");
    assert.equal(await list.evaluate((d) => d.open), false, "? closes it");
    // Training: Alt+P pauses and resumes, Alt+S stops.
    await page.getByTestId("preset").selectOption("nano");
    await fillFields(page, { "hp-steps": 5000, "hp-batch": 1, "hp-eval-interval": 1000 });
    await page.getByTestId("train").click();
    await waitForRunState(page, "running");
    await page.locator("body").press("Alt+p");
    await waitForRunState(page, "paused");
    await page.locator("body").press("Alt+p");
    await waitForRunState(page, "running");
    await page.locator("body").press("Alt+s");
    await waitForRunState(page, "stopped");
    // Sampling: Ctrl+Enter in the prompt generates, Esc stops a long one.
    await fillFields(page, { "sample-length": 5000, "sample-temperature": "0.8" });
    await page.getByTestId("sample-prompt").press("Control+Enter");
    await page.waitForFunction(() => (document.querySelector('[data-testid="sample-output"]')?.textContent ?? "").length >= 3, null, {
      timeout: patience(120_000),
    });
    await page.getByTestId("sample-prompt").press("Escape");
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: patience(30_000),
    });
    const n = [...(await page.getByTestId("sample-output").textContent())].length;
    assert.ok(n >= 3 && n < 5000, `Esc stopped the generation after ${n} characters`);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("a share link restores the setup as typed, and a hostile link is refused by name while the rest applies", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("preset").selectOption("small");
    const smallSteps = await page.getByTestId("hp-steps").inputValue();
    const typed = {
      "hp-steps": "321",
      "hp-lr": "0.002",
      "hp-seed": "99",
      "sample-prompt": "JULIET:\nO Romeo & 100% ü",
      "sample-length": "120",
      "sample-temperature": "0.5",
      "sample-top-k": "",
      "sample-top-p": "0.9",
      "sample-seed": "7",
    };
    await fillFields(page, typed);
    await page.getByTestId("share-make").click();
    const link = await page.getByTestId("share-link").inputValue();
    assert.match(link, /^http:\/\/127\.0\.0\.1:\d+\/\?preset=small&steps=321&/);
    assert.doesNotMatch(link, /fault|test_hooks|corpus/);
    const { page: opened, logs: logs2 } = await openReady(browser, link);
    assert.equal(await opened.getByTestId("preset").inputValue(), "small");
    for (const [id, value] of Object.entries(typed)) {
      assert.equal(await opened.getByTestId(id).inputValue(), value, `${id} restored`);
    }
    assert.equal(await opened.getByTestId("error").count(), 0, "a good link raises no error");

    const hostile = `${server.url}?preset=small&steps=-5&length=99999999&temperature=abc&top_p=7&prompt=${encodeURIComponent("<script>alert(1)</script>")}&sample_seed=3`;
    const dialogs = [];
    const { page: bad, logs: logs3 } = await openReady(browser, hostile);
    bad.on("dialog", (d) => dialogs.push(d.message()));
    await bad.getByTestId("error").waitFor({ timeout: patience(30_000) });
    const message = await bad.getByTestId("error-text").innerText();
    assert.match(message, /opening a shared link: this link's settings were not all applied — refused: /);
    for (const key of ["steps", "length", "temperature", "top_p"]) {
      assert.match(message, new RegExp(`${key}: `), `${key} refused by name`);
    }
    // The rest applies; the prompt is text, never markup.
    assert.equal(await bad.getByTestId("preset").inputValue(), "small");
    assert.equal(await bad.getByTestId("sample-seed").inputValue(), "3");
    assert.equal(await bad.getByTestId("sample-prompt").inputValue(), "<script>alert(1)</script>");
    assert.equal(await bad.getByTestId("hp-steps").inputValue(), smallSteps, "a refused value keeps the preset's");
    assert.deepEqual(dialogs, []);
    for (const l of [logs, logs2]) assert.deepEqual(unexpectedErrors(l), []);
    assert.deepEqual(unexpectedErrors(logs3, [/opening a shared link/]), []);
  } finally {
    await browser.close();
  }
});

test("the memory plan shows as bars against the engine's budget and this GPU's per-buffer limit", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    const total = page.getByTestId("memory-total");
    const largest = page.getByTestId("memory-largest");
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="memory-largest"]')?.dataset.limit) > 0, null, {
      timeout: patience(30_000),
    });
    assert.equal(await total.getAttribute("data-fits"), "true");
    assert.equal(await largest.getAttribute("data-fits"), "true");
    assert.equal(Number(await total.getAttribute("data-used")), Number(await page.getByTestId("preset-estimate").getAttribute("data-memory-bytes")));
    assert.match(await largest.innerText(), /largest buffer \(.+\): .* of this GPU's .* per buffer/);
    await fillFields(page, { "hp-batch": "100000" });
    await page.waitForFunction(() => document.querySelector('[data-testid="memory-total"]')?.dataset.fits === "false", null, {
      timeout: patience(10_000),
    });
    assert.match(await total.locator(".mem-fill").getAttribute("class"), /\bover\b/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("asked to, the page sends one system notification when a run finishes, saying where it ended", async () => {
  const browser = await launch({ webgpu: true });
  try {
    // A recording stand-in for the Notification API (headless Chromium
    // shows none), granting permission when asked.
    const beforeGoto = (page) =>
      page.addInitScript(() => {
        window.__notes = [];
        let permission = "default";
        window.Notification = class {
          constructor(title, options) {
            window.__notes.push({ title, body: options?.body ?? "" });
          }
          static get permission() {
            return permission;
          }
          static requestPermission() {
            permission = "granted";
            return Promise.resolve("granted");
          }
        };
      });
    const { page, logs } = await openReady(browser, server.url, { beforeGoto });
    await page.getByTestId("notify-done").check();
    await page.waitForFunction(() => Notification.permission === "granted");
    assert.equal(await page.getByTestId("notify-done").isChecked(), true);
    await trainQuick(page, { steps: 6, evalInterval: 3 });
    await page.waitForFunction(() => window.__notes.length > 0, null, { timeout: patience(10_000) });
    const notes = await page.evaluate(() => window.__notes);
    assert.equal(notes.length, 1, JSON.stringify(notes));
    assert.equal(notes[0].title, "TinyGPT-rs: run finished");
    assert.match(notes[0].body, /^step 6 of 6 · train loss \d+\.\d{4} · val \d+\.\d{4}$/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
