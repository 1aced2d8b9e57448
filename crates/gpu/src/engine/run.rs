//! A training run's policy, free of any platform so native tests reach it:
//! how many steps go out next, when a run evaluates, autosaves and ends, the
//! active-time clock, tokens/s and ETA, and the loss history. The worker
//! drives it from the JS event loop and the CLI from its own loop; both pass
//! the time in (milliseconds from any fixed origin).

use super::error::EngineError;
use super::live::LiveSamples;
use super::Session;
use tinygpt_core::ModelConfig;
use tinygpt_protocol::TrainProgress;

/// Largest model the CPU fallback trains (the `nano` preset and its kin).
pub const CPU_TRAIN_MAX_PARAMS: usize = 400_000;
/// Validation share of the corpus, the nanoGPT protocol.
pub const VAL_FRACTION: f64 = 0.1;
/// Steps between two checks of a fast path's weight cache while training
/// (`gate::freshness`).
pub const FRESHNESS_EVERY: usize = 100;
/// Most steps one "continue" may add.
pub const MAX_CONTINUE_STEPS: usize = 10_000_000;

/// Refuses a model the CPU fallback would train too slowly to be of use;
/// `reason` says why there is no GPU.
pub fn check_cpu_trainable(config: &ModelConfig, reason: &str) -> Result<(), String> {
    let params = config.num_params();
    if params > CPU_TRAIN_MAX_PARAMS {
        return Err(format!(
            "without WebGPU ({reason}) only models up to {CPU_TRAIN_MAX_PARAMS} parameters train on the CPU; this one has {params}. Pick the nano preset."
        ));
    }
    Ok(())
}

/// Refuses a "continue" by a step count out of range.
pub fn check_continue_steps(steps: usize) -> Result<(), String> {
    if steps == 0 || steps > MAX_CONTINUE_STEPS {
        return Err(format!(
            "steps must be in 1..={MAX_CONTINUE_STEPS} (got {steps})"
        ));
    }
    Ok(())
}

/// Most tokens one generation may ask for.
pub const MAX_SAMPLE_TOKENS: usize = 100_000;

/// Refuses a generation length out of range.
pub fn check_sample_tokens(tokens: usize) -> Result<(), String> {
    if tokens == 0 || tokens > MAX_SAMPLE_TOKENS {
        return Err(format!(
            "length must be in 1..={MAX_SAMPLE_TOKENS} (got {tokens})"
        ));
    }
    Ok(())
}

/// Time spent training, pauses excluded: tokens/s divides by this, so the
/// figure stays honest across pauses and hidden tabs.
#[derive(Clone, Copy, Debug, Default)]
pub struct ActiveClock {
    since: Option<f64>,
    total_ms: f64,
}

impl ActiveClock {
    pub fn start(&mut self, now_ms: f64) {
        self.since.get_or_insert(now_ms);
    }

    pub fn stop(&mut self, now_ms: f64) {
        if let Some(t) = self.since.take() {
            self.total_ms += now_ms - t;
        }
    }

    pub fn seconds(&self, now_ms: f64) -> f64 {
        (self.total_ms + self.since.map_or(0.0, |t| now_ms - t)) / 1e3
    }
}

/// Where a run is, and what it does next.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// Step at which the run ends.
    pub target_step: usize,
    /// Evaluate every this many steps (0: only at the end).
    pub eval_every: usize,
    /// Autosave every this many steps after the last save (0: never on a
    /// count; the caller may still save on pause, stop and the end).
    pub autosave_every: usize,
    /// Step of the last completed save, when there is one.
    pub saved_step: Option<usize>,
    /// Step of the last check of the fast paths' weight cache in this run.
    pub cache_checked: Option<usize>,
    clock: ActiveClock,
    /// Tokens of the steps whose losses were read in this run.
    tokens: usize,
    /// Loss history (restored with a saved run), bounded for the chart.
    pub history_train: Vec<(usize, f32)>,
    pub history_val: Vec<(usize, f32)>,
    /// Live samples of this segment (`begin` restarts their accounts).
    pub live: LiveSamples,
}

fn push_history(series: &mut Vec<(usize, f32)>, step: usize, loss: f32) {
    if !loss.is_finite() || series.last().is_some_and(|l| l.0 >= step) {
        return;
    }
    series.push((step, loss));
    tinygpt_protocol::bound_loss_series(series);
}

impl Run {
    /// A run that evaluates every `eval_every` steps and autosaves every
    /// `autosave_every` after the last save (0: neither on a count).
    pub fn new(eval_every: usize, autosave_every: usize, saved_step: Option<usize>) -> Self {
        Self {
            eval_every,
            autosave_every,
            saved_step,
            ..Self::default()
        }
    }

    /// A saved run as it was saved: its end and its loss history.
    pub fn restored(target_step: usize, train: Vec<(usize, f32)>, val: Vec<(usize, f32)>) -> Self {
        Self {
            target_step,
            history_train: train,
            history_val: val,
            ..Self::default()
        }
    }

    /// Starts `steps` more from `step`: the clock and the tokens restart.
    pub fn begin(&mut self, step: usize, steps: usize, now_ms: f64) {
        self.target_step = step + steps;
        self.clock = ActiveClock::default();
        self.clock.start(now_ms);
        self.tokens = 0;
        self.cache_checked = None;
        self.live = LiveSamples::new(self.live.every);
    }

    /// Milliseconds spent training in this segment (pauses and live
    /// samples excluded).
    pub fn active_ms(&self, now_ms: f64) -> f64 {
        self.clock.seconds(now_ms) * 1e3
    }

    pub fn pause(&mut self, now_ms: f64) {
        self.clock.stop(now_ms);
    }

    pub fn resume(&mut self, now_ms: f64) {
        self.clock.start(now_ms);
    }

    /// The next autosave's step, when autosaving on a count.
    fn next_save(&self) -> Option<usize> {
        (self.autosave_every > 0).then(|| self.saved_step.unwrap_or(0) + self.autosave_every)
    }

    /// How many steps to submit next from `step`, at most `per_call`: never
    /// past the end, the next evaluation, the next live sample on a fixed
    /// interval or the next autosave, so each lands exactly on its step.
    pub fn next_steps(&self, step: usize, per_call: usize) -> usize {
        let to = |every: usize| match every {
            0 => usize::MAX,
            every => every - step % every,
        };
        let to_eval = to(self.eval_every).min(to(self.live.every.boundary().unwrap_or(0)));
        let to_save = self
            .next_save()
            .map_or(usize::MAX, |s| s.saturating_sub(step).max(1));
        per_call
            .min(self.target_step.saturating_sub(step))
            .min(to_eval)
            .min(to_save)
    }

    /// Whether `step` is an evaluation point (every `eval_every`, and the end).
    pub fn at_eval(&self, step: usize) -> bool {
        (self.eval_every > 0 && step.is_multiple_of(self.eval_every)) || self.done(step)
    }

    /// Whether an autosave is due at `step` (never at the end: the caller
    /// saves there anyway).
    pub fn autosave_due(&self, step: usize) -> bool {
        self.next_save().is_some_and(|s| step >= s) && !self.done(step)
    }

    /// Whether the weight cache is due a check at `step`: after the run's
    /// first steps, then every [`FRESHNESS_EVERY`].
    pub fn cache_check_due(&self, step: usize) -> bool {
        self.cache_checked
            .is_none_or(|last| step >= last + FRESHNESS_EVERY)
    }

    pub fn done(&self, step: usize) -> bool {
        step >= self.target_step
    }

    /// Records the losses of the steps up to `step` (the last one read) and
    /// the validation loss at `step`, and returns the progress to report;
    /// `None` when there is nothing new.
    pub fn record(
        &mut self,
        session: &Session,
        step: usize,
        losses: Vec<f32>,
        val_loss: Option<f32>,
        now_ms: f64,
    ) -> Option<TrainProgress> {
        if losses.is_empty() && val_loss.is_none() {
            return None;
        }
        let first = (step + 1).saturating_sub(losses.len());
        for (i, &l) in losses.iter().enumerate() {
            push_history(&mut self.history_train, first + i, l);
        }
        if let Some(v) = val_loss {
            push_history(&mut self.history_val, step, v);
        }
        let tokens_per_step = session.train.batch_size * session.train.seq_len;
        self.tokens += losses.len() * tokens_per_step;
        let active_s = self.clock.seconds(now_ms);
        let tokens_per_s = self.tokens as f64 / active_s.max(1e-9);
        let left = self.target_step.saturating_sub(step);
        Some(TrainProgress {
            step,
            total_steps: self.target_step,
            train_loss: losses.last().copied().unwrap_or(f32::NAN),
            losses,
            val_loss,
            lr: session.lr(),
            tokens_per_s,
            elapsed_s: active_s,
            eta_s: left as f64 * tokens_per_step as f64 / tokens_per_s.max(1e-9),
        })
    }

    /// Whether a training error should bring back the last save: the loss
    /// diverged and there is a save to go back to.
    pub fn restores_after(&self, e: &EngineError) -> bool {
        matches!(e, EngineError::NonFinite { .. }) && self.saved_step.is_some()
    }
}
