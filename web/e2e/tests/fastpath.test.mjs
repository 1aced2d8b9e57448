// The bundled model and the gated f16-storage path in a real browser
// (WebGPU on SwiftShader): the gate runs in the worker at start-up, logs its
// console line, and only then shows the `+f16 storage` activation pill and
// the status line; the bundled Shakespeare model loads in one click and
// samples Shakespeare-like text.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, testid, fillFields, waitForAttr, unexpectedErrors } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

test("the f16-storage gate passes in the worker, then its pill and status line appear", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: 90_000 });
    const pillClass = await page.getByTestId("pill-f16-storage").getAttribute("class");
    assert.match(pillClass, /\bactive\b/, "an activation pill, not a detection pill");
    assert.match(await testid(page, "pill-f16-storage"), /\+f16 storage/);
    await page.waitForFunction(
      () => /inference warmed up in [\d.]+s · f16-storage matmul active — ready to generate\./.test(
        document.querySelector('[data-testid="status"]')?.innerText ?? "",
      ),
      null,
      { timeout: 60_000 },
    );
    const line = logs.find((l) => l.source === "worker" && l.text.startsWith("[ops] f16-storage gate: mean|ref|="));
    assert.ok(line, "the worker logged the seed-format gate line");
    assert.match(
      line.text,
      /^\[ops\] f16-storage gate: mean\|ref\|=\S+, max_abs=\S+ \(limit \S+\), mean_rel=[\d.]+% \(limit 0\.500%\), max_rel=[\d.]+% — PASS — f16 path active$/,
    );
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("the bundled Shakespeare model loads in one click and samples greedily", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("load-bundled").click();
    await page.waitForFunction(
      () => /3,213,568|3\.21 ?M/.test(document.querySelector('[data-testid="model-info"]')?.innerText ?? ""),
      null,
      { timeout: 60_000 },
    );
    assert.match(await testid(page, "model-info"), /bundled Shakespeare model/);
    await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 40, "sample-temperature": "0", "sample-seed": 1 });
    await page.getByTestId("generate").click();
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: 90_000,
    });
    const out = await page.getByTestId("sample-output").textContent();
    assert.equal([...out].length, 40, `40 characters generated, got ${JSON.stringify(out)}`);
    // A trained model writes words: mostly letters and spaces, not noise.
    const letters = [...out].filter((ch) => /[A-Za-z \n,.']/.test(ch)).length;
    assert.ok(letters >= 36, `text looks like English: ${JSON.stringify(out)}`);
    await waitForAttr(page, "busy", "data-busy", "false");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
