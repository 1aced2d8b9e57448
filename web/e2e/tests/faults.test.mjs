// Fault injection, in the test build only (dist-test/, built with the
// `fault-injection` feature; production builds contain no fault pipeline
// and ignore ?fault=, see fastpath.test.mjs): a deliberately wrong f16
// kernel fails the start-up gate, and a weight cache that is never
// invalidated passes it but fails the freshness gate once training moves
// the weights.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, testid, fillFields, unexpectedErrors, patience, trainQuick, localise, DIST_TEST, loadBundledAndGate } from "../lib.mjs";

let server;
before(async () => {
  server = await serve(DIST_TEST);
});
after(async () => {
  await server?.close();
});

test("a fault-injected f16 kernel (?fault=f16acc) fails the gate: no pill, f32 status, the page still works", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, `${server.url}?fault=f16acc`);
    await page.waitForFunction(
      () => /inference warmed up in [\d.]+s — ready to generate\./.test(document.querySelector('[data-testid="status"]')?.innerText ?? ""),
      null,
      { timeout: patience(90_000) },
    );
    assert.doesNotMatch(await testid(page, "status"), /f16/);
    assert.equal(await page.getByTestId("pill-f16-storage").count(), 0, "no +f16 storage pill");
    const worker = logs.filter((l) => l.source === "worker").map((l) => l.text);
    assert.ok(worker.some((t) => /injecting the f16acc fault/.test(t)), "the switch reached the worker");
    assert.ok(worker.some((t) => /^\[ops\] f16-storage gate: mean\|ref\|=.* — FAIL \(.+\)$/.test(t)), "a FAIL line that says why");
    // Still works, on f32: the bundled model samples.
    await page.getByTestId("load-bundled").click();
    await page.waitForFunction(() => /bundled/.test(document.querySelector('[data-testid="model-info"]')?.innerText ?? ""), null, {
      timeout: patience(60_000),
    });
    await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 12, "sample-temperature": "0", "sample-seed": 1 });
    await page.getByTestId("generate").click();
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: patience(90_000),
    });
    assert.equal([...(await page.getByTestId("sample-output").textContent())].length, 12);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("a weight cache that is never invalidated (?fault=stale) fails the freshness gate: the path turns off and training goes on in f32", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, `${server.url}?fault=stale`);
    // `stale` changes no kernel, so the start-up gate passes…
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    // …and the check after the run's first steps catches the old weights.
    await trainQuick(page, { steps: 12, evalInterval: 6, timeout: patience(180_000) });
    const worker = logs.filter((l) => l.source === "worker").map((l) => l.text);
    assert.ok(
      worker.some((t) => /^\[ops\] f16-storage cache check: \d+ of \d+ halves differ from the f32 weights — FAIL — f32 path active/.test(t)),
      `the cache check's FAIL line: ${worker.filter((t) => /cache check/.test(t))}`,
    );
    assert.equal(await page.getByTestId("pill-f16-storage").count(), 0, "the pill is gone");
    assert.match(await testid(page, "progress-step"), /step 12 \/ 12/, "the run finished, on f32");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});


test("only the test build carries fault pipelines: the production worker has none", async () => {
  const { readdir, readFile } = await import("node:fs/promises");
  const { join } = await import("node:path");
  const { DIST } = await import("../lib.mjs");
  const workerWasm = async (dir) => {
    const name = (await readdir(dir)).find((f) => /^tinygpt-worker.*_bg\.wasm$/.test(f));
    assert.ok(name, `a worker wasm in ${dir}`);
    return (await readFile(join(dir, name))).toString("latin1");
  };
  const faultKeys = ["matmul_f16w_fault_f16acc", "gemv_f16w_fault_droptail", "pack_f16_fault_trunc"];
  const test = await workerWasm(DIST_TEST);
  const prod = await workerWasm(DIST);
  for (const key of faultKeys) {
    assert.ok(test.includes(key), `the test build has ${key}`);
    assert.ok(!prod.includes(key), `the production build has no ${key}`);
  }
  assert.ok(prod.includes("matmul_f16w_64x64_k16"), "the production build has the real kernel");
});

test("localisation names the stage where a one-layer fault enters (test hook), and a clean run names none", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, `${server.url}?test_hooks=1`);
    await loadBundledAndGate(page);
    await page.evaluate(() => window.tinygptTestHook("corrupt_localization"));
    const bad = await localise(page, "ROMEO:");
    assert.equal(bad.firstJump, "layer 1 fc", bad.verdict);
    assert.match(bad.verdict, /first jumps at layer 1 fc/);
    assert.equal(await page.locator('[data-testid="localization"] rect.jump').getAttribute("data-stage"), "layer 1 fc");
    // The hook lasts one localisation and leaves the weight cache whole.
    const clean = await localise(page, "ROMEO:");
    assert.equal(clean.firstJump, "none", clean.verdict);
    assert.match(await page.getByTestId("pill-f16-storage").getAttribute("class"), /\bactive\b/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
