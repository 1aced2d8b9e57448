//! The worker's event loop: detect, check, report, then serve requests.

use crate::js;
use crate::outbox::{log, post, scope};
use crate::runner::Runner;
use futures_channel::mpsc;
use futures_util::StreamExt;
use std::cell::Cell;
use std::rc::Rc;
use tinygpt_gpu::engine::live::LiveEvery;
use tinygpt_gpu::engine::Gpu;
use tinygpt_gpu::gate::{status_suffix, Fault, GateOptions, BUNDLED_SHAPE, DEFAULT_VOCAB};
use tinygpt_gpu::{GpuContext, PipelineRegistry};
use tinygpt_protocol::{GateReport, GpuCaps, LogLevel, TestHook, WorkerInput, WorkerOutput};
use wasm_bindgen::prelude::*;
use web_sys::MessageEvent;

/// The GPU the worker owns, once it is up.
type Engine = Rc<Gpu>;

/// Detects the GPU, runs the start-up kernel check and builds `gpu_caps`.
async fn start_gpu() -> (GpuCaps, Option<Engine>) {
    let mut caps = GpuCaps::default();
    if let Some(context) = js::webnn_context().await {
        caps.features.webnn_api = true;
        caps.features.webnn = context.is_ok();
        caps.features.webnn_problem = context.err();
    }
    if !js::has_webgpu() {
        caps.unavailable_reason = Some(
            "WebGPU is not available in this browser's workers (navigator.gpu is missing). \
             Use Chrome or Edge 113+ on a supported GPU, or enable chrome://flags/#enable-unsafe-webgpu."
                .into(),
        );
        return (caps, None);
    }
    let cpu_device = match js::adapter_info().await {
        Ok(Some(js)) => {
            caps.adapter = js.desc;
            caps.features.subgroups = js.subgroups;
            js.cpu_device
        }
        Ok(None) => {
            caps.unavailable_reason = Some(
                "WebGPU is present but no GPU adapter was granted (blocklisted GPU or driver). \
                 Update the GPU driver, or try chrome://flags/#enable-unsafe-webgpu."
                    .into(),
            );
            return (caps, None);
        }
        Err(e) => {
            caps.unavailable_reason = Some(format!("requesting a WebGPU adapter failed: {e:?}"));
            return (caps, None);
        }
    };
    let mut ctx = match GpuContext::new().await {
        Ok(ctx) => ctx,
        Err(e) => {
            caps.unavailable_reason = Some(e.to_string());
            return (caps, None);
        }
    };
    caps.webgpu = true;
    if cpu_device {
        ctx.cpu_device = true;
        log(
            LogLevel::Info,
            "[ops] a CPU implementation of WebGPU: kernels run one invocation per output block, row or column, with no workgroup memory and no barriers (training: the Cpu kernel layout; decoding: LayerNorms on their own, one GEMV column and one attention head per invocation)".into(),
        );
    }
    let wgpu_features = ctx.detected_features();
    caps.features.shader_f16 = wgpu_features.shader_f16;
    caps.features.timestamp_query = wgpu_features.timestamp_query;
    caps.limits = ctx.gpu_limits();
    let mut registry = PipelineRegistry::default();
    match tinygpt_gpu::smoke::kernel_check(&ctx, &mut registry, js::now_ms).await {
        Ok(check) => {
            log(
                if check.passed {
                    LogLevel::Info
                } else {
                    LogLevel::Error
                },
                format!(
                    "[ops] kernel check {} {:?}: max_abs={:.3e} (limit {:.1e}) in {:.1} ms — {}",
                    check.kernel,
                    check.shape,
                    check.max_abs_err,
                    check.tolerance,
                    check.millis,
                    if check.passed { "PASS" } else { "FAIL" }
                ),
            );
            caps.kernel_check = Some(check);
        }
        Err(e) => log(
            LogLevel::Error,
            format!("[ops] kernel check could not run: {e}"),
        ),
    }
    let gpu = Gpu::new(ctx);
    *gpu.registry.borrow_mut() = registry;
    (caps, Some(gpu))
}

fn status_line(caps: &GpuCaps) -> String {
    match (&caps.unavailable_reason, &caps.kernel_check) {
        (Some(reason), _) => format!("No WebGPU — {reason}"),
        (None, Some(c)) if c.passed => format!(
            "WebGPU ready · kernel check passed in {:.0} ms — ready.",
            c.millis
        ),
        (None, Some(_)) => {
            "WebGPU is up but the kernel check FAILED — results would be wrong; see the console."
                .into()
        }
        (None, None) => "WebGPU is up but the kernel check could not run; see the console.".into(),
    }
}

/// Runs every fast path's gate on the worker's device, logs its console
/// lines, posts each report, and activates what passed. Returns the reports.
async fn run_gates(gpu: &Gpu, caps: &mut GpuCaps) -> Vec<GateReport> {
    if js::query_param("fast_paths").as_deref() == Some("off") {
        log(
            LogLevel::Warn,
            "[ops] fast paths disabled by ?fast_paths=off: every kernel runs on the f32 path"
                .into(),
        );
        return Vec::new();
    }
    let fault = js::fault_switch().and_then(|name| {
        if !Fault::AVAILABLE {
            log(
                LogLevel::Info,
                format!("[ops] ?fault={name} is unavailable in this build: production builds contain no fault pipeline"),
            );
            return None;
        }
        let f = Fault::parse(&name);
        if f.is_none() {
            log(
                LogLevel::Warn,
                format!("[ops] unknown fault switch {name:?} ignored"),
            );
        }
        f
    });
    if let Some(f) = fault {
        log(
            LogLevel::Warn,
            format!(
                "[ops] test switch: injecting the {} fault into the fast-path gates",
                f.name()
            ),
        );
    }
    let measure_speed = speed_gate_switch();
    let opts = GateOptions {
        fault,
        vocab: DEFAULT_VOCAB,
        now_ms: js::now_ms,
        measure_speed,
        speed_shape: BUNDLED_SHAPE,
    };
    // Moved out for the awaits (a RefCell guard must not cross one).
    let mut reg = std::mem::take(&mut *gpu.registry.borrow_mut());
    let (reports, active) = tinygpt_gpu::gate::run_gates(&gpu.ctx, &mut reg, opts).await;
    *gpu.registry.borrow_mut() = reg;
    gpu.fast_paths.set(active);
    for r in &reports {
        for (i, line) in r.lines.iter().enumerate() {
            let level = if i == 0 && !r.passed && r.detected {
                LogLevel::Warn
            } else {
                LogLevel::Info
            };
            log(level, line.clone());
        }
        post(&WorkerOutput::GateReport(Box::new(r.clone())));
    }
    caps.active = active.pills();
    crate::precision_log::keep(&reports, &caps.adapter, "start-up").await;
    reports
}

/// `?speed_gate=off` lets precision alone decide (tests that need a path on
/// whatever its speed here); anything but `on`/`off` is refused with a warning.
fn speed_gate_switch() -> bool {
    match js::query_param("speed_gate").as_deref() {
        None | Some("on") => true,
        Some("off") => {
            log(
                LogLevel::Warn,
                "[ops] speed gate off by ?speed_gate=off: a fast path that passes on precision activates whatever its speed here".into(),
            );
            false
        }
        Some(other) => {
            log(
                LogLevel::Warn,
                format!(
                    "[ops] unknown ?speed_gate={other:?} ignored (on or off): the speed gate runs"
                ),
            );
            true
        }
    }
}

/// What the worker loop reacts to: the UI's requests and the device's loss.
enum Event {
    Input(WorkerInput),
    /// The device of bring-up `generation` was lost.
    DeviceLost {
        generation: u32,
        why: String,
    },
}

/// Brings the GPU up (detection, kernel check, gates), reporting each step
/// to the UI; a later loss of the device arrives as [`Event::DeviceLost`].
async fn bring_up(
    events: &mpsc::UnboundedSender<Event>,
    generation: u32,
    t0: f64,
) -> (GpuCaps, Option<Engine>, Vec<GateReport>) {
    let (mut caps, engine) = start_gpu().await;
    post(&WorkerOutput::GpuCaps(caps.clone()));
    post(&WorkerOutput::Status {
        text: status_line(&caps),
    });
    let mut reports = Vec::new();
    if let Some(gpu) = &engine {
        let tx = events.clone();
        gpu.ctx
            .device
            .set_device_lost_callback(move |reason, message| {
                let _ = tx.unbounded_send(Event::DeviceLost {
                    generation,
                    why: format!("{reason:?}: {message}"),
                });
            });
        // Validation errors are bugs to report, not reasons to abort the
        // worker (wgpu's default handler panics).
        gpu.ctx
            .device
            .on_uncaptured_error(std::sync::Arc::new(|e: wgpu::Error| {
                web_sys::console::error_1(&format!("[gpu] uncaptured WebGPU error: {e}").into());
            }));
        // Fast paths: detected above, activated only by their gates.
        // Requests queue meanwhile.
        if caps.kernel_check.as_ref().is_some_and(|c| c.passed) {
            reports = run_gates(gpu, &mut caps).await;
            post(&WorkerOutput::GpuCaps(caps.clone()));
            post(&WorkerOutput::Status {
                text: format!(
                    "inference warmed up in {:.1}s{} — ready to generate.",
                    (js::now_ms() - t0) / 1e3,
                    status_suffix(&reports)
                ),
            });
        }
    }
    (caps, engine, reports)
}

/// Entry point of the worker.
pub async fn run() {
    let (tx, mut rx) = mpsc::unbounded::<Event>();
    // A Stop-sampling request must reach a generation in progress, which
    // holds the loop: the handler raises this flag as the message arrives.
    let stop_sampling = Rc::new(Cell::new(false));
    let stop_flag = stop_sampling.clone();
    let inputs = tx.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
        match serde_wasm_bindgen::from_value::<WorkerInput>(ev.data()) {
            Ok(msg) => {
                if msg == WorkerInput::StopSampling {
                    stop_flag.set(true);
                }
                let _ = inputs.unbounded_send(Event::Input(msg));
            }
            Err(e) => post(&WorkerOutput::Error {
                context: "decoding a message from the UI".into(),
                message: e.to_string(),
            }),
        }
    });
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    // The handler lives as long as the worker.
    on_message.forget();
    post(&WorkerOutput::Ready);

    let (caps, engine, reports) = bring_up(&tx, 0, js::now_ms()).await;
    let mut runner = Runner::new(engine, caps, reports, stop_sampling);
    runner.test_hooks = js::query_param("test_hooks").as_deref() == Some("1");
    // Best effort: `persist()` is a window API in some browsers (the page
    // asks too); the saved-runs list reports whether it was granted.
    let _ = crate::opfs::persist().await;
    runner.post_saved_runs().await;

    loop {
        // While training, take whatever is queued and otherwise train a
        // chunk; when idle, wait for the next message.
        let event = if runner.running() {
            js::yield_now().await;
            match rx.try_recv() {
                Ok(m) => Some(m),
                Err(mpsc::TryRecvError::Closed) => return,
                Err(mpsc::TryRecvError::Empty) => None,
            }
        } else {
            match rx.next().await {
                Some(m) => Some(m),
                None => return,
            }
        };
        match event {
            Some(Event::Input(msg)) => handle(&mut runner, msg).await,
            Some(Event::DeviceLost { generation, why }) => {
                recover_device(&mut runner, &tx, generation, why).await
            }
            None => runner.train_chunk().await,
        }
    }
}

/// After a device loss: a new device, the gates again, and the last saved
/// state of the model reloaded — no page reload.
async fn recover_device(
    runner: &mut Runner,
    events: &mpsc::UnboundedSender<Event>,
    generation: u32,
    why: String,
) {
    if generation != runner.gpu_generation {
        return; // an earlier device, already replaced
    }
    runner
        .device_lost
        .store(true, std::sync::atomic::Ordering::SeqCst);
    log(
        LogLevel::Warn,
        format!("[gpu] the GPU device was lost ({why}); recreating it"),
    );
    post(&WorkerOutput::Status {
        text: "The GPU device was lost — recreating it and reloading your last save…".into(),
    });
    let saved_run = runner.saved_run_id();
    let last_loaded = runner.last_loaded.clone();
    runner.drop_model().await;
    runner.gpu_generation += 1;
    let (caps, engine, reports) = bring_up(events, runner.gpu_generation, js::now_ms()).await;
    runner.set_gpu(engine, caps, reports);
    runner
        .device_lost
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let restored = match (saved_run, last_loaded) {
        (Some(id), _) => {
            runner.load_saved_run(&id).await;
            runner
                .session
                .as_ref()
                .map(|s| format!("your run from its last save at step {}", s.step))
        }
        (None, Some((name, bytes))) => {
            let _ = runner.load_checkpoint(name.clone(), &bytes).await;
            Some(name)
        }
        (None, None) => None,
    };
    let text = match restored {
        Some(what) => format!(
            "The GPU device was lost ({why}); recreated it, re-ran the gates and reloaded {what}."
        ),
        None => format!("The GPU device was lost ({why}); recreated it and re-ran the gates."),
    };
    log(LogLevel::Info, format!("[gpu] {text}"));
    post(&WorkerOutput::Status { text });
}

async fn handle(runner: &mut Runner, msg: WorkerInput) {
    match msg {
        WorkerInput::QueryCaps => post(&WorkerOutput::GpuCaps(runner.caps.clone())),
        WorkerInput::Train {
            model,
            train,
            corpus,
            name,
        } => runner.start(model, train, corpus, name).await,
        WorkerInput::Pause => runner.pause().await,
        WorkerInput::Resume => runner.resume(),
        WorkerInput::Stop => runner.stop().await,
        WorkerInput::Continue { steps } => runner.continue_for(steps).await,
        WorkerInput::Sample(req) => runner.sample(req).await,
        // The flag was raised on arrival; a generation in progress saw it.
        WorkerInput::StopSampling => {}
        WorkerInput::LoadCheckpoint { name, bytes } => {
            let _ = runner.load_checkpoint(name, &bytes).await;
        }
        WorkerInput::SaveCheckpoint => runner.save_checkpoint().await,
        WorkerInput::LoadBundledModel => runner.load_bundled().await,
        WorkerInput::ListGallery => runner.post_gallery().await,
        WorkerInput::LoadGalleryModel { id } => runner.load_gallery(&id).await,
        WorkerInput::SetAutosave { every_steps } => runner.autosave_every = every_steps,
        WorkerInput::LoadSavedRun { id } => runner.load_saved_run(&id).await,
        WorkerInput::DeleteSavedRun { id } => runner.delete_saved_run(&id).await,
        WorkerInput::ListSavedRuns => runner.post_saved_runs().await,
        WorkerInput::SetLiveSamples { every_steps } => {
            runner.live_every = LiveEvery::from_setting(every_steps)
        }
        WorkerInput::RunCurve { id } => runner.post_run_curve(&id).await,
        WorkerInput::Localize { prompt } => runner.localize(&prompt).await,
        WorkerInput::Inspect { text } => runner.inspect(&text).await,
        WorkerInput::ListPrecisionLog => runner.post_precision_log().await,
        WorkerInput::ClearPrecisionLog => runner.clear_precision_log().await,
        WorkerInput::TestHook { hook } => test_hook(runner, hook).await,
    }
}

/// Test-only faults, honoured only when the page was opened with
/// `?test_hooks=1` (the browser tests' switch).
async fn test_hook(runner: &mut Runner, hook: TestHook) {
    if !runner.test_hooks {
        return log(
            LogLevel::Warn,
            format!("[test] ignored the {hook:?} hook (open the page with ?test_hooks=1)"),
        );
    }
    log(LogLevel::Warn, format!("[test] hook {hook:?}"));
    match hook {
        TestHook::Panic => panic!("test hook: worker panic"),
        TestHook::DestroyDevice => match &runner.gpu {
            Some(gpu) => gpu.ctx.device.destroy(),
            None => log(LogLevel::Warn, "[test] no GPU device to destroy".into()),
        },
        TestHook::PoisonWeights => runner.poison_weights(),
        TestHook::CrashDuringSave => runner.crash_next_save = true,
        TestHook::ProfileStep => profile_step(runner).await,
        TestHook::CorruptLocalization if Fault::AVAILABLE => runner.corrupt_localization = true,
        TestHook::CorruptLocalization => log(
            LogLevel::Info,
            "[test] corrupt_localization is unavailable in this build: production builds contain no fault code".into(),
        ),
    }
}

/// Test hook: one training step with every dispatch timed, logged per
/// kernel (`npm --prefix web/e2e run profile`).
async fn profile_step(runner: &mut Runner) {
    let Some(s) = runner.session.as_mut() else {
        return log(LogLevel::Error, "[profile] there is no model".into());
    };
    match s.profile_step().await {
        Ok(times) => {
            let total: f64 = times.iter().map(|t| t.micros).sum();
            for k in tinygpt_gpu::profile::totals_by_key(&times) {
                let share = 100.0 * k.total_us / total.max(1e-9);
                let ms = k.total_us / 1e3;
                log(
                    LogLevel::Info,
                    format!(
                        "[profile] {} ×{}: {ms:.2} ms ({share:.1} %)",
                        k.key, k.calls
                    ),
                );
            }
            let (n, ms) = (times.len(), total / 1e3);
            let step = s.step;
            log(
                LogLevel::Info,
                format!("[profile] step {step}: {n} dispatches, {ms:.2} ms of GPU time"),
            );
        }
        Err(e) => log(
            LogLevel::Error,
            format!("[profile] the profile test hook failed: {e}"),
        ),
    }
}
