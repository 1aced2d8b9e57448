//! AdamW with the learning-rate schedule and gradient clipping, entirely on
//! the GPU so that many steps record back to back without the CPU writing a
//! uniform between them.
//!
//! Per step, after [`super::grad_norm::bind_grad_norm`] has written the norm:
//! 1. `schedule` (one thread) reads the norm and [`OptState`], writes
//!    [`StepScalars`] — `lr = optim::lr_at(step)`, the clip scale of
//!    `optim::clip_grad_norm`, the bias corrections for update `t` — and
//!    advances the counters;
//! 2. `update` (one thread per parameter) applies `AdamW::update`'s formula
//!    to the clipped gradient, decaying only where [`decay_mask`] says.
//!
//! A NaN or infinite norm skips the update (parameters and moments are left
//! as they were), still advances the schedule's step, and is counted in
//! [`OptState`] for the host to report. The optimiser's `step` (bias
//! correction) counts applied updates only, as `AdamW::step` does when the
//! CPU loop skips a diverged step.

use super::common::{bind_kernel, check_no_alias, grid, shape_error, to_u32, uniform, BoundOp};
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use tinygpt_core::{ParamLayout, TrainConfig};

pub const ADAMW_SCHEDULE: KernelSource = KernelSource {
    key: "adamw_schedule",
    wgsl: include_str!("../../../../shaders/adamw.wgsl"),
    entry: "schedule",
    constants: &[],
};

pub const ADAMW_UPDATE: KernelSource = KernelSource {
    key: "adamw_update",
    wgsl: include_str!("../../../../shaders/adamw.wgsl"),
    entry: "update",
    constants: &[],
};

/// Bytes of the [`OptState`] buffer.
pub const OPT_STATE_BYTES: u64 = 16;
/// Bytes of the [`StepScalars`] buffer.
pub const STEP_SCALARS_BYTES: u64 = 32;

/// The optimiser counters that live on the GPU (four u32).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OptState {
    /// Steps recorded so far: the next step's `lr_at` argument.
    pub step: u32,
    /// Updates applied so far (`AdamW::step`): the next update is `t = updates + 1`.
    pub updates: u32,
    /// Steps skipped because the gradient norm was NaN or infinite.
    pub nonfinite_steps: u32,
    /// The last skipped step (0-based), if any.
    pub last_nonfinite_step: Option<u32>,
}

impl OptState {
    /// A state resumed at `step` after `updates` applied updates (a restored
    /// checkpoint); `OptState::default()` starts a run.
    pub fn resumed(step: u32, updates: u32) -> Self {
        Self {
            step,
            updates,
            ..Self::default()
        }
    }

    pub fn to_bytes(&self) -> [u8; OPT_STATE_BYTES as usize] {
        let last = self.last_nonfinite_step.map_or(0, |s| s + 1);
        bytemuck::cast([self.step, self.updates, self.nonfinite_steps, last])
    }

    /// Decodes the first 16 bytes of a read-back state buffer.
    #[track_caller]
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let w: [u32; 4] = bytemuck::pod_read_unaligned(&bytes[..OPT_STATE_BYTES as usize]);
        Self {
            step: w[0],
            updates: w[1],
            nonfinite_steps: w[2],
            last_nonfinite_step: w[3].checked_sub(1),
        }
    }

    /// A storage buffer holding this state.
    pub fn upload(&self, ctx: &GpuContext) -> Result<wgpu::Buffer, GpuError> {
        ctx.upload_bytes("adamw_state", &self.to_bytes())
    }

    pub async fn read(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<Self, GpuError> {
        Ok(Self::from_bytes(
            &ctx.read_bytes(buffer, OPT_STATE_BYTES).await?,
        ))
    }
}

/// The scalars of the last scheduled step, for logging.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepScalars {
    /// Gradient norm before clipping.
    pub norm: f32,
    pub lr: f32,
    /// Factor the gradients were scaled by (1 when not clipped).
    pub clip_scale: f32,
    /// `1 − β1ᵗ`.
    pub bc1: f32,
    /// `1 − β2ᵗ`.
    pub bc2: f32,
    /// `false` when the norm was not finite and the update was skipped.
    pub applied: bool,
}

impl StepScalars {
    /// Decodes the first 32 bytes of a read-back scalars buffer.
    #[track_caller]
    pub fn from_bytes(bytes: &[u8]) -> Self {
        let w: [u32; 8] = bytemuck::pod_read_unaligned(&bytes[..STEP_SCALARS_BYTES as usize]);
        let f = |i: usize| f32::from_bits(w[i]);
        Self {
            norm: f(0),
            lr: f(1),
            clip_scale: f(2),
            bc1: f(3),
            bc2: f(4),
            applied: w[5] != 0,
        }
    }

    /// A zeroed buffer for the schedule kernel to write.
    pub fn buffer(ctx: &GpuContext) -> Result<wgpu::Buffer, GpuError> {
        ctx.zeros("adamw_scalars", (STEP_SCALARS_BYTES / 4) as usize)
    }

    pub async fn read(ctx: &GpuContext, buffer: &wgpu::Buffer) -> Result<Self, GpuError> {
        Ok(Self::from_bytes(
            &ctx.read_bytes(buffer, STEP_SCALARS_BYTES).await?,
        ))
    }
}

/// One bit per parameter (bit `i % 32` of word `i / 32`), set where
/// `ParamKind::decays()`: built once per model, uploaded with `upload_bytes`.
pub fn decay_mask(layout: &ParamLayout) -> Vec<u32> {
    let mut mask = vec![0u32; layout.total.div_ceil(32).max(1)];
    for spec in layout.tensors.iter().filter(|s| s.kind.decays()) {
        for i in spec.range() {
            mask[i / 32] |= 1 << (i % 32);
        }
    }
    mask
}

/// The buffers of the optimiser step; all but `state` and `scalars` are
/// flat over the `n` parameters.
pub struct AdamWBuffers<'a> {
    /// Updated in place.
    pub params: &'a wgpu::Buffer,
    pub grads: &'a wgpu::Buffer,
    /// First moment, updated in place.
    pub m: &'a wgpu::Buffer,
    /// Second moment, updated in place.
    pub v: &'a wgpu::Buffer,
    /// From [`decay_mask`].
    pub decay_mask: &'a wgpu::Buffer,
    /// The gradient norm in element 0 (from `bind_grad_norm`).
    pub norm: &'a wgpu::Buffer,
    /// [`OptState`], read and advanced.
    pub state: &'a wgpu::Buffer,
    /// [`StepScalars`], written.
    pub scalars: &'a wgpu::Buffer,
}

/// Binds the schedule and update of one optimiser step over `n` parameters
/// with `cfg`'s schedule, betas, ε, weight decay and clip.
pub fn bind_adamw(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    cfg: &TrainConfig,
    n: u32,
    b: AdamWBuffers<'_>,
) -> Result<BoundOp, GpuError> {
    let op = "adamw";
    b.check(n)?;
    let params = uniform(
        ctx,
        "adamw_params",
        &[
            n,
            to_u32(op, "warmup_steps", cfg.warmup_steps)?,
            to_u32(op, "steps", cfg.steps)?,
            0,
            cfg.lr.to_bits(),
            cfg.min_lr.to_bits(),
            cfg.beta1.to_bits(),
            cfg.beta2.to_bits(),
            cfg.eps.to_bits(),
            cfg.weight_decay.to_bits(),
            cfg.grad_clip.to_bits(),
        ],
    );
    let schedule_buffers = [(1, b.norm), (2, b.state), (3, b.scalars)];
    let schedule = bind_kernel(
        ctx,
        registry,
        &ADAMW_SCHEDULE,
        &params,
        &schedule_buffers,
        [1, 1, 1],
    );
    let update_buffers = [
        (4, b.scalars),
        (5, b.decay_mask),
        (6, b.grads),
        (7, b.params),
        (8, b.m),
        (9, b.v),
    ];
    let groups = grid(ctx, n.div_ceil(256));
    let update = bind_kernel(
        ctx,
        registry,
        &ADAMW_UPDATE,
        &params,
        &update_buffers,
        groups,
    );
    Ok(BoundOp {
        kernels: vec![schedule, update],
        scratch: Vec::new(),
    })
}

impl AdamWBuffers<'_> {
    /// Refuses buffers too small for `n` parameters (and the fixed-size
    /// state), and a written buffer that a dispatch also reads.
    fn check(&self, n: u32) -> Result<(), GpuError> {
        let op = "adamw";
        let len = n as u64 * 4;
        for (name, buf) in [
            ("params", self.params),
            ("grads", self.grads),
            ("m", self.m),
            ("v", self.v),
        ] {
            if buf.size() < len {
                let detail = format!(
                    "{name} holds {} bytes, {n} parameters need {len}",
                    buf.size()
                );
                return Err(shape_error(op, detail));
            }
        }
        let sizes = [
            ("decay_mask", self.decay_mask, (n as u64).div_ceil(32) * 4),
            ("norm", self.norm, 4),
            ("state", self.state, OPT_STATE_BYTES),
            ("scalars", self.scalars, STEP_SCALARS_BYTES),
        ];
        for (name, buf, need) in sizes {
            if buf.size() < need {
                let detail = format!("{name} holds {} bytes, needs {need}", buf.size());
                return Err(shape_error(op, detail));
            }
        }
        check_no_alias(
            op,
            &[("state", self.state), ("scalars", self.scalars)],
            &[("norm", self.norm)],
        )?;
        let written = [("params", self.params), ("m", self.m), ("v", self.v)];
        let read = [
            ("grads", self.grads),
            ("decay_mask", self.decay_mask),
            ("scalars", self.scalars),
        ];
        check_no_alias(op, &written, &read)
    }
}
