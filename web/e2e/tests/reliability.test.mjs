// Nothing lost: every fault of the reliability doc, provoked in a real
// browser (WebGPU on SwiftShader), with the user-visible outcome and the
// saved state checked. Faults come from test-only hooks that the page and
// the worker honour only with `?test_hooks=1` (window.tinygptTestHook).
// Runs train the nano preset on one 64-character sequence per step.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { serve, launch, openReady, testid, numAttr, waitForAttr, waitForRunState, fillFields, unexpectedErrors, patience, scratchDir } from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

const HOOKS = "?test_hooks=1";

/** A browser with one context (so private storage survives reloads). */
async function withBrowser(body) {
  const browser = await launch({ webgpu: true });
  try {
    await body(browser);
  } finally {
    await browser.close();
  }
}

/** Starts a nano run with a short autosave interval; waits for its first periodic save (or, with 0, the restore point at step 0) and returns the step of the last save seen. */
async function startRun(page, { steps = 400, autosave = 4, name = "" } = {}) {
  await fillFields(page, { "run-name": name });
  await fillFields(page, { "autosave-steps": autosave });
  await page.getByTestId("autosave-steps").dispatchEvent("change");
  await page.getByTestId("preset").selectOption("nano");
  await fillFields(page, { "hp-steps": steps, "hp-batch": 1, "hp-warmup": 2, "hp-eval-interval": 0, "hp-lr": "3e-3" });
  await page.getByTestId("train").click();
  await waitForRunState(page, "running");
  return waitForSave(page, autosave);
}

/** Waits until the last save of this session is at `step` or later; returns its step. */
async function waitForSave(page, step, timeout = patience(120_000)) {
  await page.waitForFunction(
    (s) => {
      const m = /at step (\d+)/.exec(document.querySelector('[data-testid="last-save"]')?.innerText ?? "");
      return m && Number(m[1]) >= s;
    },
    step,
    { timeout },
  );
  return Number(/at step (\d+)/.exec(await testid(page, "last-save"))[1]);
}

/** After a pause: waits for the pause's save (at the step the progress shows); returns that step. */
async function waitForPauseSave(page) {
  await page.waitForFunction(
    () => {
      const m = /at step (\d+)/.exec(document.querySelector('[data-testid="last-save"]')?.innerText ?? "");
      const step = document.querySelector('[data-testid="progress"]')?.getAttribute("data-step");
      return m && m[1] === step;
    },
    null,
    { timeout: patience(60_000) },
  );
  return Number(/at step (\d+)/.exec(await testid(page, "last-save"))[1]);
}

/** The saved runs the panel lists: `[{ id, step }]`. */
async function savedRuns(page) {
  return page.$$eval('[data-testid="saved-run"]', (rows) =>
    rows.map((r) => ({ id: r.getAttribute("data-run-id"), step: Number(r.getAttribute("data-step")) })),
  );
}

async function hook(page, name) {
  await page.evaluate((n) => window.tinygptTestHook(n), name);
}

async function modelStep(page) {
  return numAttr(page, "model-info", "data-step");
}

test("autosave, refresh, resume: the run continues from its save and finishes", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url + HOOKS);
    // The save seen may already be a later one (steps are fast): any autosave
    // lands on a multiple of the interval.
    const first = await startRun(page, { steps: 60, autosave: 4, name: "my sonnet run" });
    assert.equal(first % 4, 0, `autosaves land on multiples of the interval (step ${first})`);
    await page.getByTestId("pause").click();
    await waitForRunState(page, "paused");
    const saved = await waitForPauseSave(page);
    const runs = await savedRuns(page);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].step, saved, "the pause saved the run");
    assert.match(await testid(page, "saved-runs"), /my sonnet run/, "the run carries its name");
    assert.ok(saved < 60, `paused before the end (${saved})`);

    await page.reload();
    await waitForAttr(page, "status", "data-worker-ready", "true");
    const offer = page.getByTestId("resume-offer");
    await offer.waitFor({ timeout: patience(60_000) });
    assert.match(await offer.innerText(), new RegExp(`step ${saved} of 60`));
    assert.equal(await offer.getAttribute("data-run-id"), runs[0].id);
    assert.match(await testid(page, "storage"), /used/);

    await page.getByTestId("resume-last").click();
    await waitForRunState(page, "running");
    await waitForRunState(page, "finished", patience(300_000));
    assert.equal(await modelStep(page), 60);
    assert.equal(await page.getByTestId("model-info").getAttribute("data-run-id"), runs[0].id, "the same run");
    const chart = await numAttr(page, "loss-chart", "data-train-points");
    assert.ok(chart >= 55, `the restored history plus the new steps are charted (${chart} points)`);
    await page.waitForFunction(() => /at step 60/.test(document.querySelector('[data-testid="last-save"]')?.innerText ?? ""));
    assert.equal((await savedRuns(page))[0].step, 60, "the end of the run was saved");

    // Named runs: list, load, delete. The worker takes the delete once it
    // has re-run the f16 gate on the trained weights (100 greedy tokens on
    // f32 and f16: a minute or more on SwiftShader).
    await page.getByTestId("saved-delete").first().click();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="saved-runs"]')?.getAttribute("data-count") === "0",
      null,
      { timeout: patience(300_000) },
    );
    assert.match(await testid(page, "model-info"), /step 60/, "deleting a save keeps the model");
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("a worker crash: the page notices, restarts the worker and restores the last autosave", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url + HOOKS);
    await startRun(page);
    await page.getByTestId("pause").click();
    await waitForRunState(page, "paused");
    const saved = await waitForPauseSave(page);
    const id = (await savedRuns(page))[0].id;
    await hook(page, "panic");
    await page.waitForFunction(() => /running the worker/.test(document.querySelector('[data-testid="error"]')?.innerText ?? ""), null, {
      timeout: patience(30_000),
    });
    await page.waitForFunction(
      (id) => document.querySelector('[data-testid="model-info"]')?.getAttribute("data-run-id") === id,
      id,
      { timeout: patience(120_000) },
    );
    assert.equal(await modelStep(page), saved, "restored at the saved step");
    assert.equal((await savedRuns(page))[0].step, saved, "the save is intact");
    // The restored model trains on.
    await fillFields(page, { "continue-steps": 3 });
    await page.getByTestId("continue").click();
    await waitForRunState(page, "finished", patience(60_000));
    assert.equal(await modelStep(page), saved + 3);
    assert.deepEqual(unexpectedErrors(logs, [/test hook: worker panic/, /panicked at/, /unreachable/i, /RuntimeError/]), []);
  });
});

test("a crash halfway through an autosave leaves the previous save intact", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url + HOOKS);
    await startRun(page, { autosave: 4 });
    const first = await waitForSave(page, 4);
    const id = (await savedRuns(page))[0].id;
    await hook(page, "crash_during_save");
    // The next autosave (at the next 4 steps, or the pause) crashes halfway through.
    await page.waitForFunction(() => /running the worker/.test(document.querySelector('[data-testid="error"]')?.innerText ?? ""), null, {
      timeout: patience(120_000),
    });
    await page.waitForFunction(
      (id) => document.querySelector('[data-testid="model-info"]')?.getAttribute("data-run-id") === id,
      id,
      { timeout: patience(120_000) },
    );
    const restored = await modelStep(page);
    assert.ok(restored >= first, `restored the last complete save (step ${restored})`);
    const runs = await savedRuns(page);
    assert.equal(runs.length, 1);
    assert.equal(runs[0].step, restored, "the manifest still names the complete slot");
    // Sampling from the restored weights works.
    await fillFields(page, { "sample-prompt": "\n", "sample-length": 8, "sample-temperature": "0" });
    await page.getByTestId("generate").click();
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: patience(60_000),
    });
    assert.deepEqual(unexpectedErrors(logs, [/crashed halfway/, /panicked at/, /unreachable/i, /RuntimeError/]), []);
  });
});

test("device lost: the worker recreates the device, re-runs the gates and reloads the last save", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url + HOOKS);
    await page.getByTestId("pill-f16-storage").waitFor({ timeout: patience(90_000) });
    await startRun(page);
    const saved = await waitForSave(page, 4);
    await page.getByTestId("pause").click();
    await waitForRunState(page, "paused");
    const pausedSave = await waitForPauseSave(page);
    await hook(page, "destroy_device");
    await page.waitForFunction(
      () => /GPU device was lost .*recreated it, re-ran the gates and reloaded your run from its last save at step \d+/.test(
        document.querySelector('[data-testid="status"]')?.innerText ?? "",
      ),
      null,
      { timeout: patience(180_000) },
    );
    assert.equal(await modelStep(page), pausedSave, "the last save is back");
    assert.ok(logs.some((l) => l.source === "worker" && /\[ops\] f16-storage gate: .* — PASS/.test(l.text) && logs.indexOf(l) > 0));
    const gateLines = logs.filter((l) => l.source === "worker" && /^\[ops\] f16-storage gate: mean/.test(l.text));
    assert.ok(gateLines.length >= 2, "the gate ran again on the new device");
    await fillFields(page, { "continue-steps": 3 });
    await page.getByTestId("continue").click();
    await waitForRunState(page, "finished", patience(60_000));
    assert.equal(await modelStep(page), pausedSave + 3, "training goes on without a page reload");
    assert.deepEqual(unexpectedErrors(logs, [/lost/i, /destroyed/i, /uncaptured WebGPU error/]), []);
  });
});

test("a NaN in the weights: the run stops, says so, and the last good state is restored", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url + HOOKS);
    await startRun(page);
    const saved = await waitForSave(page, 4);
    await page.getByTestId("pause").click();
    await waitForRunState(page, "paused");
    const good = await waitForPauseSave(page);
    await hook(page, "poison_weights");
    await page.getByTestId("resume").click();
    await page.waitForFunction(() => /training diverged at step \d+/.test(document.querySelector('[data-testid="error"]')?.innerText ?? ""), null, {
      timeout: patience(60_000),
    });
    await page.waitForFunction(
      () => /restored the last good state, the save at step \d+/.test(document.querySelector('[data-testid="status"]')?.innerText ?? ""),
      null,
      { timeout: patience(60_000) },
    );
    assert.equal(await modelStep(page), good, "back to the last good save");
    assert.equal((await savedRuns(page))[0].step, good, "the NaN never reached the save");
    // The restored weights are finite: training goes on with finite losses.
    await fillFields(page, { "continue-steps": 3 });
    await page.getByTestId("continue").click();
    await waitForRunState(page, "finished", patience(60_000));
    assert.match(await testid(page, "progress-train-loss"), /^\d+\.\d+/);
    assert.deepEqual(unexpectedErrors(logs, [/training diverged/, /wrote a NaN/]), []);
  });
});

test("a run too big for the GPU is refused before allocation, naming the limit", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url);
    await page.getByTestId("preset").selectOption("large");
    const estimate = await numAttr(page, "preset-estimate", "data-memory-bytes");
    await fillFields(page, { "hp-batch": 1024, "hp-steps": 1000 });
    await page.getByTestId("train").click();
    await page.waitForFunction(() => /does not fit on this GPU/.test(document.querySelector('[data-testid="error"]')?.innerText ?? ""), null, {
      timeout: patience(60_000),
    });
    const text = await testid(page, "error");
    assert.match(text, /GiB/);
    assert.match(text, /budget|maxStorageBufferBindingSize/);
    assert.ok((await numAttr(page, "preset-estimate", "data-memory-bytes")) > estimate, "the estimate follows the batch size");
    assert.match(await testid(page, "model-info"), /No model yet/, "nothing was replaced");
    assert.deepEqual(unexpectedErrors(logs, [/does not fit/]), []);
  });
});

test("bad inputs each get a clear error and nothing the user had is lost", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url);
    // A model to keep: a short run.
    await page.getByTestId("preset").selectOption("nano");
    await fillFields(page, { "hp-steps": 4, "hp-batch": 1, "hp-warmup": 1, "hp-eval-interval": 0 });
    await page.getByTestId("train").click();
    await waitForRunState(page, "finished", patience(60_000));
    const kept = await testid(page, "model-info");
    const dir = scratchDir("tinygpt-bad-");
    const expectError = async (re) => {
      await page.waitForFunction((src) => new RegExp(src).test(document.querySelector('[data-testid="error"]')?.innerText ?? ""), re.source, {
        timeout: patience(60_000),
      });
      assert.equal(await testid(page, "model-info"), kept, `the model stays after: ${re}`);
      await page.getByTestId("error-dismiss").click();
    };

    // Corpora: empty, binary.
    for (const [name, bytes, re] of [
      ["empty.txt", Buffer.alloc(0), /corpus empty\.txt/],
      ["binary.txt", Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37) % 256)), /corpus binary\.txt/],
    ]) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      await page.getByTestId("corpus-upload").check();
      await page.getByTestId("corpus-file").setInputFiles(path);
      await waitForAttr(page, "corpus-file-status", "data-loaded", "true");
      await page.getByTestId("train").click();
      await expectError(re);
    }
    // A huge corpus is refused before it is even read.
    const huge = join(dir, "huge.txt");
    await writeFile(huge, Buffer.alloc(65 << 20, 0x61));
    await page.getByTestId("corpus-upload").check();
    await page.getByTestId("corpus-file").setInputFiles(huge);
    await expectError(/corpus huge\.txt: it is 65\.0 MiB; the playground trains on corpora up to 64\.0 MiB/);
    await page.getByTestId("corpus-bundled").check();

    // Hyper-parameters: NaN, negative, absurd.
    for (const [field, value, re] of [
      ["hp-dropout", "1.5", /dropout/],
      ["hp-lr", "NaN", /learning rate|lr/],
      ["hp-warmup", "-3", /warm-up|warmup/],
      ["hp-steps", "99999999999", /steps/],
    ]) {
      await page.getByTestId("preset").selectOption("nano");
      await fillFields(page, { [field]: value });
      await page.getByTestId("train").click();
      const shown = await page
        .waitForFunction(
          (src) => new RegExp(src, "i").test(
            (document.querySelector('[data-testid="train-validation"]')?.innerText ?? "") +
              (document.querySelector('[data-testid="error"]')?.innerText ?? ""),
          ),
          re.source,
          { timeout: patience(30_000) },
        )
        .then(() => true);
      assert.ok(shown, `${field}=${value} is refused`);
      assert.equal(await testid(page, "model-info"), kept);
    }

    // A prompt with characters the model does not know.
    await fillFields(page, { "sample-prompt": "naïve ☃", "sample-length": 5 });
    await page.getByTestId("generate").click();
    await expectError(/is not in the vocabulary/);

    // Checkpoints: truncated, crafted huge header, wrong dtype, another model's.
    const good = Buffer.from(await (await fetch(server.url + "shakespeare.safetensors")).arrayBuffer());
    const hugeHeader = Buffer.alloc(16);
    hugeHeader.writeBigUInt64LE(1n << 40n);
    const header = (obj) => {
      const json = Buffer.from(JSON.stringify(obj));
      const len = Buffer.alloc(8);
      len.writeBigUInt64LE(BigInt(json.length));
      return Buffer.concat([len, json]);
    };
    const wrongDtype = Buffer.concat([header({ tok_emb: { dtype: "I64", shape: [2], data_offsets: [0, 16] } }), Buffer.alloc(16)]);
    const overlapping = Buffer.concat([
      header({ a: { dtype: "F32", shape: [4], data_offsets: [0, 16] }, b: { dtype: "F32", shape: [4], data_offsets: [8, 24] } }),
      Buffer.alloc(24),
    ]);
    for (const [name, bytes] of [
      ["truncated.safetensors", good.subarray(0, good.length >> 1)],
      ["huge-header.safetensors", hugeHeader],
      ["wrong-dtype.safetensors", wrongDtype],
      ["overlapping.safetensors", overlapping],
    ]) {
      const path = join(dir, name);
      await writeFile(path, bytes);
      await page.getByTestId("load-checkpoint").setInputFiles(path);
      await expectError(new RegExp(`loading ${name.replace(".", "\\.")} \\(your current model is unchanged\\)`));
    }
    assert.deepEqual(
      unexpectedErrors(logs, [/corpus/, /vocabulary|unknown character/i, /loading .*safetensors/, /hyper-parameters|learning rate|steps|warm/i]),
      [],
    );
  });
});

test("tab hidden: training pauses when asked and resumes when shown; elapsed time excludes the pause", async () => {
  await withBrowser(async (browser) => {
    const { page, logs } = await openReady(browser, server.url);
    const setHidden = (hidden) =>
      page.evaluate((h) => {
        Object.defineProperty(document, "hidden", { configurable: true, get: () => h });
        Object.defineProperty(document, "visibilityState", { configurable: true, get: () => (h ? "hidden" : "visible") });
        document.dispatchEvent(new Event("visibilitychange"));
      }, hidden);
    // Autosave 0: only the restore point at the run's start (step 0).
    await startRun(page, { autosave: 0 });
    // Default: hidden tabs keep training.
    await setHidden(true);
    await page.waitForTimeout(800);
    assert.equal(await page.getByTestId("run-state").getAttribute("data-state"), "running");
    await setHidden(false);

    await page.getByTestId("pause-hidden").check();
    await setHidden(true);
    await waitForRunState(page, "paused");
    const before = await testid(page, "progress-elapsed");
    const wall0 = Date.now();
    await page.waitForTimeout(3000);
    await setHidden(false);
    await waitForRunState(page, "running");
    const step = await numAttr(page, "progress", "data-step");
    await page.waitForFunction((s) => Number(document.querySelector('[data-testid="progress"]').getAttribute("data-step")) > s, step, {
      timeout: patience(30_000),
    });
    const after = await testid(page, "progress-elapsed");
    const wall = (Date.now() - wall0) / 1000;
    const secs = (t) => t.split(":").reduce((a, x) => a * 60 + Number(x), 0);
    const grew = secs(after) - secs(before);
    // Elapsed counts training time only: the 3 s hidden pause is not in it
    // (±1 s of rounding on each read).
    assert.ok(grew <= wall - 3 + 2, `elapsed grew ${grew} s in ${wall.toFixed(1)} s of wall time including a 3 s hidden pause`);
    await page.getByTestId("stop").click();
    await waitForRunState(page, "stopped");
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});
