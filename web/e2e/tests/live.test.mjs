// Watch it learn (issue #17): while training, a short sample from the
// current weights every N steps (or, by default, as often as fits in 5 % of
// the training time), shown as a timeline by step with its measured cost.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, unexpectedErrors, trainQuick, numAttr, testid } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

const timeline = (page) =>
  page.evaluate(() =>
    [...document.querySelectorAll('[data-testid="live-timeline"] li')].map((li) => ({
      step: Number(li.dataset.step),
      text: li.querySelector(".live-text").textContent,
    })),
  );

test("live samples land on every N steps, by step, and a bad interval is refused", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    const every = page.getByTestId("live-every");
    await every.fill("often");
    await every.dispatchEvent("change");
    assert.match(await testid(page, "live-validation"), /live sample every: “often” is not a whole number/);
    await every.fill("5");
    await every.dispatchEvent("change");
    assert.equal(await page.getByTestId("live-validation").isHidden(), true, "the error clears");

    await trainQuick(page, { steps: 20, evalInterval: 10 });
    const seen = await timeline(page);
    assert.deepEqual(seen.map((s) => s.step), [20, 15, 10, 5], "newest first, exactly every 5 steps");
    for (const s of seen) assert.equal([...s.text].length, 64, `64 characters at step ${s.step}`);
    const share = Number(await page.getByTestId("live-panel").getAttribute("data-share"));
    assert.ok(share > 0 && share < 1, `a measured share of the training time: ${share}`);
    assert.match(await testid(page, "live-cost"), /4 samples · sampling took \d+\.\d % of the training time/);
    console.log(`  every 5 steps: ${(100 * share).toFixed(1)} % of the training time (${await testid(page, "live-cost")})`);

    // Off: a new run clears the timeline and adds nothing.
    await every.fill("off");
    await every.dispatchEvent("change");
    await trainQuick(page, { steps: 10, evalInterval: 5 });
    assert.equal(await numAttr(page, "live-panel", "data-count"), 0);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("auto live samples keep to their time budget", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    assert.equal(await page.getByTestId("live-every").inputValue(), "auto");
    await trainQuick(page, { steps: 100, evalInterval: 50, batch: 2 });
    const seen = await timeline(page);
    assert.ok(seen.length >= 1, "at least one live sample in a run of this length");
    const steps = seen.map((s) => s.step).reverse();
    assert.ok(steps.every((s, i) => i === 0 || s > steps[i - 1]), `steps rise: ${steps}`);
    const share = Number(await page.getByTestId("live-panel").getAttribute("data-share"));
    console.log(`  auto: samples at steps ${steps}; ${(100 * share).toFixed(2)} % of the training time`);
    // The rule admits a sample only when, at the last sample's measured
    // cost, it still fits in 5 %: past the first sample (whose cost is a
    // guess) the share stays within the budget.
    if (seen.length >= 2) assert.ok(share <= 0.05 + 1e-9, `share ${share}`);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
