//! The model the worker holds and its run: training and sampling requests,
//! served from the worker's event loop. Training runs in short chunks;
//! between chunks the loop yields to the JS event loop so Pause, Stop and
//! other messages are handled promptly. The run's policy (chunk sizes,
//! evaluation and autosave points, history, ETA) is the engine's
//! (`tinygpt_gpu::engine::run`); this folder adds the browser: messages,
//! private storage, the clock.

mod gallery;
mod gate;
mod live;
mod precision;
mod sample;
mod saved_runs;
mod train;

use crate::js;
use crate::outbox::post;
use crate::saves::{CorpusRef, Manifest};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tinygpt_gpu::engine::live::LiveEvery;
use tinygpt_gpu::engine::run::Run;
use tinygpt_gpu::engine::{Gpu, Session, StepsInFlight};
use tinygpt_protocol::{
    GateReport, GpuCaps, ModelInfo, RunState, WorkerOutput, DEFAULT_AUTOSAVE_STEPS,
};

/// The model the worker holds and where its run is.
pub struct Runner {
    pub session: Option<Session>,
    pub state: RunState,
    /// The run's policy and history (`tinygpt_gpu::engine::run`).
    plan: Run,
    /// GPU steps submitted and not yet read back.
    in_flight: Option<StepsInFlight>,
    /// Set by the message handler when a Stop-sampling request arrives.
    pub stop_sampling: Rc<Cell<bool>>,
    /// What the worker reported at start-up, updated by later gates.
    pub caps: GpuCaps,
    /// The start-up gate reports, extended by the loaded-model gates.
    pub gate_reports: Vec<GateReport>,
    /// The WebGPU device, when there is one.
    pub gpu: Option<Rc<Gpu>>,
    /// Why there is no WebGPU (the CPU path is used instead).
    pub gpu_reason: Option<String>,
    /// The saved run the model autosaves into, once it trains.
    run: Option<RunMeta>,
    /// Autosave interval in steps (0: only on pause, stop and the end).
    pub autosave_every: usize,
    /// How often to show a live sample while training.
    pub live_every: LiveEvery,
    /// Test-only faults are honoured (`?test_hooks=1`).
    pub test_hooks: bool,
    /// Test hook: crash halfway through the next autosave.
    pub crash_next_save: bool,
    /// Test hook (fault-injection builds): corrupt the next localisation's
    /// fast path in one layer.
    pub corrupt_localization: bool,
    /// Raised while a lost device is being replaced: errors that follow
    /// are the loss's, and the recovery explains them.
    pub device_lost: Arc<AtomicBool>,
    /// Bring-ups of the GPU so far (a lost device's late callback is told
    /// apart from the current device's).
    pub gpu_generation: u32,
    /// The last checkpoint loaded from a file or the bundle, to reload
    /// after a device loss when it has no saved run.
    pub last_loaded: Option<(String, Vec<u8>)>,
}

/// The saved run the current model belongs to.
struct RunMeta {
    id: String,
    name: String,
    created_ms: f64,
    corpus: CorpusRef,
    /// An uploaded corpus not yet copied into the run's directory.
    corpus_bytes: Option<Vec<u8>>,
    /// The manifest of the last completed save.
    saved: Option<Manifest>,
}

fn set_state(runner: &mut Runner, state: RunState) {
    runner.state = state;
    post(&WorkerOutput::RunState { state });
}

impl Runner {
    pub fn new(
        gpu: Option<Rc<Gpu>>,
        caps: GpuCaps,
        gate_reports: Vec<GateReport>,
        stop_sampling: Rc<Cell<bool>>,
    ) -> Self {
        Self {
            gpu,
            session: None,
            state: RunState::Idle,
            plan: Run::default(),
            in_flight: None,
            stop_sampling,
            gpu_reason: caps.unavailable_reason.clone(),
            caps,
            gate_reports,
            run: None,
            autosave_every: DEFAULT_AUTOSAVE_STEPS,
            live_every: LiveEvery::Auto,
            test_hooks: false,
            crash_next_save: false,
            corrupt_localization: false,
            device_lost: Arc::new(AtomicBool::new(false)),
            gpu_generation: 0,
            last_loaded: None,
        }
    }

    pub fn running(&self) -> bool {
        self.state == RunState::Running
    }

    /// The run's loss history, for the chart.
    fn post_history(&self) {
        post(&WorkerOutput::History {
            train: self.plan.history_train.clone(),
            val: self.plan.history_val.clone(),
        });
    }

    fn post_model_info(&self) {
        if let Some(s) = &self.session {
            post(&WorkerOutput::ModelInfo(ModelInfo {
                config: s.config,
                params: s.config.num_params(),
                source: s.source.clone(),
                step: s.step,
                backend: s.backend_name().into(),
                memory_bytes: s.memory_bytes(),
                run_id: self.run.as_ref().map(|r| r.id.clone()),
                target_step: self.plan.target_step,
            }));
        }
    }
}

/// Device loss: drop everything on the old device, take the new one.
impl Runner {
    /// The saved run of the current model, when it has a completed save.
    pub fn saved_run_id(&self) -> Option<String> {
        self.run
            .as_ref()
            .filter(|r| r.saved.is_some())
            .map(|r| r.id.clone())
    }

    /// Forgets the model and the steps in flight (their device is gone).
    pub async fn drop_model(&mut self) {
        self.in_flight = None;
        self.session = None;
        self.plan.pause(js::now_ms());
        if self.state != RunState::Idle {
            set_state(self, RunState::Idle);
        }
    }

    /// Uses a newly brought-up device (or none, with the reason).
    pub fn set_gpu(&mut self, gpu: Option<Rc<Gpu>>, caps: GpuCaps, reports: Vec<GateReport>) {
        self.gpu = gpu;
        self.gpu_reason = caps.unavailable_reason.clone();
        self.caps = caps;
        self.gate_reports = reports;
    }
}
