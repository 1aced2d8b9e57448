// In-browser benchmark (headless Chromium, WebGPU on SwiftShader): training
// steps/s per preset and sampling tok/s of the bundled model on the
// f16-storage and the f32 path. SwiftShader is a CPU rasteriser, so only the
// ratios mean anything. Writes one JSON document (console lines of the page
// go to stdout as in the tests):
//   npm --prefix web/e2e run bench -- /tmp/bench-browser.json
// (after `trunk build --release`; TINYGPT_DIST picks another build).
import { writeFile } from "node:fs/promises";
import { serve, launch, openReady, fillFields, waitForRunState, waitForAttr } from "./lib.mjs";

const TRAIN = [
  // preset, batch, steps: small batches keep a CPU rasteriser's run short.
  ["nano", 4, 12],
  ["tiny", 2, 6],
  ["small", 1, 4],
];
const SAMPLE_TOKENS = 100;

const log = (...a) => console.error("[bench]", ...a);

async function trainRate(browser, url, preset, batch, steps) {
  const { page } = await openReady(browser, url);
  await page.getByTestId("preset").selectOption(preset);
  await fillFields(page, { "hp-steps": steps, "hp-batch": batch, "hp-warmup": 1, "hp-eval-interval": 0, "autosave-steps": 0 });
  await page.getByTestId("autosave-steps").dispatchEvent("change");
  await page.getByTestId("train").click();
  await waitForRunState(page, "running", 120_000);
  await waitForRunState(page, "finished", 900_000);
  const tokPerS = Number(await page.getByTestId("progress").getAttribute("data-tokens-per-s"));
  const seqLen = Number(
    await page.evaluate(() => /T=(\d+)/.exec(document.querySelector('[data-testid="preset-estimate"]')?.innerText ?? "")?.[1]),
  );
  await page.close();
  return { preset, batch, seq_len: seqLen, steps, tokens_per_s: tokPerS, steps_per_s: tokPerS / (batch * seqLen) };
}

async function sampleRate(browser, url, path) {
  const { page } = await openReady(browser, url);
  await page.waitForFunction(() => /ready to generate/.test(document.querySelector('[data-testid="status"]')?.innerText ?? ""), null, {
    timeout: 120_000,
  });
  const f16 = (await page.getByTestId("pill-f16-storage").count()) > 0;
  await page.getByTestId("load-bundled").click();
  await page.waitForFunction(() => /bundled/.test(document.querySelector('[data-testid="model-info"]')?.innerText ?? ""), null, {
    timeout: 120_000,
  });
  await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": SAMPLE_TOKENS, "sample-temperature": "0", "sample-seed": 1 });
  await page.getByTestId("generate").click();
  await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
    timeout: 900_000,
  });
  await waitForAttr(page, "busy", "data-busy", "false", 120_000);
  const stats = page.getByTestId("sample-stats");
  const out = {
    path,
    f16_storage_active: f16,
    tokens: SAMPLE_TOKENS,
    tokens_per_s: Number(await stats.getAttribute("data-tokens-per-s")),
    first_token_ms: Number(await stats.getAttribute("data-first-token-ms")),
  };
  await page.close();
  return out;
}

const server = await serve();
const browser = await launch({ webgpu: true });
const result = { browser: browser.version(), backend: "WebGPU on SwiftShader (CPU)", training: [], sampling: [] };
try {
  for (const [preset, batch, steps] of TRAIN) {
    log(`training ${preset} B=${batch} for ${steps} steps`);
    result.training.push(await trainRate(browser, server.url, preset, batch, steps));
  }
  for (const [path, query] of [
    ["f16-storage", ""],
    ["f32", "?fast_paths=off"],
  ]) {
    log(`sampling on the ${path} path`);
    result.sampling.push(await sampleRate(browser, server.url + query, path));
  }
  const [f16, f32] = result.sampling;
  result.sampling_f16_over_f32 = f16.tokens_per_s / f32.tokens_per_s;
} finally {
  await browser.close();
  await server.close();
}
const out = process.argv[2] ?? "bench-browser.json";
await writeFile(out, JSON.stringify(result, null, 2) + "\n");
log(`wrote ${out}`);
console.error(JSON.stringify(result, null, 2));
