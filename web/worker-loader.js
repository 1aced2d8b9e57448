// Classic-worker loader: Trunk builds the worker crate for `no-modules`, which
// defines a global `wasm_bindgen`; this script loads it and starts its main.
importScripts("./tinygpt-worker.js");
wasm_bindgen({ module_or_path: "./tinygpt-worker_bg.wasm" }).catch((e) => {
  console.error("[worker] failed to start the wasm module:", e);
  throw e;
});
