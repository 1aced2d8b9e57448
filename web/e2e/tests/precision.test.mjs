// The precision views (WebGPU on SwiftShader, production build): each gate
// case's error histograms with the gate's limits drawn, the loaded model's
// f32 and f16 greedy samples side by side, per-stage localisation as a
// chart, and the device's precision log — kept across reloads in private
// storage, exported as one JSON file, cleared on request.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { serve, launch, openReady, unexpectedErrors, patience, localise, loadBundledAndGate, scratchDir } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

test("every gate case shows its error histograms with the limits, the samples side by side, and a localisation chart", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await loadBundledAndGate(page);
    await page.evaluate(() => (document.querySelector('[data-testid="gates"]').open = true));
    const cases = page.getByTestId("gate-f16_storage").getByTestId("gate-case");
    const n = await cases.count();
    assert.ok(n >= 10, `random-input and real-weight cases: ${n}`);
    for (let i = 0; i < n; i++) {
      const c = cases.nth(i);
      const name = await c.getAttribute("data-name");
      const elements = Number(await c.getAttribute("data-elements"));
      const hists = c.getByTestId("hist");
      assert.equal(await hists.count(), 2, `${name}: relative and absolute`);
      for (let h = 0; h < 2; h++) {
        const hist = hists.nth(h);
        const kind = await hist.getAttribute("data-kind");
        assert.equal(Number(await hist.getAttribute("data-total")), elements, `${name} ${kind}: every element binned`);
        assert.equal(await hist.locator("line.limit").count(), 1, `${name} ${kind}: the limit is drawn`);
        assert.ok((await hist.locator("rect.bar").count()) >= 17, `${name} ${kind}: the bins`);
      }
      assert.equal(await c.getAttribute("data-passed"), "true", `${name} passed`);
    }
    const pair = page.getByTestId("gate-f16_storage").getByTestId("sample-pair");
    assert.equal(await pair.getAttribute("data-diverge"), "none");
    const f32 = await pair.getByTestId("sample-f32").textContent();
    const fast = await pair.getByTestId("sample-fast").textContent();
    assert.equal([...f32].length, 100, `100 greedy tokens: ${JSON.stringify(f32)}`);
    assert.equal(fast, f32, "the f16 path's sample is identical");
    assert.match(await pair.getByTestId("sample-pair-verdict").innerText(), /identical over 100 greedy tokens/);

    const l = await localise(page, "ROMEO:");
    assert.ok(l.stages >= 13 && (l.stages - 3) % 10 === 0, `1 + 10 per layer + 2 stages: ${l.stages}`);
    assert.equal(l.bars, l.stages, "one bar per stage");
    assert.equal(l.firstJump, "none", "f16 storage alone does not jump");
    assert.match(l.verdict, /no stage's error jumps/);
    const worker = logs.filter((x) => x.source === "worker").map((x) => x.text);
    assert.ok(worker.some((t) => /^\[localize\] layer 0 qkv +rel_l2=/.test(t)), "the worker logged every stage");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("localisation refuses a prompt outside the vocabulary with one clear error, and needs a model", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    assert.equal(await page.getByTestId("localize-run").isDisabled(), true, "no model yet");
    await loadBundledAndGate(page);
    await page.getByTestId("localize-prompt").fill("ROMEO: ☃");
    await page.getByTestId("localize-run").click();
    await page.getByTestId("error").waitFor({ timeout: patience(30_000) });
    assert.match(await page.getByTestId("error-text").innerText(), /localising the fast paths/);
    assert.equal(await page.getByTestId("localization").count(), 0);
    assert.deepEqual(unexpectedErrors(logs, [/localising the fast paths/]), []);
  } finally {
    await browser.close();
  }
});

test("the precision log keeps every gate across reloads, exports one JSON file and clears", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    const table = page.getByTestId("precision-log-table");
    const records = async () => Number(await table.getAttribute("data-records"));
    await page.locator('[data-testid="precision-log"] > summary').click();
    await page.waitForFunction(
      () => Number(document.querySelector('[data-testid="precision-log-table"]')?.dataset.records) >= 1,
      null,
      { timeout: patience(30_000) },
    );
    const first = await records();
    const row = await page.getByTestId("precision-record").first().innerText();
    assert.match(row, /start-up/);
    assert.match(row, /f16-storage/);
    assert.match(row, /PASS/);

    await page.reload();
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    await page.locator('[data-testid="precision-log"] > summary').click();
    await page.waitForFunction(
      (n) => Number(document.querySelector('[data-testid="precision-log-table"]')?.dataset.records) > n,
      first,
      { timeout: patience(30_000) },
    );
    const kept = await records();

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("precision-log-export").click()]);
    assert.equal(download.suggestedFilename(), "tinygpt-precision-log.json");
    const path = join(scratchDir("tinygpt-e2e-"), "log.json");
    await download.saveAs(path);
    const file = JSON.parse(await readFile(path, "utf8"));
    assert.equal(file.records.length, kept);
    const r = file.records.at(-1);
    assert.equal(r.occasion, "start-up");
    assert.equal(r.report.path, "f16_storage");
    assert.ok(r.report.cases.length >= 6 && r.report.cases[0].distribution.rel_hist.counts.length === 18);
    assert.ok(r.adapter.backend.length > 0 && r.user_agent.length > 0 && r.at_ms > 0);

    await page.getByTestId("precision-log-clear").click();
    assert.equal(await records(), kept, "one click only asks");
    await page.getByTestId("precision-log-clear").click();
    await page.waitForFunction(() => document.querySelector('[data-testid="precision-log-table"]')?.dataset.records === "0", null, {
      timeout: patience(30_000),
    });
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
