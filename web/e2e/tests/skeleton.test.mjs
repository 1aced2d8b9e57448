// The walking skeleton in a real browser: the worker reports gpu_caps, the
// pills and the status line render, the start-up kernel check passes; and
// without WebGPU the page shows a clear fallback state instead of breaking.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openApp, errorsIn, testid, patience } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

test("with WebGPU: gpu_caps, pills, status line and a passing kernel check", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openApp(browser, server.url);
    await page.waitForSelector('[data-testid="caps"][data-reported="true"]', { timeout: patience(60_000) });
    assert.equal(await page.getByTestId("pill-webgpu").getAttribute("data-on"), "true");
    assert.match(await testid(page, "pill-webgpu"), /WebGPU ✓/);
    assert.match(await testid(page, "pill-adapter"), /^GPU: /);
    // SwiftShader offers subgroups and timestamp-query but not shader-f16.
    assert.match(await testid(page, "pill-subgroups"), /subgroups/);
    assert.match(await testid(page, "pill-shader-f16"), /shader-f16/);
    // Detection pills and activation pills must not look alike.
    const detectClass = await page.getByTestId("pill-webgpu").getAttribute("class");
    assert.match(detectClass, /\bdetect\b/);
    assert.doesNotMatch(detectClass, /\bactive\b/);
    await page.waitForFunction(
      () => /kernel check passed/.test(document.querySelector('[data-testid="status"]')?.innerText ?? ""),
      null,
      { timeout: patience(60_000) },
    );
    const workerLine = logs.find((l) => l.source === "worker" && l.text.startsWith("[ops] kernel check"));
    assert.ok(workerLine, "the worker logged its kernel check to the console");
    assert.match(workerLine.text, /— PASS$/);
    assert.match(await testid(page, "log"), /\[ops\] kernel check .* PASS/);
    assert.deepEqual(errorsIn(logs), []);
  } finally {
    await browser.close();
  }
});

test("the WebNN pill says what createContext() really gives in this browser, not just that navigator.ml exists", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openApp(browser, server.url);
    await page.waitForSelector('[data-testid="caps"][data-reported="true"]', { timeout: patience(60_000) });
    // The same question, asked by the test on the page's own thread.
    const truth = await page.evaluate(async () => {
      if (!navigator.ml) return { api: false, ok: false };
      try {
        await navigator.ml.createContext();
        return { api: true, ok: true };
      } catch (e) {
        return { api: true, ok: false, why: String(e) };
      }
    });
    const pill = page.getByTestId("pill-webnn");
    const text = await pill.innerText();
    console.log(`  WebNN here: ${JSON.stringify(truth)}; pill ${JSON.stringify(text)}`);
    assert.equal(await pill.getAttribute("data-api"), String(truth.api));
    assert.equal(await pill.getAttribute("data-on"), String(truth.ok));
    if ((await pill.getAttribute("data-on")) === "true") {
      assert.equal(text, "WebNN ✓");
    } else if ((await pill.getAttribute("data-api")) === "true") {
      assert.equal(text, "WebNN: API present, no backend here");
      assert.match(await pill.getAttribute("title"), /createContext\(\) failed: \S/);
    } else {
      assert.equal(text, "WebNN —");
    }
    assert.deepEqual(errorsIn(logs), []);
  } finally {
    await browser.close();
  }
});

test("without WebGPU: a clear fallback state, no crash, no blank page", async () => {
  const browser = await launch({ webgpu: false });
  try {
    const { page, logs } = await openApp(browser, server.url);
    await page.waitForSelector('[data-testid="caps"][data-reported="true"]', { timeout: patience(60_000) });
    assert.equal(await page.getByTestId("pill-webgpu").getAttribute("data-on"), "false");
    assert.match(await testid(page, "pill-webgpu"), /WebGPU —/);
    const status = await testid(page, "status");
    assert.match(status, /No WebGPU/);
    assert.match(status, /Chrome|flag/, "the status says what to do");
    assert.equal(await page.getByTestId("status").getAttribute("data-worker-ready"), "true");
    assert.deepEqual(errorsIn(logs), []);
  } finally {
    await browser.close();
  }
});
