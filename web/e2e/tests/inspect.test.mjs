// Inside the model (issue #17): the prompt and sample run through the
// model once; every character coloured by the model's confidence in it,
// its ten likeliest alternatives on selection, and each layer's and head's
// attention weights as a heatmap — on the GPU forward and, without WebGPU,
// on the CPU reference.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, unexpectedErrors, patience, trainQuick, fillFields, waitForAttr, numAttr, a11yViolations } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

/** Trains nano briefly, samples `length` characters and inspects the text. */
async function sampleAndInspect(page, length) {
  await trainQuick(page, { steps: 5, evalInterval: 5 });
  await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": length, "sample-temperature": 0 });
  await page.getByTestId("generate").click();
  await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
    timeout: patience(60_000),
  });
  const seen = await numAttr(page, "inspect-panel", "data-inspected");
  await page.getByTestId("inspect-run").click();
  await waitForAttr(page, "inspect-panel", "data-inspected", String(seen + 1), patience(60_000));
  return 6 + length;
}

test("every character shows its probability and alternatives, and every head its attention", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    // 156 characters, nano's context is 128: read a context at a time,
    // the attention over the last 128.
    const t = await sampleAndInspect(page, 150);
    const view = page.getByTestId("inspection");
    assert.equal(await view.getAttribute("data-t"), String(t));
    assert.equal(await view.getAttribute("data-window"), "128");
    assert.equal(await view.getAttribute("data-attention-from"), String(t - 128));
    assert.equal(await view.getAttribute("data-backend"), "webgpu");
    assert.equal(await page.locator(".inspect-text .tok").count(), t);
    assert.equal(await page.locator(".inspect-text .tok[class*='conf-']").count(), t - 1, "all but the first coloured");

    // The last character is selected: its ten alternatives, likeliest first.
    assert.equal(await page.getByTestId("alternatives").getAttribute("data-selected"), String(t - 1));
    const ps = (await page.locator('[data-testid="alternatives-table"] tbody tr').evaluateAll((rows) => rows.map((r) => Number(r.dataset.p))));
    assert.equal(ps.length, 10);
    assert.ok(ps.every((p, i) => i === 0 || p <= ps[i - 1]), `descending: ${ps}`);
    const total = ps.reduce((a, b) => a + b, 0);
    assert.ok(total > 0 && total <= 1.0001, `a share of one distribution: ${total}`);
    // The character in the text is marked in the table at most once.
    assert.ok((await page.locator('[data-testid="alternatives-table"] tbody tr.actual').count()) <= 1);
    await page.getByTestId("inspect-text").focus();
    await page.keyboard.press("ArrowLeft");
    assert.equal(await page.getByTestId("alternatives").getAttribute("data-selected"), String(t - 2));
    await page.locator('.inspect-text .tok[data-i="0"]').click();
    assert.match(await page.getByTestId("alternatives").innerText(), /first character has no context/);
    // A character before the attention window still has its alternatives.
    await page.locator('.inspect-text .tok[data-i="5"]').click();
    assert.equal(await page.locator('[data-testid="alternatives-table"] tbody tr').count(), 10);
    assert.match(await page.getByTestId("attention-row").innerText(), /before the attention window/);
    await page.getByTestId("inspect-text").focus();
    await page.keyboard.press("End");
    assert.equal(await page.getByTestId("alternatives").getAttribute("data-selected"), String(t - 1));

    // Attention: causal, each query's weights sum to one, per layer and head.
    const att = page.getByTestId("attention");
    const check = async (layer, head) => {
      assert.equal(await att.getAttribute("data-layer"), String(layer));
      assert.equal(await att.getAttribute("data-head"), String(head));
      assert.equal(await att.getAttribute("data-upper-zero"), "true", "nothing above the diagonal");
      const sum = Number(await att.getAttribute("data-row-sum"));
      assert.ok(Math.abs(sum - 1) < 0.1, `the selected query's weights sum to ${sum}`);
    };
    await check(0, 0);
    assert.equal(await page.getByTestId("attention-canvas").getAttribute("width"), "128");
    await page.getByTestId("attention-layer").selectOption("1");
    await page.getByTestId("attention-head").selectOption("1");
    await check(1, 1);
    assert.match(await page.getByTestId("attention-row").innerText(), /looks most at: /);
    assert.deepEqual(await a11yViolations(page), [], "accessibility with an inspection shown");

    await page.getByTestId("inspect-colour").uncheck();
    assert.equal(await page.locator(".inspect-text .tok[class*='conf-']").count(), 0, "colours off");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("without WebGPU the CPU reference inspects the text", async () => {
  const browser = await launch({ webgpu: false });
  try {
    const { page, logs } = await openReady(browser, server.url);
    const t = await sampleAndInspect(page, 10);
    assert.equal(await page.getByTestId("inspection").getAttribute("data-backend"), "cpu");
    assert.equal(await page.getByTestId("inspection").getAttribute("data-t"), String(t));
    assert.equal(await page.getByTestId("attention").getAttribute("data-upper-zero"), "true");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
