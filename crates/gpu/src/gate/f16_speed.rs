//! The f16-storage speed gate's workload: what the path exists for,
//! streaming half the weight bytes at batch 1. It times the linears of a
//! decode step (QKV, projection, MLP up and down of every layer, each
//! layer its own weights so nothing stays in cache between them) at the
//! bundled model's width, as the decoder binds them on this device, for a
//! few tokens in one submission.

use super::framework::{uniform, GateOptions, SpeedFuture, SpeedShape};
use super::speed::{time_pair, SpeedUnit};
use crate::ops::matmul::f16w::{bind_gemv_f16w, pack_cpu, PackedW};
use crate::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;
use tinygpt_protocol::SpeedCheck;

/// Seed of the timed weights (their values do not matter, only their size).
const SPEED_SEED: u64 = 0x5BEED;

pub fn speed_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> SpeedFuture<'a> {
    Box::pin(speed(ctx, reg, opts))
}

/// One layer's linears as (K, N): QKV, projection, MLP up, MLP down.
fn layer_shapes(c: u32) -> [(u32, u32); 4] {
    [(c, 3 * c), (c, c), (c, 4 * c), (4 * c, c)]
}

async fn speed(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> Result<SpeedCheck, GpuError> {
    let SpeedShape { width: c, layers } = opts.speed_shape;
    let mut rng = Rng::new(SPEED_SEED);
    let x = ctx.upload("speed_x", &uniform(&mut rng, 4 * c))?;
    let y = ctx.zeros("speed_y", 4 * c as usize)?;
    let bias = ctx.upload("speed_b", &uniform(&mut rng, 4 * c))?;
    let mut weights = Vec::new();
    for _ in 0..layers {
        for (k, n) in layer_shapes(c) {
            let w = uniform(&mut rng, k * n);
            let packed = pack_cpu(&w, None);
            weights.push((
                MatmulDesc::linear(1, k, n),
                ctx.upload("speed_w", &w)?,
                ctx.upload_bytes("speed_w16", bytemuck::cast_slice(&packed))?,
            ));
        }
    }
    // The decoder's layout on this device (columns on a CPU device).
    let fusion = || RowFusion {
        columns: ctx.cpu_device,
        ..RowFusion::default()
    };
    let (mut f32_layer, mut fast_layer) = (Vec::new(), Vec::new());
    for (desc, w, w16) in &weights {
        f32_layer.push(bind_gemv(
            ctx,
            reg,
            *desc,
            &x,
            w,
            Some((&bias).into()),
            fusion(),
            &y,
        )?);
        let half = PackedW::at(w16, 0);
        fast_layer.push(bind_gemv_f16w(
            ctx,
            reg,
            *desc,
            &x,
            half,
            Some((&bias).into()),
            fusion(),
            &y,
        )?);
    }
    let work = SpeedUnit {
        what: format!("decode step's linears, {layers} layers at C={c}"),
        unit: "token",
        f32_path: f32_layer.iter().collect(),
        fast_path: fast_layer.iter().collect(),
    };
    let mut check = time_pair(ctx, opts.now_ms, &work, &y).await?;
    check.shape = [c, layers];
    Ok(check)
}
