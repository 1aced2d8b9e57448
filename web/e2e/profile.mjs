// In-browser profile of one training step (headless Chromium, WebGPU on
// SwiftShader): trains a few steps of a preset so every pipeline is compiled,
// then asks the worker (test hook `profile_step`, `?test_hooks=1`) to time
// every dispatch of one more step with timestamp queries, and prints the GPU
// time per kernel as the worker logs it:
//   npm --prefix web/e2e run profile -- [preset] [batch] [out.json]   (default: nano 1)
// (after `trunk build --release`; TINYGPT_DIST picks another build). With
// out.json, the per-kernel table is also written there as JSON.
import { writeFile } from "node:fs/promises";
import { serve, launch, openReady, fillFields, waitForRunState } from "./lib.mjs";

const [preset = "nano", batch = "1", outPath] = process.argv.slice(2);
const server = await serve();
const browser = await launch();
try {
  const { page, logs } = await openReady(browser, `${server.url}?test_hooks=1`);
  await page.getByTestId("preset").selectOption(preset);
  await fillFields(page, { "hp-steps": 2, "hp-batch": batch, "hp-warmup": 1, "hp-eval-interval": 0, "autosave-steps": 0 });
  await page.getByTestId("autosave-steps").dispatchEvent("change");
  const t0 = Date.now();
  await page.getByTestId("train").click();
  await waitForRunState(page, "finished", 1_800_000);
  console.error(`[profile] 2 warm-up steps of ${preset} at batch ${batch}: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  const t1 = Date.now();
  await page.evaluate(() => window.tinygptTestHook("profile_step"));
  await page.waitForFunction(() => true, null, { timeout: 1000 });
  while (!logs.some((l) => /^\[profile\] step \d+:/.test(l.text))) {
    if (logs.some((l) => /^\[profile\] (there is no model|the profile test hook failed)/.test(l.text))) throw new Error("the profile hook failed");
    await new Promise((ok) => setTimeout(ok, 500));
  }
  const wallS = (Date.now() - t1) / 1000;
  console.error(`[profile] the profiled step took ${wallS.toFixed(1)} s of wall time`);
  if (outPath) {
    const worker = logs.filter((l) => l.source === "worker").map((l) => l.text);
    const kernels = worker
      .map((t) => /^\[profile\] (\S+) ×(\d+): ([\d.]+) ms/.exec(t))
      .filter(Boolean)
      .map(([, key, calls, ms]) => ({ key, calls: Number(calls), ms: Number(ms) }));
    const [, dispatches, totalMs] = worker.map((t) => /^\[profile\] step \d+: (\d+) dispatches, ([\d.]+) ms/.exec(t)).find(Boolean);
    const report = {
      browser: browser.version(),
      backend: "WebGPU on SwiftShader (CPU)",
      preset,
      batch: Number(batch),
      dispatches: Number(dispatches),
      gpu_ms: Number(totalMs),
      profiled_step_wall_s: wallS,
      kernels,
    };
    await writeFile(outPath, JSON.stringify(report, null, 2) + "\n");
  }
} finally {
  await browser.close();
  await server.close();
}
