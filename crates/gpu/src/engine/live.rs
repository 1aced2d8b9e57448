//! Live samples while training: a short text from the current weights now
//! and then, so a visitor watches the model learn. The policy is here,
//! free of any platform: every N steps when the user says so, else
//! ("auto") whenever the time spent sampling stays within
//! [`LIVE_BUDGET`] of the time spent training — checked before each sample
//! with the last sample's measured cost, so the share holds from the
//! second sample on while samples cost about the same (they are all as
//! long); the first sample's cost is the only guess.

/// Most of the training time auto mode spends on live samples.
pub const LIVE_BUDGET: f64 = 0.05;
/// Characters per live sample.
pub const LIVE_CHARS: usize = 64;
/// Sampling temperature and seed of live samples: one seed for the whole
/// run, so two samples differ only by the weights.
pub const LIVE_TEMPERATURE: f32 = 0.8;
pub const LIVE_SEED: u64 = 1;
/// The cost assumed for the first sample, before one was measured.
const FIRST_ESTIMATE_MS: f64 = 400.0;

/// How often to sample while training.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LiveEvery {
    /// Within the time budget.
    #[default]
    Auto,
    Off,
    /// On every multiple of this many steps.
    Steps(usize),
}

impl LiveEvery {
    /// From the protocol's `Option<usize>`: `None` auto, `Some(0)` off.
    pub fn from_setting(every: Option<usize>) -> Self {
        match every {
            None => Self::Auto,
            Some(0) => Self::Off,
            Some(n) => Self::Steps(n),
        }
    }

    /// The step count a run's chunks must stop at, if any.
    pub fn boundary(self) -> Option<usize> {
        match self {
            Self::Steps(n) => Some(n),
            _ => None,
        }
    }
}

/// One run segment's live samples: when the next is due and what they cost.
#[derive(Clone, Debug, Default)]
pub struct LiveSamples {
    pub every: LiveEvery,
    last_step: Option<usize>,
    /// Time spent sampling in this segment.
    spent_ms: f64,
    /// The last sample's cost, the estimate of the next.
    last_ms: Option<f64>,
}

impl LiveSamples {
    pub fn new(every: LiveEvery) -> Self {
        Self {
            every,
            ..Self::default()
        }
    }

    /// Whether a sample is due at `step` after `train_ms` of training in
    /// this segment (sampling time excluded).
    pub fn due(&self, step: usize, train_ms: f64) -> bool {
        if step == 0 || self.last_step == Some(step) {
            return false;
        }
        match self.every {
            LiveEvery::Off => false,
            LiveEvery::Steps(n) => step.is_multiple_of(n),
            LiveEvery::Auto => {
                let next = self.last_ms.unwrap_or(FIRST_ESTIMATE_MS);
                self.spent_ms + next <= LIVE_BUDGET * train_ms
            }
        }
    }

    /// A sample at `step` took `ms`.
    pub fn record(&mut self, step: usize, ms: f64) {
        self.last_step = Some(step);
        self.spent_ms += ms;
        self.last_ms = Some(ms);
    }

    /// Sampling time over training time in this segment.
    pub fn share(&self, train_ms: f64) -> f64 {
        self.spent_ms / train_ms.max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_keeps_within_the_budget_once_a_cost_is_known() {
        let mut live = LiveSamples::new(LiveEvery::Auto);
        assert!(!live.due(10, 1_000.0), "400 ms is over 5 % of 1 s");
        assert!(live.due(10, 8_000.0));
        live.record(10, 300.0);
        // Each sample is taken only if it still fits: simulate a long run.
        let (mut train, mut step) = (8_000.0, 10);
        while train < 600_000.0 {
            train += 150.0;
            step += 8;
            if live.due(step, train) {
                live.record(step, 300.0);
                assert!(
                    live.share(train) <= LIVE_BUDGET + 1e-12,
                    "{}",
                    live.share(train)
                );
            }
        }
        assert!(
            live.share(train) > 0.04,
            "it also uses the budget: {}",
            live.share(train)
        );
        let last = live.last_step.expect("sampled");
        assert!(!live.due(last, 1e12), "never twice at one step");
    }

    #[test]
    fn fixed_steps_and_off() {
        let mut live = LiveSamples::new(LiveEvery::Steps(5));
        assert!(!live.due(0, 1e9) && !live.due(4, 1e9) && live.due(5, 0.0));
        live.record(5, 1e6);
        assert!(!live.due(5, 1e9), "once per step");
        assert!(live.due(10, 0.0), "no budget on a fixed interval");
        assert!(!LiveSamples::new(LiveEvery::Off).due(5, 1e9));
        assert_eq!(LiveEvery::from_setting(None), LiveEvery::Auto);
        assert_eq!(LiveEvery::from_setting(Some(0)), LiveEvery::Off);
        assert_eq!(LiveEvery::from_setting(Some(7)).boundary(), Some(7));
    }
}
