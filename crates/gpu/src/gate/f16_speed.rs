//! The f16-storage speed gate's workloads, at the shape asked for (the
//! bundled model's at start-up, a loaded model's own), each layer with its
//! own weights so nothing stays in cache between them:
//!
//! - **decoding**, what the path exists for (streaming half the weight
//!   bytes at batch 1): the linears of a decode step — QKV, projection, MLP
//!   up and down, with biases — as the decoder binds them on this device,
//!   a token's worth repeated to fill a round (`speed::ROUND_MS`). It
//!   decides whether the path is active.
//! - **the training forward**: the same linears over [`train_rows`] rows as
//!   the training graph binds them, the f16 side paying the step's repack
//!   of the weights first. It decides whether training reads the halves too
//!   (`F16Storage::training`), so that a path that speeds decoding never
//!   slows a train step.
//!
//! The f16-compute path (`gate::f16_compute`) exists for the training
//! forward alone (one row keeps the f16-storage GEMV): its speed gate is
//! that second workload with the f16-compute kernel, and it decides
//! activation.

use super::framework::{uniform, GateOptions, SpeedFuture, SpeedShape, Speeds};
use super::speed::{time_pair, SpeedUnit};
use crate::kernel::{BoundKernel, Layout};
use crate::ops::matmul::f16w::{
    bind_gemv_f16w, bind_matmul_f16w, bind_pack_f16, pack_cpu, packed_words, PackedW,
};
use crate::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use crate::ops::View;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;

/// Rows of the timed training forward: a batch of 8 sequences of 128 on a
/// GPU; on a CPU implementation of WebGPU, which trains small batches and
/// would take seconds a round, one sequence.
pub fn train_rows(ctx: &GpuContext) -> u32 {
    if ctx.cpu_device {
        128
    } else {
        1024
    }
}
/// Seed of the timed weights (their values do not matter, only their size).
const SPEED_SEED: u64 = 0x5BEED;

pub fn speed_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> SpeedFuture<'a> {
    Box::pin(speed(ctx, reg, opts, false))
}

/// The f16-compute path's speed gate: the training forward alone.
pub fn compute_speed_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> SpeedFuture<'a> {
    Box::pin(speed(ctx, reg, opts, true))
}

/// One layer's linears as (K, N): QKV, projection, MLP up, MLP down.
fn layer_shapes(c: u32) -> [(u32, u32); 4] {
    [(c, 3 * c), (c, c), (c, 4 * c), (4 * c, c)]
}

/// Every layer's linears as (K, N, offset into the weights), and the total.
fn linears(shape: SpeedShape) -> (Vec<(u32, u32, u32)>, u32) {
    let mut out = Vec::new();
    let mut at = 0;
    for _ in 0..shape.layers {
        for (k, n) in layer_shapes(shape.width) {
            out.push((k, n, at));
            at += k * n;
        }
    }
    (out, at)
}

/// The two workloads' kernels: (f32, f16) for decoding, then for training.
type Bound = [(Vec<BoundKernel>, Vec<BoundKernel>); 2];

/// Binds both workloads; with `compute` the training forward's f16 side
/// multiplies in f16 compute and decoding is left empty.
fn bind_all(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    (shape, compute): (SpeedShape, bool),
    (w, w16, bias): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    (x, y): (&wgpu::Buffer, &wgpu::Buffer),
) -> Result<Bound, GpuError> {
    let (lins, total) = linears(shape);
    // The decoder's layout on this device (columns on a CPU device).
    let fusion = || RowFusion {
        columns: ctx.cpu_device,
        ..RowFusion::default()
    };
    let layout = Layout::for_device(ctx);
    let mut out: Bound = Default::default();
    out[1].1.push(bind_pack_f16(ctx, reg, None, w, total, w16)?);
    for (k, n, at) in lins {
        let (wv, half, b) = (
            View::at(w, at),
            PackedW::at(w16, at),
            Some(View::from(bias)),
        );
        let one = MatmulDesc::linear(1, k, n);
        if !compute {
            out[0]
                .0
                .push(bind_gemv(ctx, reg, one, x, wv, b, fusion(), y)?);
            out[0]
                .1
                .push(bind_gemv_f16w(ctx, reg, one, x, half, b, fusion(), y)?);
        }
        let rows = MatmulDesc::linear(train_rows(ctx), k, n);
        out[1].0.push(layout.bind(ctx, reg, rows, x, wv, b, y)?);
        let half = half.computing(compute);
        out[1]
            .1
            .push(bind_matmul_f16w(ctx, reg, rows, x, half, b, y)?);
    }
    Ok(out)
}

/// `kernels`' f32 and f16 forms as a timed unit.
fn unit<'k>(
    (f32_path, fast_path): &'k (Vec<BoundKernel>, Vec<BoundKernel>),
    what: String,
    unit: &'static str,
) -> SpeedUnit<'k> {
    SpeedUnit {
        what,
        unit,
        f32_path: f32_path.iter().collect(),
        fast_path: fast_path.iter().collect(),
    }
}

/// Times decoding, then the training forward (with `compute`, the training
/// forward alone, which then decides activation).
async fn speed(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
    compute: bool,
) -> Result<Speeds, GpuError> {
    let shape = opts.speed_shape;
    let SpeedShape { width: c, layers } = shape;
    let mut rng = Rng::new(SPEED_SEED);
    let (_, total) = linears(shape);
    let weights = uniform(&mut rng, total);
    let w = ctx.upload("speed_w", &weights)?;
    let w16 = ctx.upload_bytes("speed_w16", bytemuck::cast_slice(&pack_cpu(&weights, None)))?;
    debug_assert_eq!(w16.size(), packed_words(total as usize) as u64 * 4);
    let bias = ctx.upload("speed_b", &uniform(&mut rng, 4 * c))?;
    let rows = train_rows(ctx);
    let x = ctx.upload("speed_x", &uniform(&mut rng, rows * 4 * c))?;
    let y = ctx.zeros("speed_y", (rows * 4 * c) as usize)?;
    let [decode, train] = bind_all(ctx, reg, (shape, compute), (&w, &w16, &bias), (&x, &y))?;
    let decode = unit(
        &decode,
        format!("decode step's linears, {layers} layers at C={c}"),
        "token",
    );
    let train = unit(
        &train,
        format!("training forward's linears and the repack, {rows} rows, {layers} layers at C={c}"),
        "step",
    );
    let mut activation = match compute {
        true => None,
        false => Some(time_pair(ctx, opts.now_ms, &decode, &y).await?),
    };
    let mut training = time_pair(ctx, opts.now_ms, &train, &y).await?;
    training.shape = [c, layers];
    if let Some(a) = &mut activation {
        a.shape = [c, layers];
    }
    Ok(match activation {
        Some(activation) => Speeds {
            activation,
            training: Some(training),
        },
        None => Speeds {
            activation: training,
            training: None,
        },
    })
}
