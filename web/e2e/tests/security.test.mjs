// Security and privacy in a real browser (WebGPU on SwiftShader): the built
// index.html carries a strict Content-Security-Policy; the app starts, loads
// the bundled model and samples under it with no violation reported, in the
// console or as a `securitypolicyviolation` event; every request the page and
// its worker make goes to the page's own origin. Negative controls (a
// third-party fetch, an inline and a third-party script, an inline style)
// prove the policy is in force and that these checks would catch its absence.
// A second test serves the same policy as a header, as `trunk serve` does
// (Trunk.toml), which is the only way a policy reaches the worker: the worker
// still compiles its wasm, runs the start-up checks on WebGPU and fetches the
// model under it, and refuses a third-party fetch. (Playwright does not
// surface a worker's CSP console lines, so that control listens for the
// worker's own `securitypolicyviolation` event.)
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import {
  DIST,
  serve,
  launch,
  openReady,
  recordRequests,
  fillFields,
  waitForAttr,
  unexpectedErrors,
  patience,
} from "../lib.mjs";

/** The policy of index.html's <meta>, directive by directive. */
const EXPECTED = {
  "default-src": ["'self'"],
  "script-src": ["'self'", "'wasm-unsafe-eval'"],
  "worker-src": ["'self'"],
  "connect-src": ["'self'"],
  "img-src": ["'self'"],
  "style-src": ["'self'"],
  "object-src": ["'none'"],
  "base-uri": ["'none'"],
  "form-action": ["'none'"],
};
/** A header can also forbid framing, which a <meta> cannot. */
const EXPECTED_HEADER = { ...EXPECTED, "frame-ancestors": ["'none'"] };

/** Console lines Chromium writes for a CSP violation. */
const CSP_LINE = /Content[- ]Security[- ]Policy|Refused to/i;

/** `"a b; c d"` → `{ a: ["b"], c: ["d"] }`. */
function parsePolicy(text) {
  const policy = {};
  for (const part of text.split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (!name) continue;
    assert.ok(!(name in policy), `directive ${name} appears once`);
    policy[name.toLowerCase()] = sources;
  }
  return policy;
}

/** The CSP of the <meta http-equiv> in `html` (exactly one). */
function metaPolicy(html) {
  const metas = [...html.matchAll(/<meta\b[^>]*http-equiv="Content-Security-Policy"[^>]*>/gi)];
  assert.equal(metas.length, 1, "one CSP <meta> in index.html");
  const content = metas[0][0].match(/\bcontent="([^"]*)"/);
  assert.ok(content, "the CSP <meta> has a content attribute");
  // A <meta> policy only covers what comes after it: it must precede every script and stylesheet.
  const at = metas[0].index;
  for (const m of html.matchAll(/<script\b|<link\b[^>]*rel="(stylesheet|modulepreload|preload)"/gi)) {
    assert.ok(m.index > at, `the CSP <meta> comes before ${m[0]}`);
  }
  return parsePolicy(content[1]);
}

/** Records CSP violations of the page into `window.__cspViolations`, from the first byte on. */
async function watchViolations(page) {
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener("securitypolicyviolation", (e) => {
      window.__cspViolations.push({ directive: e.effectiveDirective, blocked: e.blockedURI, sample: e.sample });
    });
  });
}

/** Opens the app, recording requests and violations from the start, and waits until it is ready to generate. */
async function openWatched(browser, url) {
  let requests;
  const { page, logs } = await openReady(browser, url, {
    beforeGoto: async (page) => {
      requests = recordRequests(page);
      await watchViolations(page);
    },
  });
  // The start-up kernel check and the f16-storage gate ran in the worker.
  await page.waitForFunction(
    () => /ready to generate/.test(document.querySelector('[data-testid="status"]')?.innerText ?? ""),
    null,
    { timeout: patience(90_000) },
  );
  return { page, logs, requests };
}

/** Loads the bundled model, which the worker fetches. */
async function loadBundled(page) {
  await page.getByTestId("load-bundled").click();
  await page.waitForFunction(
    () => /bundled Shakespeare model/.test(document.querySelector('[data-testid="model-info"]')?.innerText ?? ""),
    null,
    { timeout: patience(120_000) },
  );
}

/**
 * Samples a few characters. On SwiftShader this waits for the f16 gate the
 * worker re-runs on a freshly loaded model (a 100-token greedy comparison).
 */
async function sampleFew(page) {
  await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 8, "sample-temperature": "0", "sample-seed": 1 });
  await page.getByTestId("generate").click();
  await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
    timeout: patience(300_000),
  });
  const out = await page.getByTestId("sample-output").textContent();
  assert.equal([...out].length, 8, `8 characters generated, got ${JSON.stringify(out)}`);
  await waitForAttr(page, "busy", "data-busy", "false");
}

/** Asserts the app ran clean: no CSP line in any console, no violation event, only own-origin requests. */
async function assertClean(page, logs, requests, origin) {
  assert.deepEqual(
    logs.filter((l) => CSP_LINE.test(l.text)),
    [],
    "no console line of the page or its worker reports a CSP violation",
  );
  assert.deepEqual(await page.evaluate(() => window.__cspViolations), [], "no securitypolicyviolation event");
  assert.deepEqual(unexpectedErrors(logs), []);
  const foreign = requests.filter((r) => new URL(r.url).origin !== origin);
  assert.deepEqual(foreign, [], "every request goes to the page's own origin");
  // The recording sees the worker's requests too, not only the page's.
  const paths = requests.map((r) => new URL(r.url).pathname);
  for (const path of ["/", "/worker-loader.js", "/tinygpt-worker.js", "/tinygpt-worker_bg.wasm", "/shakespeare.safetensors"]) {
    assert.ok(paths.includes(path), `request for ${path} seen (got ${paths.join(", ")})`);
  }
  assert.ok(paths.some((p) => /^\/app-loader-[0-9a-f]+\.js$/.test(p)), "the UI started from the hashed app-loader");
  console.log(`  ${requests.length} requests, all to ${origin}: ${[...new Set(paths)].join(" ")}`);
}

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

test("a strict CSP in index.html: the app runs clean under it, only own-origin requests, and it blocks what it must", async () => {
  // (a) The served index.html carries the policy, and nothing it would refuse.
  const html = await (await fetch(server.url)).text();
  assert.deepEqual(metaPolicy(html), EXPECTED);
  for (const tag of html.matchAll(/<script\b[^>]*>/gi)) {
    assert.match(tag[0], /\bsrc="\/[^/"]/, `every script is an own file, none inline: ${tag[0]}`);
  }
  assert.doesNotMatch(html, /<style\b|\sstyle="/i, "no inline style");
  assert.doesNotMatch(html, /\b(src|href)="(https?:)?\/\//i, "no third-party asset");

  const browser = await launch({ webgpu: true });
  try {
    const origin = new URL(server.url).origin;
    const { page, logs, requests } = await openWatched(browser, server.url);
    await loadBundled(page);
    await sampleFew(page);
    // (b) and (c)
    await assertClean(page, logs, requests, origin);

    // (d) Negative controls: the policy refuses a third-party fetch, an inline
    // and a third-party script and an inline style, and says so both as events
    // and in the console, so the checks above would fail without it.
    const fetched = await page.evaluate(() =>
      fetch("https://example.invalid/x").then(
        () => "fetched",
        (e) => `refused: ${e}`,
      ),
    );
    assert.match(fetched, /^refused: TypeError/);
    await page.evaluate(() => {
      const inline = document.createElement("script");
      inline.textContent = "window.__inlineRan = true;";
      document.head.append(inline);
      const foreign = document.createElement("script");
      foreign.src = "https://example.invalid/x.js";
      document.head.append(foreign);
      document.body.setAttribute("style", "outline: 1px solid red");
    });
    await page.waitForFunction(() => window.__cspViolations.length >= 4, null, { timeout: patience(10_000) });
    assert.equal(await page.evaluate(() => window.__inlineRan), undefined, "the inline script did not run");
    const violations = await page.evaluate(() => window.__cspViolations);
    console.log(`  provoked violations: ${JSON.stringify(violations)}`);
    const has = (directive, blocked) =>
      violations.some((v) => v.directive === directive && blocked.test(v.blocked));
    assert.ok(has("connect-src", /^https:\/\/example\.invalid\/x$/), "fetch to a third party refused by connect-src");
    assert.ok(has("script-src-elem", /^inline$/), "inline script refused by script-src");
    assert.ok(has("script-src-elem", /^https:\/\/example\.invalid\/x\.js$/), "third-party script refused by script-src");
    assert.ok(has("style-src-attr", /^inline$/), "inline style refused by style-src");
    assert.equal(violations.length, 4, "nothing else was refused");
    // Chromium also reports each in the console: the console check above is live.
    const cspLines = () => logs.filter((l) => l.source === "page" && CSP_LINE.test(l.text));
    for (let i = 0; i < 50 && cspLines().length < 3; i++) await page.waitForTimeout(100);
    const consoleLines = cspLines();
    assert.ok(consoleLines.length >= 3, `the console reported the refusals: ${JSON.stringify(consoleLines)}`);
    assert.deepEqual(unexpectedErrors(logs, [CSP_LINE]), []);
  } finally {
    await browser.close();
  }
});

test("the same policy as a header (trunk serve) also reaches the worker, which still starts and loads the model", async () => {
  // Trunk.toml's [serve.headers] policy is the <meta>'s plus frame-ancestors.
  const toml = await readFile(new URL("../../../Trunk.toml", import.meta.url), "utf8");
  const header = toml.match(/^"Content-Security-Policy"\s*=\s*"([^"]*)"\s*$/m);
  assert.ok(header, "Trunk.toml sets a Content-Security-Policy header for trunk serve");
  assert.deepEqual(parsePolicy(header[1]), EXPECTED_HEADER);
  const html = await readFile(`${DIST}/index.html`, "utf8");
  assert.deepEqual(metaPolicy(html), EXPECTED);

  const served = await serve(DIST, { headers: { "content-security-policy": header[1] } });
  const browser = await launch({ webgpu: true });
  try {
    const origin = new URL(served.url).origin;
    const { page, logs, requests } = await openWatched(browser, served.url);
    await loadBundled(page);
    await assertClean(page, logs, requests, origin);

    // Negative control inside the worker: its own policy (from the header of
    // worker-loader.js) refuses a third-party fetch.
    const [worker] = page.workers();
    assert.ok(worker, "the worker is running");
    const refused = await worker.evaluate(async () => {
      const seen = [];
      self.addEventListener("securitypolicyviolation", (e) => seen.push(`${e.effectiveDirective} ${e.blockedURI}`));
      const result = await fetch("https://example.invalid/w").then(
        () => "fetched",
        (e) => `refused: ${e}`,
      );
      await new Promise((ok) => setTimeout(ok, 200));
      return { result, seen };
    });
    console.log(`  worker control: ${JSON.stringify(refused)}`);
    assert.match(refused.result, /^refused: TypeError/);
    assert.deepEqual(refused.seen, ["connect-src https://example.invalid/w"]);
    assert.deepEqual(unexpectedErrors(logs, [CSP_LINE]), []);
  } finally {
    await browser.close();
    await served.close();
  }
});
