// The bundled model and the gated f16-storage path in a real browser
// (WebGPU on SwiftShader): the gate runs in the worker at start-up, logs its
// console line, and only then shows the `+f16 storage` activation pill and
// the status line; the bundled Shakespeare model loads in one click and
// samples Shakespeare-like text.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { serve, launch, openReady, testid, fillFields, waitForAttr, unexpectedErrors, patience, loadBundledAndGate } from "../lib.mjs";

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
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    const pillClass = await page.getByTestId("pill-f16-storage").getAttribute("class");
    assert.match(pillClass, /\bactive\b/, "an activation pill, not a detection pill");
    assert.match(await testid(page, "pill-f16-storage"), /\+f16 storage/);
    await page.waitForFunction(
      () => /inference warmed up in [\d.]+s · f16-storage matmul active — ready to generate\./.test(
        document.querySelector('[data-testid="status"]')?.innerText ?? "",
      ),
      null,
      { timeout: patience(60_000) },
    );
    const line = logs.find((l) => l.source === "worker" && l.text.startsWith("[ops] f16-storage gate: mean|ref|="));
    assert.ok(line, "the worker logged the seed-format gate line");
    assert.match(
      line.text,
      /^\[ops\] f16-storage gate: mean\|ref\|=\S+, max_abs=\S+ \(limit \S+\), mean_rel=[\d.]+% \(limit 0\.500%\), max_rel=[\d.]+% — PASS — f16 path active$/,
    );
    // The subgroups lever is off in every browser: the detection pill reads
    // subgroups from JS, but the lever needs wgpu's, which its web backend
    // does not offer.
    const sg = page.getByTestId("lever-subgroups");
    const sgWhy = "subgroups are native only: wgpu 30's WebGPU backend does not offer them";
    assert.equal(await sg.innerText(), `subgroups: not detected (${sgWhy}) · speed — · off`);
    assert.equal(await page.getByTestId("pill-subgroups-active").count(), 0, "no activation pill");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("the speed gate times f16 storage against f32 at start-up and activates it only if faster here", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url, { speedGate: true });
    const lever = page.getByTestId("lever-f16_storage");
    await lever.waitFor({ timeout: patience(120_000) });
    const speed = logs.find((l) => l.source === "worker" && l.text.startsWith("[ops] f16-storage speed:"));
    assert.ok(speed, "the worker logged the speed line");
    const m = speed.text.match(
      /^\[ops\] f16-storage speed: decode step's linears, 4 layers at C=256, \d+ tokens? — ([\d.]+) ms vs f32 ([\d.]+) ms: ([\d.]+)× \(needs ≥ 1\.05×; best of [2-5] rounds\) — (faster — f16 path active|precise, slower here: not activated)$/,
    );
    assert.ok(m, speed.text);
    const [fast, f32, ratio] = [Number(m[1]), Number(m[2]), Number(m[3])];
    assert.ok(Math.abs(f32 / fast - ratio) < 0.01 + 0.01 * ratio, `${f32} / ${fast} is ${ratio}`);
    const active = (await lever.getAttribute("data-active")) === "true";
    assert.equal(await lever.getAttribute("data-passed"), "true", "precise on SwiftShader");
    assert.equal(await lever.getAttribute("data-faster"), String(active), "active exactly when faster");
    assert.equal(m[4].startsWith("faster"), active);
    console.log(`  speed gate here: f16 ${fast} ms, f32 ${f32} ms (${ratio}×): ${active ? "active" : "not activated"}`);
    const status = active
      ? /· f16-storage matmul active — ready to generate\./
      : /· f16-storage precise, [\d.]+× f32 here: not activated — ready to generate\./;
    await page.waitForFunction((re) => new RegExp(re).test(document.querySelector('[data-testid="status"]')?.innerText ?? ""), status.source, {
      timeout: patience(60_000),
    });
    assert.equal(await page.getByTestId("pill-f16-storage").count(), active ? 1 : 0);
    assert.match(await lever.innerText(), active ? /^f16-storage: precise ✓ · faster [\d.]+× · active( \(training on f32\))?$/ : /^f16-storage: precise ✓ · slower here [\d.]+× · off$/);
    const head = logs.find((l) => l.source === "worker" && l.text.startsWith("[ops] f16-storage gate: mean|ref|="));
    assert.match(head.text, active ? /— PASS — f16 path active$/ : /— PASS — precise, slower here: not activated$/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("with ?speed_gate=off precision alone decides, and the lever says the speed was not measured", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    assert.match(await testid(page, "lever-f16_storage"), /^f16-storage: precise ✓ · speed not measured · active$/);
    assert.ok(logs.some((l) => l.text === "[ops] f16-storage speed: not measured (speed gate off) — activated on precision alone"));
    assert.ok(logs.some((l) => l.type === "warning" && l.text.startsWith("[ops] speed gate off by ?speed_gate=off")));
  } finally {
    await browser.close();
  }
});

test("f16 compute is gated only where shader-f16 exists, tensor cores only natively: on SwiftShader each lever says why it is off", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    const lever = page.getByTestId("lever-f16_compute");
    await lever.waitFor({ timeout: patience(90_000) });
    const shaderF16 = (await page.getByTestId("pill-shader-f16").getAttribute("data-on")) === "true";
    console.log(`  shader-f16 here: ${shaderF16}; lever ${JSON.stringify(await lever.innerText())}`);
    assert.equal(await lever.getAttribute("data-detected"), String(shaderF16), "detected exactly when the adapter offers shader-f16");
    if (!shaderF16) {
      assert.equal(await testid(page, "pill-shader-f16"), "shader-f16 —");
      assert.equal(await lever.innerText(), "f16-compute: not detected (the adapter offers no shader-f16) · speed — · off");
      assert.equal(await lever.getAttribute("data-active"), "false");
      assert.equal(await page.getByTestId("pill-f16-compute").count(), 0, "no activation pill");
      assert.ok(
        logs.some((l) => l.source === "worker" && l.text === "[ops] f16-compute gate: not detected — the adapter offers no shader-f16 — off"),
        "the worker logged why",
      );
    }
    // No browser has cooperative matrices (wgpu 30 has no WebGPU form).
    const coop = page.getByTestId("lever-coop_matrix");
    const why = "cooperative matrices are native only: wgpu 30 has no WebGPU form of them";
    assert.equal(await coop.innerText(), `coop-matrix: not detected (${why}) · speed — · off`);
    assert.equal(await coop.getAttribute("data-detected"), "false");
    assert.equal(await page.getByTestId("pill-coop-matrix").count(), 0, "no activation pill");
    assert.ok(
      logs.some((l) => l.source === "worker" && l.text === `[ops] coop-matrix gate: not detected — ${why} — off`),
      "the worker logged why",
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
      { timeout: patience(60_000) },
    );
    assert.match(await testid(page, "model-info"), /bundled Shakespeare model/);
    await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 40, "sample-temperature": "0", "sample-seed": 1 });
    await page.getByTestId("generate").click();
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: patience(300_000),
    });
    const out = await page.getByTestId("sample-output").textContent();
    assert.equal([...out].length, 40, `40 characters generated, got ${JSON.stringify(out)}`);
    // A trained model writes words: mostly letters and spaces, not noise.
    const letters = [...out].filter((ch) => /[A-Za-z \n,.']/.test(ch)).length;
    assert.ok(letters >= 36, `text looks like English: ${JSON.stringify(out)}`);
    // A measurement (BENCHMARKS.md's time to first token), never a limit.
    const stats = page.getByTestId("sample-stats");
    const ttft = Number(await stats.getAttribute("data-first-token-ms"));
    assert.ok(ttft > 0, "the first token's time is reported");
    console.log(`  time to first token, bundled model, f16 storage: ${ttft.toFixed(0)} ms; ${await stats.getAttribute("data-tokens-per-s")} tok/s`);
    await waitForAttr(page, "busy", "data-busy", "false");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("loading a model re-runs the gate on its real weights and a 100-token greedy comparison", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await loadBundledAndGate(page);
    const worker = logs.filter((l) => l.source === "worker").map((l) => l.text);
    assert.ok(
      worker.some((t) => /^\[ops\] f16-storage sample gate: 100 greedy tokens from "ROMEO:" on f32 and f16 — identical — PASS$/.test(t)),
      "the sample-gate line",
    );
    assert.ok(worker.some((t) => /real/i.test(t) && /PASS/.test(t)), "a real-weight case line");
    assert.match(await page.getByTestId("pill-f16-storage").getAttribute("class"), /\bactive\b/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("a production build ignores ?fault= (one console line says so): the gate passes and the pill shows", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, `${server.url}?fault=f16acc`);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    const worker = logs.filter((l) => l.source === "worker").map((l) => l.text);
    const said = worker.filter((t) => /\?fault=/.test(t));
    assert.equal(said.length, 1, `one line about ?fault=: ${said}`);
    assert.match(said[0], /unavailable in this build/);
    assert.ok(!worker.some((t) => /injecting the .* fault/.test(t)), "no fault injected");
    assert.ok(worker.some((t) => /^\[ops\] f16-storage gate: .* — PASS — f16 path active$/.test(t)), "the real gate passed");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});

test("Stop ends a long generation early and the worker stays responsive", async () => {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("load-bundled").click();
    await page.waitForFunction(() => /bundled/.test(document.querySelector('[data-testid="model-info"]')?.innerText ?? ""), null, {
      timeout: patience(60_000),
    });
    await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 5000, "sample-temperature": "0.8", "sample-seed": 3 });
    await page.getByTestId("generate").click();
    await page.waitForFunction(() => (document.querySelector('[data-testid="sample-output"]')?.textContent ?? "").length >= 5, null, {
      timeout: patience(180_000),
    });
    await page.getByTestId("stop-sampling").click();
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: patience(30_000),
    });
    const n = [...(await page.getByTestId("sample-output").textContent())].length;
    assert.ok(n >= 5 && n < 5000, `stopped early after ${n} characters`);
    assert.ok(
      logs.some((l) => l.source === "worker" && /\[sample\] stopped by the user after \d+ tokens/.test(l.text)),
      "the worker logged the stop",
    );
    assert.equal(await page.getByTestId("generate").isDisabled(), false, "Generate is available again");
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
