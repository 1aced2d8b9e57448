//! The start-up kernel check: one f32 matmul on an odd shape against a CPU
//! loop, run by the worker before it reports `gpu_caps`.

use crate::kernel::Layout;
use crate::ops::matmul::{matmul_once_in, matmul_reference, MatmulDesc, TileKernel};
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::numerics::worst_mismatch;
use tinygpt_core::Rng;
use tinygpt_protocol::KernelCheck;

/// Runs the check; `now_ms` is the platform clock (performance.now on the web).
pub async fn kernel_check(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    now_ms: impl Fn() -> f64,
) -> Result<KernelCheck, GpuError> {
    // Not multiples of any tile or K step.
    let desc = MatmulDesc::linear(67, 45, 71);
    let mut rng = Rng::new(2);
    let mut fill = |n: u32| (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect::<Vec<f32>>();
    let (a, b, bias) = (fill(desc.m * desc.k), fill(desc.n * desc.k), fill(desc.n));
    let t0 = now_ms();
    // The kernel this device's models run.
    let layout = Layout::for_device(ctx);
    let got = matmul_once_in(layout, ctx, registry, desc, &a, &b, Some(&bias)).await?;
    let millis = now_ms() - t0;
    let want = matmul_reference(desc, &a, &b, Some(&bias));
    let tolerance = 1e-4;
    let worst = worst_mismatch(&got, &want, tolerance as f64, 1e-5);
    Ok(KernelCheck {
        kernel: match layout {
            Layout::Gpu => desc.tile_kernel(),
            Layout::Cpu => TileKernel::Cells,
        }
        .source()
        .key
        .to_string(),
        shape: [desc.m, desc.k, desc.n],
        max_abs_err: worst.max_abs as f32,
        tolerance,
        passed: worst.ratio <= 1.0,
        millis,
    })
}
