// The playground in a real browser (WebGPU on SwiftShader): training, the
// live chart, sampling, run control, and errors that are shown and leave the
// current model alone. Steps train one or two sequences of 128 characters
// (SwiftShader runs ~250 tokens/s), so each test stays under about a minute.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  serve,
  launch,
  openReady,
  testid,
  numAttr,
  waitForAttr,
  waitForRunState,
  fillFields,
  trainQuick,
  unexpectedErrors,
  patience,
  scratchDir,
} from "../lib.mjs";

let server;
before(async () => {
  server = await serve();
});
after(async () => {
  await server?.close();
});

/** Runs `body(page, logs)` on a freshly opened app in its own browser. */
async function withApp(body) {
  const browser = await launch({ webgpu: true });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await body(page, logs);
  } finally {
    await browser.close();
  }
}

/** A snapshot of what must survive a refused request. */
async function modelAndChart(page) {
  return {
    model: await testid(page, "model-info"),
    train: await numAttr(page, "loss-chart", "data-train-points"),
    val: await numAttr(page, "loss-chart", "data-val-points"),
    step: await testid(page, "progress-step"),
    state: await page.getByTestId("run-state").getAttribute("data-state"),
  };
}

test("the preset picker fills the hyper-parameters and sizes the model", async () => {
  await withApp(async (page, logs) => {
    await page.getByTestId("preset").selectOption("tiny");
    // tiny is 4L/4H/128C, T=64, B=32; with the bundled corpus's 83 characters:
    // 83·128 + 64·128 + 4·(12·128² + 13·128) + 2·128 = 812,160.
    const estimate = page.getByTestId("preset-estimate");
    await waitForAttr(page, "preset-estimate", "data-params", "812160");
    assert.match(await estimate.innerText(), /812,160 parameters .*≈ [\d.]+ MiB to train at B=32, T=64/);
    assert.equal(await page.getByTestId("hp-batch").inputValue(), "32");
    assert.equal(await page.getByTestId("hp-steps").inputValue(), "2000");
    // Memory follows the batch size typed in.
    const before = await numAttr(page, "preset-estimate", "data-memory-bytes");
    await fillFields(page, { "hp-batch": 64 });
    await page.waitForFunction(
      (b) => Number(document.querySelector('[data-testid="preset-estimate"]').getAttribute("data-memory-bytes")) > b,
      before,
    );
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("training nano for 30 steps lowers the loss and fills the chart", async () => {
  await withApp(async (page, logs) => {
    // Before any run the estimate uses the bundled corpus's 83 characters.
    const estimate = page.getByTestId("preset-estimate");
    assert.equal(await estimate.getAttribute("data-params"), "66768");
    assert.match(await estimate.innerText(), /≈ .*iB/);
    const t0 = Date.now();
    await trainQuick(page, { steps: 30, batch: 2, evalInterval: 10, warmup: 3, lr: "3e-3", timeout: patience(90_000) });
    console.log(`  trained 30 steps in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    assert.match(await testid(page, "progress-step"), /step 30 \/ 30/);
    const chart = page.getByTestId("loss-chart");
    assert.ok((await numAttr(page, "loss-chart", "data-train-points")) >= 2, "at least two train points");
    assert.ok((await numAttr(page, "loss-chart", "data-val-points")) >= 1, "at least one validation point");
    const first = Number(await chart.getAttribute("data-first-train-loss"));
    const last = Number(await chart.getAttribute("data-last-train-loss"));
    assert.ok(first > last, `train loss fell: first ${first}, last ${last}`);
    assert.match(await testid(page, "progress-val-loss"), /^\d+\.\d{4}$/);
    assert.match(await testid(page, "progress-tokens-per-s"), /tok\/s/);
    assert.match(await testid(page, "progress-eta"), /^\d+:\d\d:\d\d$/);
    // The chart has readable axes: tick labels on both.
    assert.ok((await chart.locator("text.tick-label").count()) >= 4);
    const info = await testid(page, "model-info");
    assert.match(info, /params/);
    assert.match(info, /step 30/);
    assert.match(info, /backend: (webgpu|CPU)/);
    assert.equal(await page.getByTestId("busy").getAttribute("data-busy"), "false");
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("sampling after training streams text with its stats", async () => {
  await withApp(async (page, logs) => {
    await trainQuick(page, { steps: 10, evalInterval: 10 });
    await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 60, "sample-temperature": "0.8", "sample-seed": 7 });
    await page.getByTestId("generate").click();
    await page.waitForFunction(
      () => /tok\/s/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""),
      null,
      { timeout: patience(60_000) },
    );
    await page.waitForFunction(
      () => (document.querySelector('[data-testid="sample-output"]')?.textContent ?? "").length >= 20,
      null,
      { timeout: patience(60_000) },
    );
    await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
      timeout: patience(60_000),
    });
    const out = await page.getByTestId("sample-output").textContent();
    assert.equal([...out].length, 60, `60 characters generated, got ${JSON.stringify(out)}`);
    assert.match(await testid(page, "sample-stats"), /60 tokens · [\d.]+ (k )?tok\/s · first token after \d+ ms/);
    await waitForAttr(page, "busy", "data-busy", "false");
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("several samples decode side by side, sample i is seed + i's text, bad counts are refused", async () => {
  await withApp(async (page, logs) => {
    await trainQuick(page, { steps: 10, evalInterval: 10 });
    const box = (i) => page.locator(`[data-testid="sample-output"][data-sample="${i}"]`);
    const generate = async (fields) => {
      await fillFields(page, { "sample-prompt": "ROMEO:", "sample-length": 40, "sample-temperature": "1", ...fields });
      await page.getByTestId("generate").click();
      await page.waitForFunction(() => /done/.test(document.querySelector('[data-testid="sample-stats"]')?.innerText ?? ""), null, {
        timeout: patience(60_000),
      });
    };
    await generate({ "sample-seed": 7, "sample-count": 3 });
    assert.equal(await page.getByTestId("sample-boxes").getAttribute("data-samples"), "3");
    const texts = [];
    for (const i of [0, 1, 2]) {
      texts.push(await box(i).textContent());
      assert.equal([...texts[i]].length, 40, `sample ${i}: ${JSON.stringify(texts[i])}`);
    }
    assert.equal(new Set(texts).size, 3, `three different continuations: ${JSON.stringify(texts)}`);
    const caption = (i) => page.locator(`[data-testid="sample-caption"][data-sample="${i}"]`);
    assert.equal(await caption(1).innerText(), "sample 2 · seed 8", "each box names its seed");
    assert.match(await testid(page, "sample-stats"), /^120 tokens \(3 samples\) · [\d.]+ (k )?tok\/s · /);
    // Side by side: the boxes share a row.
    const [a, b] = [await box(0).boundingBox(), await box(1).boundingBox()];
    assert.ok(b.x > a.x + a.width - 1 && Math.abs(b.y - a.y) < 2, `side by side: ${JSON.stringify([a, b])}`);
    // The second sample is seed 8's text alone.
    await generate({ "sample-seed": 8, "sample-count": 1 });
    assert.equal(await page.getByTestId("sample-boxes").getAttribute("data-samples"), "1");
    assert.equal(await box(0).textContent(), texts[1], "sample 2 of seed 7 = seed 8 alone");
    assert.equal(await caption(0).isHidden(), true, "one sample needs no caption");
    const kept = await box(0).textContent();
    for (const [fields, why] of [
      [{ "sample-count": "9" }, /samples must be in 1..=8 \(got 9\)/],
      [{ "sample-count": "2", "sample-temperature": "0" }, /temperature 0 \(greedy\) gives all 2 samples the same text/],
    ]) {
      await fillFields(page, fields);
      await page.getByTestId("generate").click();
      assert.match(await testid(page, "sample-validation"), why);
      assert.equal(await box(0).textContent(), kept, "the text shown stays");
    }
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("pause, resume and stop change the run state and the step count", async () => {
  await withApp(async (page, logs) => {
    await fillFields(page, { "hp-steps": 5000, "hp-batch": 1, "hp-warmup": 10, "hp-eval-interval": 0 });
    await page.getByTestId("train").click();
    await waitForRunState(page, "running");
    await waitForAttr(page, "busy", "data-busy", "true");
    await waitForAttr(page, "progress", "data-step", /^[1-9]\d*$/);
    assert.equal(await page.getByTestId("train").isDisabled(), true, "Train is disabled during a run");

    await page.getByTestId("pause").click();
    await waitForRunState(page, "paused");
    assert.equal(await page.getByTestId("pause").isDisabled(), true);
    assert.equal(await page.getByTestId("resume").isEnabled(), true);
    await page.waitForTimeout(300); // a chunk in flight may still report
    const pausedAt = await numAttr(page, "progress", "data-step");
    await page.waitForTimeout(1000);
    assert.equal(await numAttr(page, "progress", "data-step"), pausedAt, "no steps while paused");

    await page.getByTestId("resume").click();
    await waitForRunState(page, "running");
    await page.waitForFunction(
      (at) => Number(document.querySelector('[data-testid="progress"]').getAttribute("data-step")) > at,
      pausedAt,
      { timeout: patience(30_000) },
    );

    await page.getByTestId("stop").click();
    await waitForRunState(page, "stopped");
    await waitForAttr(page, "busy", "data-busy", "false");
    assert.equal(await page.getByTestId("train").isEnabled(), true, "Train is enabled again");
    assert.equal(await page.getByTestId("continue").isEnabled(), true, "the stopped model can continue");
    assert.ok((await numAttr(page, "progress", "data-step")) < 5000);
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("the tab title follows the run and says when it finished", async () => {
  await withApp(async (page, logs) => {
    assert.equal(await page.title(), "TinyGPT-rs — train and sample a small GPT in your browser");
    await trainQuick(page, { steps: 8, evalInterval: 4 });
    await page.waitForFunction(() => document.title === "✓ finished · TinyGPT-rs", null, { timeout: patience(10_000) });
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("continue appends steps to the same model and chart", async () => {
  await withApp(async (page, logs) => {
    await trainQuick(page, { steps: 10, evalInterval: 5 });
    const before = await numAttr(page, "loss-chart", "data-train-points");
    const first = await page.getByTestId("loss-chart").getAttribute("data-first-train-loss");
    await fillFields(page, { "continue-steps": 10 });
    await page.getByTestId("continue").click();
    await waitForRunState(page, "running");
    await waitForRunState(page, "finished");
    assert.match(await testid(page, "progress-step"), /step 20 \/ 20/);
    assert.ok((await numAttr(page, "loss-chart", "data-train-points")) > before, "points were appended");
    assert.equal(await page.getByTestId("loss-chart").getAttribute("data-first-train-loss"), first, "the chart kept its start");
    assert.match(await testid(page, "model-info"), /step 20/);
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("an uploaded corpus that is too short is refused and the model and chart stay", async () => {
  await withApp(async (page, logs) => {
    await trainQuick(page, { steps: 10, evalInterval: 5 });
    const kept = await modelAndChart(page);
    await page.getByTestId("corpus-file").setInputFiles({ name: "abc.txt", mimeType: "text/plain", buffer: Buffer.from("abc") });
    await waitForAttr(page, "corpus-file-status", "data-loaded", "true");
    assert.match(await testid(page, "corpus-file-status"), /abc\.txt · 3 B/);
    assert.equal(await page.getByTestId("corpus-upload").isChecked(), true, "choosing a file selects it");
    await page.getByTestId("train").click();
    await page.getByTestId("error").waitFor({ timeout: patience(30_000) });
    const banner = await testid(page, "error");
    assert.match(banner, /abc\.txt/, "names the file");
    assert.match(banner, /fewer than one context window/, "says what is wrong");
    assert.match(banner, /longer corpus/, "says what to do");
    assert.deepEqual(await modelAndChart(page), kept);
    await page.getByTestId("error-dismiss").click();
    assert.equal(await page.getByTestId("error").count(), 0, "the banner is dismissable");
    const provoked = /reading the corpus abc\.txt/;
    assert.ok(logs.some((l) => l.type === "error" && provoked.test(l.text)), "the worker logged the refusal");
    assert.deepEqual(unexpectedErrors(logs, [provoked]), []);
  });
});

test("a negative learning rate is refused by the worker with the field named", async () => {
  await withApp(async (page, logs) => {
    await fillFields(page, { "hp-steps": 10, "hp-batch": 1, "hp-warmup": 2, "hp-lr": "-1" });
    await page.getByTestId("train").click();
    await page.getByTestId("error").waitFor({ timeout: patience(30_000) });
    const banner = await testid(page, "error");
    assert.match(banner, /hyper-parameters/);
    assert.match(banner, /\blr\b.*-1/);
    assert.equal(await page.getByTestId("run-state").getAttribute("data-state"), "idle");
    assert.match(await testid(page, "model-info"), /No model yet/);
    const provoked = /checking the hyper-parameters: lr/;
    assert.deepEqual(unexpectedErrors(logs, [provoked]), []);
  });
});

test("a batch size that is not a number is caught in the form before sending", async () => {
  await withApp(async (page, logs) => {
    await fillFields(page, { "hp-batch": "four" });
    await page.getByTestId("train").click();
    const problem = page.getByTestId("train-validation");
    await problem.waitFor({ state: "visible" });
    assert.match(await problem.innerText(), /Batch size: “four” is not a whole number/);
    await page.waitForTimeout(500);
    assert.equal(await page.getByTestId("run-state").getAttribute("data-state"), "idle");
    assert.equal(await page.getByTestId("error").count(), 0, "nothing reached the worker");
    await fillFields(page, { "hp-batch": "" });
    await page.getByTestId("train").click();
    assert.match(await problem.innerText(), /Batch size is empty/);
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

test("a checkpoint downloads and loads back into the playground", async () => {
  await withApp(async (page, logs) => {
    await trainQuick(page, { steps: 10, evalInterval: 5 });
    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("save-checkpoint").click()]);
    assert.match(download.suggestedFilename(), /^tinygpt-step10\.safetensors$/);
    const dir = scratchDir("tinygpt-e2e-");
    const path = join(dir, download.suggestedFilename());
    await download.saveAs(path);
    await page.getByTestId("load-checkpoint").setInputFiles(path);
    await page.waitForFunction(() => /loaded/i.test(document.querySelector('[data-testid="checkpoint-note"]')?.innerText ?? ""), null, {
      timeout: patience(30_000),
    });
    await page.waitForFunction(() => /tinygpt-step10/.test(document.querySelector('[data-testid="model-info"]')?.innerText ?? ""), null, {
      timeout: patience(30_000),
    });
    assert.match(await testid(page, "model-info"), /step 10/);
    assert.equal(await numAttr(page, "loss-chart", "data-train-points"), 0, "a loaded model starts a fresh chart");
    assert.deepEqual(unexpectedErrors(logs), []);
  });
});

// A bad checkpoint is refused and the current model stays.
test("a corrupt checkpoint is refused and the current model stays", async () => {
  await withApp(async (page, logs) => {
    await trainQuick(page, { steps: 10, evalInterval: 5 });
    const kept = await modelAndChart(page);
    const dir = scratchDir("tinygpt-e2e-");
    const path = join(dir, "broken.safetensors");
    await writeFile(path, Buffer.from("this is not a safetensors file"));
    await page.getByTestId("load-checkpoint").setInputFiles(path);
    await page.getByTestId("error").waitFor({ timeout: patience(30_000) });
    assert.match(await testid(page, "error"), /broken\.safetensors.*unchanged/);
    assert.deepEqual(await modelAndChart(page), kept);
    const provoked = /loading broken\.safetensors/;
    assert.deepEqual(unexpectedErrors(logs, [provoked]), []);
  });
});

test("without WebGPU the model trains on the CPU and the page says so", async () => {
  const browser = await launch({ webgpu: false });
  try {
    const { page, logs } = await openReady(browser, server.url);
    await trainQuick(page, { steps: 5, evalInterval: 5 });
    await waitForAttr(page, "model-info", "data-backend", "cpu");
    assert.match(await testid(page, "model-info"), /backend: CPU \(no WebGPU in this browser\)/);
    assert.match(await testid(page, "progress-step"), /step 5 \/ 5/);
    assert.deepEqual(unexpectedErrors(logs), []);
  } finally {
    await browser.close();
  }
});
