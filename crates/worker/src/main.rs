//! The dedicated Web Worker: owns the WebGPU device and, later, the model.
//! The UI talks to it only through `tinygpt_protocol` messages.

#[cfg(target_arch = "wasm32")]
mod error;
#[cfg(target_arch = "wasm32")]
mod js;
#[cfg(target_arch = "wasm32")]
mod opfs;
#[cfg(target_arch = "wasm32")]
mod outbox;
#[cfg(target_arch = "wasm32")]
mod precision_log;
#[cfg(target_arch = "wasm32")]
mod runner;
#[cfg(target_arch = "wasm32")]
mod saves;
#[cfg(target_arch = "wasm32")]
mod worker;

#[cfg(target_arch = "wasm32")]
fn main() {
    console_error_panic_hook::set_once();
    wasm_bindgen_futures::spawn_local(worker::run());
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("tinygpt-worker runs as a Web Worker (wasm32); use the `tinygpt` CLI natively.");
}
