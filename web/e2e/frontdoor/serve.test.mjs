// The README's first command, as a new user runs it: `bash .ci/serve` from
// the checkout, in the background; the page it serves must start its worker
// and report the GPU's capabilities in headless Chromium, its output must hold
// no panic, and stopping it (SIGTERM, as Ctrl-C does) must leave no process
// it started. Run by `.ci/test` (stage "front door") from the CI clone.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { connect } from "node:net";
import { resolve } from "node:path";
import { launch, openReady, errorsIn, patience } from "../lib.mjs";

const ROOT = resolve(new URL("../../..", import.meta.url).pathname);
const URL_ = "http://127.0.0.1:8080/";
const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

/** Processes whose session is `sid` (the serve script leads its own session). */
function sessionProcesses(sid) {
  const out = execFileSync("ps", ["-e", "-o", "pid=,sid=,args="], { encoding: "utf8" });
  return out
    .split("\n")
    .map((l) => l.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .filter((m) => m && Number(m[2]) === sid)
    .map((m) => `${m[1]} ${m[3]}`);
}

/** Whether anything accepts a TCP connection on 127.0.0.1:8080. */
function listening() {
  return new Promise((ok) => {
    const socket = connect({ host: "127.0.0.1", port: 8080 });
    const done = (v) => {
      socket.destroy();
      ok(v);
    };
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
    socket.setTimeout(2000, () => done(false));
  });
}

async function answers(url) {
  try {
    return (await fetch(url)).ok;
  } catch {
    return false;
  }
}

/** Sends `signal` to the process, if it still exists. */
function signal(pid, sig) {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone.
  }
}

test("bash .ci/serve builds, serves a page whose worker reports its GPU, and stops cleanly", async () => {
  assert.ok(!(await listening()), "port 8080 must be free before the test");
  // detached: the script leads a new session, so every process it starts can be found.
  const serve = spawn("bash", [".ci/serve"], { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const keep = (chunk) => {
    const text = chunk.toString();
    output += text;
    process.stdout.write(text.replace(/^/gm, "  [serve] "));
  };
  serve.stdout.on("data", keep);
  serve.stderr.on("data", keep);
  const exited = new Promise((ok) => serve.on("exit", (code, signal) => ok({ code, signal })));
  let done = false;
  exited.then(() => (done = true));
  try {
    // A cold first build takes ~15 minutes on two cores; a warm one seconds.
    const deadline = Date.now() + patience(20 * 60_000);
    while (!/\[serve\] ready after \d+ s: open http:\/\/127\.0\.0\.1:8080\//.test(output)) {
      assert.ok(!done, `.ci/serve exited before serving:\n${output.slice(-4000)}`);
      assert.ok(Date.now() < deadline, "the page was not served in time");
      await sleep(1000);
    }
    assert.ok(await answers(URL_), "the ready line comes once the page answers");
    assert.match(output, /WebGPU is not available in this browser's workers/, "the ready line says what a browser without WebGPU shows");

    const browser = await launch();
    try {
      const { page, logs } = await openReady(browser, URL_);
      assert.equal(await page.getByTestId("caps").getAttribute("data-reported"), "true");
      assert.equal(await page.getByTestId("pill-webgpu").getAttribute("data-on"), "true");
      const check = logs.find((l) => l.source === "worker" && l.text.startsWith("[ops] kernel check"));
      assert.ok(check, "the worker logged its kernel check");
      assert.match(check.text, /— PASS$/);
      assert.deepEqual(errorsIn(logs), [], "no console errors on the served page");
    } finally {
      await browser.close();
    }
  } finally {
    if (!done) signal(serve.pid, "SIGTERM");
    // A script that does not stop within a minute, and whatever it left,
    // is killed so that the failure shows instead of a hang.
    const timer = setTimeout(() => {
      for (const line of sessionProcesses(serve.pid)) signal(Number(line.split(" ")[0]), "SIGKILL");
    }, 60_000);
    await exited;
    clearTimeout(timer);
  }
  const { code, signal: killedBy } = await exited;
  assert.equal(killedBy, null, `.ci/serve ended by its own exit, not killed (${killedBy})`);
  assert.equal(code, 0, ".ci/serve exits 0 when stopped");
  assert.match(output, /\[serve\] stopped/);
  assert.doesNotMatch(output, /panicked/, "no panic in the serve output");
  // Nothing it started outlives it, and the port is free again.
  let left = sessionProcesses(serve.pid);
  for (let i = 0; left.length && i < 20; i++) {
    await sleep(250);
    left = sessionProcesses(serve.pid);
  }
  assert.deepEqual(left, [], "no process of .ci/serve is left");
  assert.ok(!(await listening()), "nothing listens on :8080 after the stop");
});
