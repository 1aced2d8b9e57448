// Guidance (issue #17): a "?" explainer on every control, every panel and
// every pill (the active pill's says what its gate measured), and a short
// first-visit tour that can be skipped, is remembered, and can be replayed.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, unexpectedErrors, patience, a11yViolations } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

test("every control, panel and pill has a \"?\" that explains it", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    const missing = await page.evaluate(() => {
      const explained = new Set(
        [...document.querySelectorAll(".help-button")].flatMap((b) => b.dataset.helpFor.split(" ")),
      );
      const controls = [...document.querySelectorAll("main.panels input, main.panels select, main.panels textarea, [data-testid^='pill-']")]
        .map((e) => e.dataset.testid)
        .filter((id) => id && !explained.has(id));
      const panels = [...document.querySelectorAll("main.panels > section.card")]
        .filter((s) => !s.querySelector(".help-button"))
        .map((s) => s.dataset.testid);
      return { controls, panels, count: explained.size };
    });
    assert.deepEqual(missing.controls, [], "controls and pills without an explainer");
    assert.deepEqual(missing.panels, [], "panels without an explainer");
    console.log(`  ${missing.count} controls, panels and pills explained`);

    // Each note opens alone, says something, and closes on Escape.
    const buttons = page.locator(".help-button");
    const n = await buttons.count();
    for (let i = 0; i < n; i++) {
      const b = buttons.nth(i);
      if (!(await b.isVisible())) continue;
      await b.click();
      assert.equal(await b.getAttribute("aria-expanded"), "true");
      assert.equal(await page.getByTestId("help-note").count(), 1, "one note at a time");
      const text = await page.getByTestId("help-note").innerText();
      assert.ok(text.length > 40, `note of ${await b.getAttribute("data-testid")}: ${text}`);
      await page.keyboard.press("Escape");
      assert.equal(await page.getByTestId("help-note").count(), 0, "Escape closes it");
    }

    // The active pill's note says what its gate measured.
    await page.getByTestId("help-pill-f16-storage").click();
    const note = await page.getByTestId("help-note").innerText();
    assert.match(note, /The gate measured: .*f16-storage/, note);
    assert.deepEqual(await a11yViolations(page), [], "accessibility with a note open");
    await page.getByTestId("help-pill-f16-storage").click();
    assert.equal(await page.getByTestId("help-note").count(), 0, "a second click closes it");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("the tour greets a first visit, can be skipped, is remembered and can be replayed", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url, { tour: true });
    const tour = page.getByTestId("tour");
    await tour.waitFor();
    const focused = () => page.evaluate(() => [...document.querySelectorAll("[data-tour-focus]")].map((e) => e.dataset.testid));
    assert.equal(await tour.getAttribute("data-step"), "0");
    assert.deepEqual(await focused(), ["caps"]);
    assert.ok(await page.getByTestId("tour-back").isDisabled());
    await page.getByTestId("tour-next").click();
    assert.equal(await tour.getAttribute("data-step"), "1");
    assert.deepEqual(await focused(), ["train-panel"]);
    await page.getByTestId("tour-back").click();
    assert.deepEqual(await focused(), ["caps"]);
    assert.deepEqual(await a11yViolations(page), [], "accessibility with the tour open");
    await page.getByTestId("tour-skip").click();
    assert.equal(await tour.count(), 0, "skipped");
    assert.deepEqual(await focused(), [], "nothing stays marked");

    await page.reload();
    await page.getByTestId("tour-start").waitFor();
    assert.equal(await page.getByTestId("tour").count(), 0, "a skipped tour does not come back");

    await page.getByTestId("tour-start").click();
    const seen = [];
    for (;;) {
      seen.push((await focused())[0]);
      const next = page.getByTestId("tour-next");
      if ((await next.innerText()) === "Done") break;
      await next.click();
    }
    assert.deepEqual(seen, ["caps", "train-panel", "run-panel", "sample-panel", "precision-panel"]);
    await page.getByTestId("tour-next").click();
    assert.equal(await page.getByTestId("tour").count(), 0, "done");
    assert.equal(await page.evaluate(() => localStorage.getItem("tinygpt.tour")), "done");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
