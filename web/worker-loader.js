// Classic-worker loader: Trunk builds the worker crate for `no-modules`, which
// defines a global `wasm_bindgen`; this script loads it and starts its main.
//
// A panic in the worker's async code surfaces as a rejected promise; re-throw
// it from a task so it becomes an uncaught error, which the page sees on the
// Worker's `error` event and answers by restarting the worker from the last
// autosave.
self.addEventListener("unhandledrejection", (event) => {
  setTimeout(() => {
    throw event.reason;
  });
});
importScripts("./tinygpt-worker.js");
wasm_bindgen({ module_or_path: "./tinygpt-worker_bg.wasm" }).catch((e) => {
  console.error("[worker] failed to start the wasm module:", e);
  throw e;
});
