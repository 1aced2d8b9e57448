//! Causal multi-head self-attention without a `(B,NH,T,T)` buffer: the
//! flash-style forward, its two-kernel backward, and the KV-cache decode step
//! for sampling at batch 1.
//!
//! Layouts match the CPU reference (`tinygpt_core::model::layers`):
//! `qkv (B,T,3C)` holds Q in columns `[0,C)`, K in `[C,2C)`, V in `[2C,3C)`;
//! head `h` owns columns `[h·HS, (h+1)·HS)` of each part; `out (B,T,C)` has
//! the heads concatenated; scores are scaled by `1/√HS`. The forward also
//! keeps `lse (B,NH,T)`, the log-sum-exp of each query row's scaled scores,
//! from which the backward recomputes every probability.
//!
//! Every kernel supports any `T ≥ 1`, `NH ≥ 1` and `1 ≤ HS ≤ 128`
//! ([`MAX_HEAD_SIZE`]); all sums run in f32, in a fixed order, without atomics.

use super::dropout::DropoutDesc;
use crate::kernel::BoundKernel;
use crate::ops::common::bind_kernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use tinygpt_core::model::Site;

mod coop;
mod decode;
mod decode_proj;
mod decode_qkv;
mod desc;
mod shape;
pub use coop::*;
pub use decode::*;
pub use decode_proj::*;
pub use decode_qkv::*;
pub use desc::{AttentionBackwardBuffers, AttentionDesc};
pub use shape::MAX_HEAD_SIZE;

/// A training kernel's source with what the three share appended: the
/// guarded head loads and the tiles' origin, swizzles, reads and chunked
/// store (`attention_common.wgsl`), the dropout-mask functions
/// (`dropout_mask.wgsl`, `attention_dropout.wgsl`: the masks' bits live in
/// one place for every kernel that drops) and the serial entry points' row
/// and index helpers (`attention_serial.wgsl`); `$more` after them.
macro_rules! training_kernel {
    ($path:literal $(, $more:literal)?) => {
        concat!(
            include_str!($path),
            include_str!("../../../../../shaders/attention_common.wgsl"),
            include_str!("../../../../../shaders/dropout_mask.wgsl"),
            include_str!("../../../../../shaders/attention_dropout.wgsl"),
            include_str!("../../../../../shaders/attention_serial.wgsl")
            $(, include_str!($more))?
        )
    };
}
/// The backward kernels also share `attention_bwd_common.wgsl`.
const BWD_DQ_WGSL: &str = training_kernel!(
    "../../../../../shaders/attention_bwd_dq.wgsl",
    "../../../../../shaders/attention_bwd_common.wgsl"
);
const BWD_DKV_WGSL: &str = training_kernel!(
    "../../../../../shaders/attention_bwd_dkv.wgsl",
    "../../../../../shaders/attention_bwd_common.wgsl"
);
const FWD_WGSL: &str = training_kernel!("../../../../../shaders/attention_fwd.wgsl");

pub const ATTENTION_FWD: KernelSource = KernelSource {
    key: "attention_fwd_flash",
    wgsl: FWD_WGSL,
    entry: "main",
    constants: &[],
};

pub const ATTENTION_BWD_DQ: KernelSource = KernelSource {
    key: "attention_bwd_dq",
    wgsl: BWD_DQ_WGSL,
    entry: "main",
    constants: &[],
};

pub const ATTENTION_BWD_DKV: KernelSource = KernelSource {
    key: "attention_bwd_dkv",
    wgsl: BWD_DKV_WGSL,
    entry: "main",
    constants: &[],
};

/// [`ATTENTION_FWD`], [`ATTENTION_BWD_DQ`] and [`ATTENTION_BWD_DKV`] in the
/// [`Layout::Cpu`] layout: one invocation per query (or key) row.
pub const ATTENTION_FWD_SERIAL: KernelSource = KernelSource {
    key: "attention_fwd_serial",
    wgsl: ATTENTION_FWD.wgsl,
    entry: "main_serial",
    constants: &[],
};

pub const ATTENTION_BWD_DQ_SERIAL: KernelSource = KernelSource {
    key: "attention_bwd_dq_serial",
    wgsl: ATTENTION_BWD_DQ.wgsl,
    entry: "main_serial",
    constants: &[],
};

pub const ATTENTION_BWD_DKV_SERIAL: KernelSource = KernelSource {
    key: "attention_bwd_dkv_serial",
    wgsl: ATTENTION_BWD_DKV.wgsl,
    entry: "main_serial",
    constants: &[],
};

/// Binds the forward: `qkv (B,T,3C)` → `out (B,T,C)`, `lse (B,NH,T)`.
/// Both outputs are overwritten. With `dropout` (training), the attention
/// weights of `site` go through their mask before weighting the values.
pub fn bind_attention_forward(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: AttentionDesc,
    qkv: &wgpu::Buffer,
    out: &wgpu::Buffer,
    lse: &wgpu::Buffer,
    dropout: Option<(DropoutDesc<'_>, Site)>,
) -> Result<BoundKernel, GpuError> {
    let hs = desc.validate(ctx)?;
    desc.check_forward((qkv, out, lse))?;
    let src = desc.kernel(&ATTENTION_FWD, &ATTENTION_FWD_SERIAL);
    let uniform = ctx.uniform("attention_fwd_params", &desc.uniform_bytes(hs, dropout));
    // Without dropout the step counter is never read: any read-only buffer.
    let state = dropout.map_or(qkv, |(d, _)| d.state);
    let buffers = [(1, qkv), (2, out), (3, lse), (4, state)];
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &uniform,
        &buffers,
        desc.workgroups(),
    ))
}

/// Binds the backward as two dispatches to record in the order returned:
/// `attention_bwd_dq` writes the Q columns of `dqkv` and the row terms
/// `D = dout·out (B,NH,T)` into a scratch buffer made here, then
/// `attention_bwd_dkv` reads `D` and writes the K and V columns. `dropout`
/// must be the forward's.
pub fn bind_attention_backward(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: AttentionDesc,
    bufs: AttentionBackwardBuffers<'_>,
    dropout: Option<(DropoutDesc<'_>, Site)>,
) -> Result<Vec<BoundKernel>, GpuError> {
    let hs = desc.validate(ctx)?;
    desc.check_backward(&bufs)?;
    let bytes = desc.uniform_bytes(hs, dropout);
    let state = dropout.map_or(bufs.qkv, |(d, _)| d.state);
    let dq = desc.kernel(&ATTENTION_BWD_DQ, &ATTENTION_BWD_DQ_SERIAL);
    let dkv = desc.kernel(&ATTENTION_BWD_DKV, &ATTENTION_BWD_DKV_SERIAL);
    let wg = desc.workgroups();
    desc.bind_backward(
        (ctx, registry),
        (&bufs, state, None),
        ([dq, dkv], &bytes, &[]),
        wg,
    )
}
