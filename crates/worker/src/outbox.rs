//! What the worker sends the page: typed messages, console lines, errors.

use tinygpt_protocol::{LogLevel, WorkerOutput};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::DedicatedWorkerGlobalScope;

pub fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

/// Posts one typed message to the UI.
pub fn post(msg: &WorkerOutput) {
    match serde_wasm_bindgen::to_value(msg) {
        Ok(v) => {
            if let Err(e) = scope().post_message(&v) {
                web_sys::console::error_2(&"[worker] postMessage failed".into(), &e);
            }
        }
        Err(e) => web_sys::console::error_1(&format!("[worker] cannot encode message: {e}").into()),
    }
}

/// Logs to the worker console (captured by the browser tests) and the UI.
pub fn log(level: LogLevel, text: String) {
    let js = JsValue::from_str(&text);
    match level {
        LogLevel::Info => web_sys::console::log_1(&js),
        LogLevel::Warn => web_sys::console::warn_1(&js),
        LogLevel::Error => web_sys::console::error_1(&js),
    }
    post(&WorkerOutput::Log { level, text });
}

/// Reports an error: one console line and one message for the page.
pub fn error(context: &str, e: impl std::fmt::Display) {
    let message = e.to_string();
    log(LogLevel::Error, format!("[worker] {context}: {message}"));
    post(&WorkerOutput::Error {
        context: context.into(),
        message,
    });
}
