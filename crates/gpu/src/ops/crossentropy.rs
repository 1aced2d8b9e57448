//! Fused softmax + cross-entropy, as `crossentropy_forward` /
//! `crossentropy_backward` of `tinygpt_core::model::layers`, plus the mean
//! loss reduced on the GPU to one f32.
//!
//! The probabilities are not kept: `forward_backward` recomputes them from
//! each row's max and sum to write `dlogits = (softmax − onehot) / N_total`.

use super::common::{bind_kernel, check_no_alias, grid, shape_error, uniform, BoundOp, View};
use crate::kernel::Layout;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

pub const CROSSENTROPY_FORWARD: KernelSource = KernelSource {
    key: "crossentropy_forward",
    wgsl: include_str!("../../../../shaders/crossentropy.wgsl"),
    entry: "forward",
    constants: &[],
};

pub const CROSSENTROPY_FORWARD_BACKWARD: KernelSource = KernelSource {
    key: "crossentropy_forward_backward",
    wgsl: include_str!("../../../../shaders/crossentropy.wgsl"),
    entry: "forward_backward",
    constants: &[],
};

/// [`CROSSENTROPY_FORWARD`] and [`CROSSENTROPY_FORWARD_BACKWARD`] in the
/// [`Layout::Cpu`] layout: a row per invocation.
pub const CROSSENTROPY_FORWARD_SERIAL: KernelSource = KernelSource {
    key: "crossentropy_forward_serial",
    wgsl: CROSSENTROPY_FORWARD.wgsl,
    entry: "forward_serial",
    constants: &[],
};

pub const CROSSENTROPY_FORWARD_BACKWARD_SERIAL: KernelSource = KernelSource {
    key: "crossentropy_forward_backward_serial",
    wgsl: CROSSENTROPY_FORWARD.wgsl,
    entry: "forward_backward_serial",
    constants: &[],
};

pub const CROSSENTROPY_MEAN: KernelSource = KernelSource {
    key: "crossentropy_mean",
    wgsl: include_str!("../../../../shaders/crossentropy.wgsl"),
    entry: "mean",
    constants: &[],
};

/// `N` rows of `V` logits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CrossEntropyDesc {
    pub n: u32,
    pub v: u32,
    /// The `N` of the mean loss being differentiated: `dlogits` is scaled by
    /// `1/n_total` (usually `n`; larger when a batch is split into parts).
    pub n_total: u32,
    /// Add into `dlogits` (the CPU convention) instead of overwriting it.
    pub accumulate: bool,
    /// A workgroup per row (`Gpu`) or a row per invocation (`Cpu`).
    pub layout: Layout,
}

/// Binds the loss: `losses (N)` from `logits (N, V)` and `targets (N)` u32,
/// then `mean_loss[0] = mean(losses)`, both overwritten. With `dlogits
/// (N, V)`, the same pass also writes the mean loss's gradient into it,
/// accumulated or overwritten as `desc.accumulate` says.
#[allow(clippy::too_many_arguments)]
pub fn bind_crossentropy<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    desc: CrossEntropyDesc,
    logits: impl Into<View<'a>>,
    targets: impl Into<View<'a>>,
    losses: impl Into<View<'a>>,
    dlogits: Option<View<'a>>,
    mean_loss: impl Into<View<'a>>,
) -> Result<BoundOp, GpuError> {
    let op = "crossentropy";
    let (logits, targets) = (logits.into(), targets.into());
    let (losses, mean_loss) = (losses.into(), mean_loss.into());
    if desc.v == 0 || desc.n == 0 || (dlogits.is_some() && desc.n_total == 0) {
        return Err(shape_error(
            op,
            format!("{desc:?} needs N, V ≥ 1 (and N_total ≥ 1 for dlogits)"),
        ));
    }
    let (n, v) = (desc.n as u64, desc.v as u64);
    logits.need(op, "logits", n * v)?;
    targets.need(op, "targets", n)?;
    losses.need(op, "losses", n)?;
    mean_loss.need(op, "mean_loss", 1)?;
    let read = [("logits", logits.buffer), ("targets", targets.buffer)];
    check_no_alias(op, &[("losses", losses.buffer)], &read)?;
    let inv_n_total = (1.0 / desc.n_total.max(1) as f64) as f32;
    let params = uniform(
        ctx,
        "crossentropy_params",
        &[
            desc.n,
            desc.v,
            desc.accumulate as u32,
            inv_n_total.to_bits(),
            logits.offset,
            targets.offset,
            losses.offset,
            dlogits.map_or(0, |d| d.offset),
            mean_loss.offset,
        ],
    );
    let mut entries = vec![(1, logits.buffer), (2, targets.buffer), (3, losses.buffer)];
    let src = match dlogits {
        Some(d) => {
            d.need(op, "dlogits", n * v)?;
            check_no_alias(op, &[("dlogits", d.buffer)], &read)?;
            entries.push((4, d.buffer));
            [
                &CROSSENTROPY_FORWARD_BACKWARD,
                &CROSSENTROPY_FORWARD_BACKWARD_SERIAL,
            ]
        }
        None => [&CROSSENTROPY_FORWARD, &CROSSENTROPY_FORWARD_SERIAL],
    };
    let (src, groups) = match desc.layout {
        Layout::Gpu => (src[0], grid(ctx, desc.n)),
        Layout::Cpu => (src[1], grid(ctx, desc.n.div_ceil(64))),
    };
    let rows = bind_kernel(ctx, registry, src, &params, &entries, groups);
    let mean = bind_kernel(
        ctx,
        registry,
        &CROSSENTROPY_MEAN,
        &params,
        &[(3, losses.buffer), (5, mean_loss.buffer)],
        [1, 1, 1],
    );
    Ok(BoundOp {
        kernels: vec![rows, mean],
        scratch: Vec::new(),
    })
}
