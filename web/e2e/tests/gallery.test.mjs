// The model gallery (issue #17): the bundled small model and the nanoGPT
// shape, each with its card; the page suggests by device class (a CPU
// implementation such as SwiftShader gets `small`); a gallery model loads,
// passes its gates on its own weights, brings its curve and samples.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { serve, launch, openReady, unexpectedErrors, patience, waitForAttr, numAttr, fillFields, a11yViolations } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

const card = async (name) => JSON.parse(await readFile(new URL(`../../../models/${name}.card.json`, import.meta.url), "utf8"));

test("the gallery shows both models with their cards, suggests small here, and loads the nanoGPT shape", async () => {
  const nano = await card("nanogpt");
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await waitForAttr(page, "gallery", "data-count", "2");
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    assert.equal(await page.getByTestId("gallery").getAttribute("data-suggested"), "small", "SwiftShader is a CPU implementation");
    assert.equal(await page.getByTestId("gallery-small").getByTestId("gallery-suggested").count(), 1);
    assert.equal(await page.getByTestId("gallery-nanogpt").getByTestId("gallery-suggested").count(), 0);
    const text = await page.getByTestId("gallery-nanogpt").innerText();
    assert.match(text, /10\.8 ?M parameters · 6 layers × 384 wide, context 256/);
    assert.match(text, new RegExp(`validation ${nano.val_loss.toFixed(4)} nats/char after 5000 steps`));
    await page.getByTestId("gallery-nanogpt").locator("summary").click();
    assert.match(await page.getByTestId("gallery-nanogpt").innerText(), /nanoGPT's Shakespeare shape/);
    assert.deepEqual(await a11yViolations(page), [], "accessibility with a card open");

    await page.getByTestId("gallery-load-nanogpt").click();
    await page.waitForFunction(
      () => /verified on this model in [\d.]+s/.test(document.querySelector('[data-testid="status"]')?.innerText ?? ""),
      null,
      { timeout: patience(300_000) },
    );
    await waitForAttr(page, "loss-chart", "data-val-points", String(nano.curve.val.length), patience(30_000));
    assert.match(await page.getByTestId("checkpoint-note").innerText(), /loaded/i);
    assert.match(await page.getByTestId("model-info").innerText(), /10,777,728 params · 6L\/6H\/384C, context 256/);
    await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 20, "sample-temperature": 0 });
    await page.getByTestId("generate").click();
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: patience(120_000),
    });
    assert.equal([...(await page.getByTestId("sample-output").textContent())].length, 20);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("a gallery model of another shape is timed again at its own shape, and the lever follows", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url, { speedGate: true });
    await waitForAttr(page, "gallery", "data-count", "2");
    await page.getByTestId("lever-f16_storage").waitFor({ timeout: patience(120_000) });
    await page.getByTestId("gallery-load-nanogpt").click();
    const deadline = Date.now() + patience(300_000);
    const retimed = () => logs.find((l) => l.source === "worker" && l.text.endsWith("(at this model's shape)"));
    while (!retimed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
    const line = retimed()?.text;
    assert.ok(line, "the worker timed the path again at the loaded model's shape");
    const m = line.match(/^\[ops\] f16-storage speed: decode step's linears, 6 layers at C=384, \d+ tokens? — ([\d.]+) ms vs f32 ([\d.]+) ms: ([\d.]+)× \(needs ≥ 1\.05×; best of [2-5] rounds\) — (faster — f16 path active|precise, slower here: not activated) \(at this model's shape\)$/);
    assert.ok(m, line);
    const active = m[4].startsWith("faster");
    console.log(`  at nanoGPT's shape: ${m[3]}× → ${active ? "active" : "off"}`);
    await waitForAttr(page, "lever-f16_storage", "data-active", String(active));
    assert.equal(await page.getByTestId("pill-f16-storage").count(), active ? 1 : 0);
    assert.match(await page.getByTestId("lever-f16_storage").getAttribute("title"), /6 layers at C=384/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
