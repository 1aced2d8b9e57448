//! The tensor-core path's training gate and speed gate: one model of the
//! gate's shape trained on f32 and on cooperative matrices from the same
//! seed on the same batches, and train steps timed on both.
//!
//! The data is a seeded order-1 Markov chain over the vocabulary (each
//! token has four likely successors), so the loss falls from ln V towards
//! the chain's entropy within the gate's 200 steps, as a corpus's would.

use super::framework::{GateOptions, SpeedShape, Speeds};
use super::speed::{record_round, unmeasured};
use crate::model::{FastPaths, GpuModel};
use crate::ops::adamw::OptState;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::data::{Batch, BatchSampler};
use tinygpt_core::{init_params, ModelConfig, Rng, TrainConfig};

/// Steps of the training gate, and how often both runs are evaluated.
pub const GATE_STEPS: usize = 200;
pub const EVAL_EVERY: usize = 50;

/// How far the tensor-core run's validation loss may sit from the f32
/// run's at an evaluation: 2 % of the f32 loss plus 0.01. Rounding both
/// operands of every product to f16 (2⁻¹¹ relative each) moves one
/// forward's loss by ~1e-4 relative; over 200 steps the two runs follow
/// different trajectories, and a trajectory's seed-to-seed spread at this
/// point of training is of the order of 1 % of the loss — 2 % + 0.01
/// passes what f16 rounding does, while a lost gradient term, a scale
/// applied twice or not divided back moves the loss by tenths.
pub const LOSS_TOLERANCE: (f64, f64) = (0.02, 0.01);

/// One evaluation of both runs.
#[derive(Clone, Debug)]
pub struct Eval {
    pub step: usize,
    pub f32_loss: f64,
    pub fast_loss: f64,
}

impl Eval {
    pub fn limit(&self) -> f64 {
        LOSS_TOLERANCE.0 * self.f32_loss.abs() + LOSS_TOLERANCE.1
    }

    pub fn passed(&self) -> bool {
        (self.fast_loss - self.f32_loss).abs() <= self.limit()
    }
}

/// What the training gate found.
#[derive(Clone, Debug)]
pub struct TrainingGate {
    pub evals: Vec<Eval>,
    pub passed: bool,
    /// The run, in words.
    pub what: String,
}

impl TrainingGate {
    /// Why it failed: the first evaluation out of tolerance.
    pub fn why(&self) -> String {
        match self.evals.iter().find(|e| !e.passed()) {
            Some(e) => format!(
                "training gate: at step {} val loss {:.4} vs f32 {:.4}",
                e.step, e.fast_loss, e.f32_loss
            ),
            None => "training gate: no evaluation".into(),
        }
    }
}

/// The model the gates train: the speed shape's width and depth, heads of
/// 64, context 128, the bundled corpus's vocabulary.
fn config(shape: SpeedShape) -> ModelConfig {
    ModelConfig {
        vocab_size: super::DEFAULT_VOCAB as usize,
        block_size: 128,
        n_layer: shape.layers as usize,
        n_head: (shape.width as usize / 64).max(1),
        d_model: shape.width as usize,
    }
}

fn train_config(steps: usize) -> TrainConfig {
    TrainConfig {
        batch_size: 16,
        seq_len: 128,
        steps,
        warmup_steps: 20,
        lr: 1e-3,
        min_lr: 1e-4,
        ..TrainConfig::default()
    }
}

/// `n` tokens of the seeded Markov chain.
fn chain(n: usize, v: u32, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    let next: Vec<[u32; 4]> = (0..v)
        .map(|_| std::array::from_fn(|_| rng.below(v as usize) as u32))
        .collect();
    let mut t = 0u32;
    (0..n)
        .map(|_| {
            // 85 % one of the four successors, else anything.
            t = if rng.uniform(0.0, 1.0) < 0.85 {
                next[t as usize][rng.below(4)]
            } else {
                rng.below(v as usize) as u32
            };
            t
        })
        .collect()
}

fn batches(tokens: &[u32], n: usize, tc: &TrainConfig, seed: u64) -> Vec<Batch> {
    let mut s = BatchSampler::new(seed);
    (0..n)
        .map(|_| s.next_batch(tokens, tc.batch_size, tc.seq_len))
        .collect()
}

fn model(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    cfg: ModelConfig,
    tc: TrainConfig,
    coop: bool,
) -> Result<GpuModel, GpuError> {
    let mut m = GpuModel::new(
        ctx,
        cfg,
        &init_params(&cfg, tc.seed),
        None,
        tc,
        OptState::default(),
    )?;
    let fast = FastPaths {
        coop_matrix: coop,
        coop_attention: coop && crate::ops::attention::engine_attention(),
        ..Default::default()
    };
    m.set_fast_paths(ctx, reg, fast)?;
    Ok(m)
}

/// Trains the gate's model [`GATE_STEPS`] steps on f32 and on the
/// tensor-core path, evaluating both every [`EVAL_EVERY`].
pub async fn training_gate(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    shape: SpeedShape,
) -> Result<TrainingGate, GpuError> {
    let (cfg, tc) = (config(shape), train_config(GATE_STEPS));
    let tokens = chain(200_000, cfg.vocab_size as u32, 0xC4A1);
    let (train, held) = tokens.split_at(180_000);
    let steps = batches(train, GATE_STEPS, &tc, 1);
    let val = batches(held, 8, &tc, 2);
    let mut runs = [
        model(ctx, reg, cfg, tc, false)?,
        model(ctx, reg, cfg, tc, true)?,
    ];
    let mut evals = Vec::new();
    for (i, batch) in steps.iter().enumerate() {
        for m in &mut runs {
            m.train_step(ctx, reg, batch)?;
        }
        if (i + 1) % EVAL_EVERY == 0 {
            let f32_loss = runs[0].eval_loss(ctx, reg, &val).await? as f64;
            let fast_loss = runs[1].eval_loss(ctx, reg, &val).await? as f64;
            evals.push(Eval {
                step: i + 1,
                f32_loss,
                fast_loss,
            });
        }
    }
    let passed = !evals.is_empty() && evals.iter().all(Eval::passed);
    let what = format!(
        "{GATE_STEPS} steps of a {}-layer C={} model (batch {}×{}) from one seed on f32 and on tensor cores, validation every {EVAL_EVERY} within {:.0} % + {}",
        cfg.n_layer,
        cfg.d_model,
        tc.batch_size,
        tc.seq_len,
        LOSS_TOLERANCE.0 * 100.0,
        LOSS_TOLERANCE.1
    );
    Ok(TrainingGate {
        evals,
        passed,
        what,
    })
}

/// Milliseconds for `n` train steps of `m` and the read-back of its loss.
async fn timed_steps(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    m: &mut GpuModel,
    batches: &[Batch],
    now_ms: fn() -> f64,
) -> Result<f64, GpuError> {
    let t0 = now_ms();
    for b in batches {
        m.train_step(ctx, reg, b)?;
    }
    m.read_loss(ctx).await?;
    Ok(now_ms() - t0)
}

/// The speed gate: train steps of the gate's model on both paths,
/// alternating, the fastest of five rounds of 10 steps each (after one
/// untimed round each).
pub async fn speed(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> Result<Speeds, GpuError> {
    let shape = opts.speed_shape;
    let (cfg, tc) = (config(shape), train_config(1000));
    let tokens = chain(50_000, cfg.vocab_size as u32, 0x5EED);
    let round = batches(&tokens, 10, &tc, 3);
    let mut f32_model = model(ctx, reg, cfg, tc, false)?;
    let mut coop_model = model(ctx, reg, cfg, tc, true)?;
    let workload = format!(
        "train steps of a {}-layer C={} model, batch {}×{}, 10 steps",
        cfg.n_layer, cfg.d_model, tc.batch_size, tc.seq_len
    );
    let mut check = unmeasured(workload, [shape.width, shape.layers]);
    timed_steps(ctx, reg, &mut f32_model, &round, opts.now_ms).await?;
    timed_steps(ctx, reg, &mut coop_model, &round, opts.now_ms).await?;
    for _ in 0..5 {
        let f = timed_steps(ctx, reg, &mut f32_model, &round, opts.now_ms).await?;
        let c = timed_steps(ctx, reg, &mut coop_model, &round, opts.now_ms).await?;
        record_round(&mut check, f, c);
    }
    Ok(Speeds {
        activation: check,
        training: None,
    })
}
