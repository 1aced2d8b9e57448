// Regenerates the README's screenshots (docs/screenshots/) from the built
// page, in Debian's Chromium on SwiftShader, the way the browser tests drive
// it. One command, after `trunk build --release`:
//
//   node web/e2e/screenshots.mjs
//
// Each image must stay under 200 KB: a PNG over it is written as a JPEG.
import { mkdir, stat, rm } from "node:fs/promises";
import { serve, launch, trainQuick, loadBundledAndGate, localise, patience, fillFields } from "./lib.mjs";

const OUT = new URL("../../docs/screenshots/", import.meta.url).pathname;
const LIMIT = 200 * 1024;

/** Screenshots `target` (a page or a locator) as `name`.png, or .jpg if too big. */
async function shot(target, name, options = {}) {
  const png = `${OUT}${name}.png`;
  const jpg = `${OUT}${name}.jpg`;
  await rm(jpg, { force: true });
  await target.screenshot({ path: png, ...options });
  let { size } = await stat(png);
  let path = png;
  if (size > LIMIT) {
    await rm(png);
    await target.screenshot({ path: jpg, type: "jpeg", quality: 80, ...options });
    ({ size } = await stat(jpg));
    path = jpg;
  }
  if (size > LIMIT) throw new Error(`${path} is ${size} bytes, over ${LIMIT}`);
  console.log(`${path.slice(OUT.length)}: ${Math.round(size / 1024)} KB`);
}

async function page(browser, url, viewport) {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1 });
  const p = await context.newPage();
  p.setDefaultTimeout(patience(30_000));
  // Precision alone decides here (the screenshots show the active path).
  const u = new URL(url);
  u.searchParams.set("speed_gate", "off");
  await p.goto(u.toString());
  await p.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
  return p;
}

const server = await serve();
const browser = await launch({ webgpu: true });
try {
  await mkdir(OUT, { recursive: true });
  const p = await page(browser, server.url, { width: 1280, height: 900 });
  await shot(p, "first-visit", { clip: { x: 0, y: 0, width: 1280, height: 560 } });
  await p.getByTestId("tour-skip").click();

  await p.getByTestId("help-pill-f16-storage").click();
  await shot(p, "explainer", { clip: { x: 0, y: 0, width: 1280, height: 330 } });
  await p.keyboard.press("Escape");

  await p.getByTestId("live-every").fill("20");
  await p.getByTestId("live-every").dispatchEvent("change");
  await trainQuick(p, { preset: "nano", steps: 120, evalInterval: 20, batch: 2, timeout: patience(240_000) });
  await p.getByTestId("chart-smoothing").selectOption("0.6");
  const chart = await p.getByTestId("loss-chart").boundingBox();
  await p.mouse.move(chart.x + chart.width * 0.6, chart.y + chart.height / 2);
  await shot(p.getByTestId("run-panel"), "training");

  await loadBundledAndGate(p);
  await fillFields(p, { "sample-prompt": "ROMEO:", "sample-length": 240, "sample-temperature": 0.8, "sample-count": 3 });
  await p.getByTestId("generate").click();
  await p.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
    timeout: patience(120_000),
  });
  await shot(p.getByTestId("sample-panel"), "sample");
  await p.getByTestId("inspect-run").click();
  await p.getByTestId("inspection").waitFor({ timeout: patience(60_000) });
  await p.locator('.inspect-text .tok[data-i="40"]').click();
  await p.getByTestId("attention-layer").selectOption("3");
  await shot(p.getByTestId("inspection"), "inspect");
  await p.getByTestId("gallery-nanogpt").locator("summary").click();
  await shot(p.getByTestId("checkpoint-panel"), "gallery");
  await shot(p.getByTestId("run-panel"), "bundled-curve");

  await localise(p, "ROMEO:");
  await p.evaluate(() => (document.querySelector('[data-testid="gates"]').open = true));
  await shot(p.getByTestId("precision-panel"), "precision");
  // The block is taller than the window: bring its top to the window's top
  // (scrollIntoViewIfNeeded left it above, and the clip caught a sliver).
  // The histograms: the first cases of the f16-storage block.
  await p.evaluate(() => document.querySelector('[data-testid="cases-f16_storage"]').scrollIntoView({ block: "start" }));
  const gates = await p.getByTestId("cases-f16_storage").boundingBox();
  await shot(p, "gates", { clip: { x: gates.x, y: gates.y, width: gates.width, height: Math.min(gates.height, 360) } });

  const phone = await page(browser, server.url, { width: 390, height: 844 });
  await shot(phone, "phone");
} finally {
  await browser.close();
  await server.close();
}
