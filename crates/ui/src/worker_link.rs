//! The UI's end of the worker: spawn it, send typed inputs, receive typed outputs.

use tinygpt_protocol::{WorkerInput, WorkerOutput};
use wasm_bindgen::prelude::*;
use web_sys::{ErrorEvent, MessageEvent, Worker};

/// Path of the classic-worker loader (`importScripts` + `wasm_bindgen`).
pub const WORKER_LOADER: &str = "./worker-loader.js";

/// A running worker and the handlers that keep it talking to the UI.
pub struct WorkerLink {
    worker: Worker,
    _on_message: Closure<dyn FnMut(MessageEvent)>,
    _on_error: Closure<dyn FnMut(ErrorEvent)>,
}

impl WorkerLink {
    /// Starts the worker; `on_output` gets every decoded message, `on_crash`
    /// a description when the worker dies or a message cannot be decoded.
    pub fn spawn(
        on_output: impl Fn(WorkerOutput) + 'static,
        on_crash: impl Fn(String) + 'static,
    ) -> Result<Self, String> {
        // The page's query (test-only switches such as `?fault=f16acc`)
        // travels to the worker, which reads it from its own location.
        let search = web_sys::window()
            .and_then(|w| w.location().search().ok())
            .unwrap_or_default();
        let worker = Worker::new(&format!("{WORKER_LOADER}{search}"))
            .map_err(|e| format!("cannot start the worker: {e:?}"))?;
        let on_crash = std::rc::Rc::new(on_crash);
        let crash = on_crash.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            match serde_wasm_bindgen::from_value::<WorkerOutput>(ev.data()) {
                Ok(msg) => on_output(msg),
                Err(e) => crash(format!("undecodable message from the worker: {e}")),
            }
        });
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |ev: ErrorEvent| {
            on_crash(format!(
                "the worker stopped: {} ({}:{})",
                ev.message(),
                ev.filename(),
                ev.lineno()
            ));
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(Self {
            worker,
            _on_message: on_message,
            _on_error: on_error,
        })
    }

    /// Stops the worker (after a crash: its wasm cannot be trusted again).
    pub fn terminate(&self) {
        self.worker.terminate();
    }

    /// Sends one typed message.
    pub fn send(&self, msg: &WorkerInput) -> Result<(), String> {
        let value = serde_wasm_bindgen::to_value(msg).map_err(|e| e.to_string())?;
        self.worker
            .post_message(&value)
            .map_err(|e| format!("{e:?}"))
    }
}
