// The loss chart as people expect it (issue #17): a read-out of the point
// under the pointer (and by keyboard), EMA smoothing, a log scale, saved
// runs overlaid for comparison, and the bundled model's own training curve
// from its card.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, unexpectedErrors, patience, trainQuick, numAttr, waitForAttr, testid, a11yViolations, loadBundledAndGate } from "../lib.mjs";
import { readFile } from "node:fs/promises";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

const chartAttr = (page, attr) => page.getByTestId("loss-chart").getAttribute(attr);

test("the chart reads out a step, smooths, goes log and overlays a saved run", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await trainQuick(page, { steps: 20, evalInterval: 5, lr: "1e-2" });
    await page.waitForFunction(() => document.querySelector('[data-testid="saved-runs"]')?.getAttribute("data-count") === "1");
    await trainQuick(page, { steps: 20, evalInterval: 5, lr: "3e-3" });
    await page.waitForFunction(() => document.querySelector('[data-testid="saved-runs"]')?.getAttribute("data-count") === "2");
    assert.equal(await numAttr(page, "loss-chart", "data-train-points"), 20);

    // Hovering the middle of the plot reads out the step there.
    const box = await page.getByTestId("loss-chart").boundingBox();
    await page.mouse.move(box.x + box.width * ((56 + (640 - 72) / 2) / 640), box.y + box.height / 2);
    const hovered = await testid(page, "chart-readout");
    const m = hovered.match(/^step (\d+) · train (\d+\.\d{4}) · validation (\d+\.\d{4}) \(step (\d+)\)/);
    assert.ok(m, `read-out: ${hovered}`);
    assert.ok(Number(m[1]) >= 8 && Number(m[1]) <= 12, `the middle of 0..20 is about step 10: ${hovered}`);
    assert.equal(await page.locator(".chart .cursor").count(), 1, "a cursor line is drawn");

    // The keyboard: ← from nothing goes to the last step, → walks forward.
    await page.mouse.move(0, 0);
    await page.getByTestId("loss-chart").focus();
    await page.keyboard.press("ArrowLeft");
    assert.match(await testid(page, "chart-readout"), /^step 20 · /);
    await page.keyboard.press("ArrowLeft");
    assert.match(await testid(page, "chart-readout"), /^step 19 · /);
    await page.keyboard.press("ArrowRight");
    assert.match(await testid(page, "chart-readout"), /^step 20 · /);

    // Smoothing: the drawn line's end moves off the raw last loss, the raw
    // line stays faint behind it, and the read-out gives both.
    const raw = await chartAttr(page, "data-last-train-loss");
    assert.equal(await chartAttr(page, "data-smoothed-last"), raw, "no smoothing at first");
    await page.getByTestId("chart-smoothing").selectOption("0.9");
    assert.notEqual(await chartAttr(page, "data-smoothed-last"), raw, "smoothed");
    assert.equal(await page.getByTestId("train-raw").count(), 1);
    assert.match(await testid(page, "chart-readout"), / · smoothed \d+\.\d{4}/);

    // Log scale: the axis says so, every tick label is positive.
    await page.getByTestId("chart-log").check();
    assert.equal(await chartAttr(page, "data-log-scale"), "true");
    assert.match(await page.locator(".chart .axis-title").nth(1).textContent(), /log scale/);
    // The loss ticks (right-aligned, left of the plot): positive, rising
    // upwards, bunched towards the top as a log axis has them.
    const ys = await page.locator('.chart .tick-label[text-anchor="end"]').evaluateAll((els) =>
      els.map((e) => ({ v: Number(e.textContent), y: Number(e.getAttribute("y")) })),
    );
    assert.ok(ys.length >= 2 && ys.every((t) => t.v > 0), `ticks ${JSON.stringify(ys)}`);
    assert.ok(ys.every((t, i) => i === 0 || (t.v > ys[i - 1].v && t.y < ys[i - 1].y)), "rising upwards");
    if (ys.length >= 3) {
      const gap = (i) => (ys[i - 1].y - ys[i].y) / (ys[i].v - ys[i - 1].v);
      assert.ok(gap(1) > gap(ys.length - 1), "more room per nat at low losses");
    }

    // Compare with the first run: its curve is drawn, named and removable.
    const options = await page.getByTestId("chart-compare").locator("option").allTextContents();
    assert.equal(options.length, 2, `the other saved run only: ${options}`);
    await page.getByTestId("chart-compare").selectOption({ index: 1 });
    await waitForAttr(page, "loss-chart", "data-overlays", "1", patience(30_000));
    assert.equal(await page.getByTestId("overlay-line").count(), 1);
    const name = (await page.getByTestId("overlay-chips").textContent()).replace("×", "").trim();
    assert.ok(options[1].startsWith(name), `${name} is the run chosen (${options[1]})`);
    await page.getByTestId("loss-chart").focus();
    await page.keyboard.press("ArrowRight");
    assert.match(await testid(page, "chart-readout"), new RegExp(` · ${name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\d+\\.\\d{4} \\(step 20\\)`));
    const violations = await a11yViolations(page);
    assert.deepEqual(violations, [], "accessibility with the chart's controls in use");
    await page.getByRole("button", { name: `stop comparing with ${name}` }).click();
    assert.equal(await chartAttr(page, "data-overlays"), "0");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("the bundled model comes with its own training curve from its card", async () => {
  const card = JSON.parse(await readFile(new URL("../../../models/shakespeare.card.json", import.meta.url), "utf8"));
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await loadBundledAndGate(page);
    await waitForAttr(page, "loss-chart", "data-val-points", String(card.curve.val.length), patience(30_000));
    assert.equal(await numAttr(page, "loss-chart", "data-train-points"), card.curve.train.length);
    assert.equal(Math.fround(Number(await chartAttr(page, "data-last-train-loss"))), Math.fround(card.curve.train.at(-1)[1]));
    assert.equal(await page.locator(".chart-empty").count(), 0, "no 'no training yet'");
    assert.match(await testid(page, "progress-val-loss"), /1\.380/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
