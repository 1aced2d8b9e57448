// Compiles every pipeline the engine can create in this Chromium's WebGPU
// (Tint, on SwiftShader): `node compile.mjs kernels.jsonl`, the file that
// `TINYGPT_DUMP_WGSL=kernels.jsonl cargo test -p tinygpt-gpu --test shaders
// dump` writes. naga validates them in CI (`tests/shaders.rs`), but the
// browser compiles with Tint, whose uniformity analysis and limits are its
// own; a pipeline that needs what this adapter lacks (shader-f16,
// subgroups, cooperative matrices, more invocations, workgroup memory or
// storage buffers than it offers) is listed as not compiled, with why.
// Exits 1 when any other pipeline fails.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { launch } from "./lib.mjs";

const kernels = readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const browser = await launch();
// WebGPU needs a secure context: an empty page from localhost.
const server = createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html>"));
await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${server.address().port}/`);
const results = await page.evaluate(async (kernels) => {
  const adapter = await navigator.gpu.requestAdapter();
  const device = await adapter.requestDevice({ requiredLimits: { ...Object.fromEntries(
    ["maxStorageBuffersPerShaderStage", "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup",
     "maxStorageBufferBindingSize", "maxBufferSize"].map((k) => [k, adapter.limits[k]])) } });
  const out = [];
  for (const k of kernels) {
    const needs = k.wgsl.includes("enable f16;") ? "shader-f16"
      : k.wgsl.includes("wgpu_cooperative_matrix") ? "cooperative matrices"
      : k.wgsl.includes("subgroupShuffle") ? "subgroups (native only in wgpu 30)"
      : k.invocations > adapter.limits.maxComputeInvocationsPerWorkgroup ? `${k.invocations} invocations`
      : k.workgroup_bytes > adapter.limits.maxComputeWorkgroupStorageSize ? `${k.workgroup_bytes} bytes of workgroup memory`
      : k.storage_buffers > adapter.limits.maxStorageBuffersPerShaderStage ? `${k.storage_buffers} storage buffers` : null;
    if (needs) { out.push({ key: k.key, skipped: needs }); continue; }
    device.pushErrorScope("validation");
    const module = device.createShaderModule({ code: k.wgsl });
    const info = await module.getCompilationInfo();
    const errors = info.messages.filter((m) => m.type === "error").map((m) => `${m.lineNum}:${m.linePos} ${m.message}`);
    try {
      await device.createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: k.entry, constants: k.constants } });
    } catch (e) { errors.push(String(e.message ?? e)); }
    const scope = await device.popErrorScope();
    if (scope) errors.push(scope.message);
    out.push({ key: k.key, errors, storage: adapter.limits.maxStorageBuffersPerShaderStage });
  }
  return out;
}, kernels);
await browser.close();
server.close();
let failed = 0;
for (const r of results) {
  if (r.skipped) console.log(`${r.key}: not compiled here (needs ${r.skipped})`);
  else if (r.errors.length) { failed++; console.log(`${r.key}: FAILED\n  ${r.errors.join("\n  ").slice(0, 2000)}`); }
}
const compiled = results.filter((r) => !r.skipped).length;
console.log(`${compiled - failed} of ${compiled} pipelines compiled (adapter: ${results.find((r) => r.storage)?.storage} storage buffers a stage); ${results.length - compiled} not compiled here`);
// An empty dump, or an adapter that compiled nothing, is a failure too.
process.exit(failed || !compiled ? 1 : 0);
