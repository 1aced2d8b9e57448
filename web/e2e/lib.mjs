// Shared harness of the browser tests: a static server for dist/, Debian's
// Chromium driven by playwright-core (never a downloaded browser), and a log
// of every console line — the worker's included — printed into test output.
import { createServer } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { extname, join, normalize, resolve } from "node:path";
import { chromium } from "playwright-core";

export const DIST = resolve(process.env.TINYGPT_DIST ?? new URL("../../dist", import.meta.url).pathname);
/**
 * The test build (`trunk build --release --features fault-injection --dist
 * dist-test`): the only one whose worker honours `?fault=`. Production
 * builds (`dist/`) contain no fault pipeline.
 */
export const DIST_TEST = resolve(process.env.TINYGPT_DIST_TEST ?? new URL("../../dist-test", import.meta.url).pathname);
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/**
 * How much longer than the written figure a wait may take. WebGPU runs on
 * SwiftShader here, on the CPU, and the same step takes two to three times
 * longer on one two-core machine than on another; the waits guard against
 * hangs and time nothing (speed is measured by bench.mjs). Set
 * TINYGPT_E2E_PATIENCE to change it (default 3).
 */
const PATIENCE = Number(process.env.TINYGPT_E2E_PATIENCE || 3);
export const patience = (ms) => Math.round(ms * PATIENCE);

/**
 * A fresh directory under the system's temporary folder for a test's files
 * (a download, a corrupt upload), removed when the test process exits so
 * repeated runs leave nothing behind.
 */
export function scratchDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".wasm": "application/wasm",
  ".css": "text/css",
  ".txt": "text/plain; charset=utf-8",
  ".json": "application/json",
  ".safetensors": "application/octet-stream",
};

/**
 * Serves `root` on 127.0.0.1 at a free port; `headers` are added to every
 * response (e.g. a Content-Security-Policy header).
 */
export async function serve(root = DIST, { headers = {} } = {}) {
  await stat(join(root, "index.html")).catch(() => {
    throw new Error(
      `${root}/index.html is missing: run \`trunk build --release\` (dist/) or \`trunk build --release --features fault-injection --dist dist-test\` (dist-test/) first`,
    );
  });
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    const file = normalize(join(root, path.endsWith("/") ? path + "index.html" : path));
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    try {
      const body = await readFile(file);
      res.writeHead(200, { ...headers, "content-type": MIME[extname(file)] ?? "application/octet-stream" });
      res.end(body);
    } catch {
      res.writeHead(404).end("not found");
    }
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const { port } = server.address();
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((ok) => server.close(ok)) };
}

// Flags that keep Chromium off the network on a machine without one.
const QUIET = [
  "--no-sandbox",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
// WebGPU on SwiftShader (no GPU on CI): subgroups and timestamp-query, no shader-f16.
const WEBGPU = [
  "--enable-unsafe-webgpu",
  "--enable-features=Vulkan,WebMachineLearningNeuralNetwork",
  "--use-vulkan=swiftshader",
  "--use-webgpu-adapter=swiftshader",
  "--enable-unsafe-swiftshader",
];

/** Launches headless Chromium, with or without WebGPU. */
export async function launch({ webgpu = true } = {}) {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...QUIET, ...(webgpu ? WEBGPU : ["--disable-gpu", "--disable-features=WebGPU"])],
  });
}

/**
 * Opens the app and records every console line of the page and its workers.
 * Returns the page and `logs`, an array of `{ source, type, text }`.
 * `beforeGoto(page)`, if given, runs before the page is loaded (to add init
 * scripts or listeners that must see the very first request). The page
 * opens as a returning visitor's, the first-visit tour already seen, unless
 * `tour` is set (the tour's own tests).
 */
export async function openApp(browser, url, { beforeGoto, tour = false, speedGate = false } = {}) {
  const page = await browser.newPage();
  // The speed gate decides by timing, which on this machine's SwiftShader
  // may go either way: tests that need a fast path on ask precision alone to
  // decide (`?speed_gate=off`); the speed gate's own test passes `speedGate`.
  if (!speedGate) {
    const u = new URL(url);
    if (!u.searchParams.has("speed_gate")) u.searchParams.set("speed_gate", "off");
    url = u.toString();
  }
  if (!tour) await page.addInitScript(() => localStorage.setItem("tinygpt.tour", "done"));
  page.setDefaultTimeout(patience(30_000));
  const logs = [];
  const record = (source) => (msg) => {
    const line = { source, type: msg.type(), text: msg.text() };
    logs.push(line);
    console.log(`  [${source}:${line.type}] ${line.text}`);
  };
  page.on("console", record("page"));
  page.on("pageerror", (err) => {
    logs.push({ source: "page", type: "pageerror", text: String(err) });
    console.log(`  [page:pageerror] ${err}`);
  });
  page.on("worker", (worker) => {
    console.log(`  [worker] started ${worker.url()}`);
    worker.on("console", record("worker"));
  });
  await beforeGoto?.(page);
  await page.goto(url);
  return { page, logs };
}

/** Console errors and uncaught exceptions, which every test forbids. */
export function errorsIn(logs) {
  return logs.filter((l) => l.type === "error" || l.type === "pageerror");
}

/** Text of the element with `data-testid`. */
export async function testid(page, id) {
  return page.getByTestId(id).innerText();
}

/**
 * Records every request of `page`'s browser context — its dedicated workers'
 * included (Chromium reports them on the context) — as `{ url, type }`.
 * Call it before the page loads (e.g. from `openApp`'s `beforeGoto`).
 */
export function recordRequests(page) {
  const requests = [];
  page.context().on("request", (req) => requests.push({ url: req.url(), type: req.resourceType() }));
  return requests;
}

// ---- Playground helpers -------------------------------------------------

/** Console errors except those matching one of `expected` (RegExps a test provokes on purpose). */
export function unexpectedErrors(logs, expected = []) {
  return errorsIn(logs).filter((l) => !expected.some((re) => re.test(l.text)));
}

/** Waits until `data-testid=id` has attribute `attr` equal to `value` (a string) or matching it (a RegExp). */
export async function waitForAttr(page, id, attr, value, timeout = patience(60_000)) {
  const [source, flags, exact] =
    value instanceof RegExp ? [value.source, value.flags, false] : [String(value), "", true];
  await page.waitForFunction(
    ({ id, attr, source, flags, exact }) => {
      const v = document.querySelector(`[data-testid="${id}"]`)?.getAttribute(attr);
      if (v == null) return false;
      return exact ? v === source : new RegExp(source, flags).test(v);
    },
    { id, attr, source, flags, exact },
    { timeout },
  );
}

/** Waits for the run state badge to say `state` (`running`, `paused`, `finished`, …). */
export async function waitForRunState(page, state, timeout = patience(60_000)) {
  await waitForAttr(page, "run-state", "data-state", state, timeout);
}

/** A numeric attribute of `data-testid=id`. */
export async function numAttr(page, id, attr) {
  return Number(await page.getByTestId(id).getAttribute(attr));
}

/** Opens the app and waits until the worker is up and has reported its capabilities. */
export async function openReady(browser, url, options = {}) {
  const opened = await openApp(browser, url, options);
  await opened.page.waitForSelector('[data-testid="caps"][data-reported="true"]', { timeout: patience(60_000) });
  await waitForAttr(opened.page, "status", "data-worker-ready", "true");
  return opened;
}

/** Types `{ testid: text }` into the playground's fields. */
export async function fillFields(page, fields) {
  for (const [id, text] of Object.entries(fields)) {
    await page.getByTestId(id).fill(String(text));
  }
}

/**
 * Trains a preset (nano by default) on the bundled corpus with small, fast
 * settings (one sequence per step: SwiftShader runs ~250 tokens/s), and
 * waits for the run to finish.
 */
export async function trainQuick(
  page,
  { preset = "nano", steps = 10, batch = 1, evalInterval = 5, evalBatches = 2, warmup = 2, lr = "3e-3", timeout = patience(60_000) } = {},
) {
  await page.getByTestId("preset").selectOption(preset);
  await fillFields(page, {
    "hp-steps": steps,
    "hp-batch": batch,
    "hp-eval-interval": evalInterval,
    "hp-eval-batches": evalBatches,
    "hp-warmup": warmup,
    "hp-lr": lr,
  });
  const run = await numAttr(page, "run-state", "data-run");
  await page.getByTestId("train").click();
  await waitForAttr(page, "run-state", "data-run", String(run + 1), timeout);
  await waitForRunState(page, "finished", timeout);
}

/** Runs a localisation of `prompt` and returns its chart's attributes. */
export async function localise(page, prompt) {
  await page.getByTestId("localize-prompt").fill(prompt);
  const panel = page.getByTestId("precision-panel");
  const seen = Number(await panel.getAttribute("data-localized"));
  await page.getByTestId("localize-run").click();
  await waitForAttr(page, "precision-panel", "data-localized", String(seen + 1), patience(120_000));
  const chart = page.getByTestId("localization");
  return {
    stages: Number(await chart.getAttribute("data-stages")),
    firstJump: await chart.getAttribute("data-first-jump"),
    bars: await chart.locator("rect[data-stage]").count(),
    verdict: await page.getByTestId("localization-verdict").innerText(),
  };
}

const AXE = new URL("./node_modules/axe-core/axe.min.js", import.meta.url).pathname;

/**
 * Runs the axe-core accessibility audit (from npm, evaluated through the
 * DevTools protocol, which the page's CSP does not govern) on the page as
 * it is, and returns the serious and critical violations as readable lines
 * (`rule: what — element, …`).
 */
export async function a11yViolations(page) {
  const { readFile } = await import("node:fs/promises");
  if (!(await page.evaluate(() => typeof window.axe === "object"))) {
    await page.evaluate(await readFile(AXE, "utf8"));
  }
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.slice(0, 4).map((n) => n.target.join(" ")).join(", ")}`);
}

/**
 * Waits for the start-up gate's `+f16 storage` pill, loads the bundled
 * model and waits until the gate has verified it on its real weights.
 */
export async function loadBundledAndGate(page) {
  await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
  await page.getByTestId("load-bundled").click();
  await page.waitForFunction(
    () => /verified on this model in [\d.]+s/.test(document.querySelector('[data-testid="status"]')?.innerText ?? ""),
    null,
    { timeout: patience(180_000) },
  );
}
