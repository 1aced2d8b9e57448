//! The second gated path: f16 compute (shader-f16). The training forward's
//! linears and evaluation multiply with both operands held as f16 in
//! workgroup memory and registers, every product and sum in f32
//! (`ops::matmul::f16c`); the weights are the f16 weight cache's packed
//! halves, repacked each step as for f16 storage.
//!
//! Detection is the adapter's `shader-f16`; a device without it (WebGPU on
//! SwiftShader) reports why and the gate does not run. The gate checks the
//! GPU's packing as f16 storage's does, then compares the f16-compute
//! kernels with the f32 matmul on the random shapes of f16 storage's gate
//! whose M > 1 (one row keeps the f16-storage GEMV, which f16 storage's
//! gate covers) and one 2048 × 2048 output that the 128×128-tile kernel
//! serves, inputs seeded uniform in [−0.2, 0.2]. Rounding A to f16
//! as well as W roughly doubles the error of f16 storage (both operands'
//! roundings add); the seed's thresholds are the same. The speed gate
//! times the training forward (`f16_speed`). Where the GPU's packing is
//! not RNE (packing on the CPU) training stays on f32 — a step repacks
//! inside its own submission — and only evaluation reads the path.

use super::f16_storage::{
    case_report, check_gpu_packing, gate_shapes, random_cases, F16Kernel, GateShape,
};
use super::framework::{FastPath, GateFuture, GateOptions};
use super::packing::Packer;
use crate::model::FastPaths;
use crate::ops::matmul::f16c::{f16_compute_unavailable, F16Compute};
use crate::ops::matmul::Fault;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;
use tinygpt_protocol::GateReport;

pub const PATH: FastPath = FastPath {
    id: "f16_compute",
    label: "f16-compute",
    pill: "+f16 compute",
    status: "f16-compute matmul active",
    active_note: ACTIVE_NOTE,
    missing: f16_compute_unavailable,
    gate: gate_boxed,
    speed: super::f16_speed::compute_speed_boxed,
    activate,
    deactivate: |fast| fast.f16_compute = None,
    carries: |_| true,
};

/// What the passing headline ends with.
const ACTIVE_NOTE: &str = "f16 compute active";

/// Seed of the gate's inputs (its own, so its operands are not f16
/// storage's).
const GATE_SEED: u64 = 0x16_C0_3B_7E;

fn gate_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> GateFuture<'a> {
    Box::pin(gate(ctx, reg, opts))
}

fn activate(report: &GateReport, fault: Option<Fault>, active: &mut FastPaths) {
    let pack_on_gpu = report.pack.as_ref().is_some_and(|p| p.pack_on_gpu);
    active.f16_compute = Some(F16Compute { pack_on_gpu, fault });
}

/// The whole f16-compute gate on random seeded inputs.
pub async fn gate(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> Result<GateReport, GpuError> {
    let t0 = (opts.now_ms)();
    let pack = check_gpu_packing(ctx, reg).await?;
    let packer = Packer {
        on_gpu: pack.pack_on_gpu,
        fault: opts.fault,
    };
    let kernel = F16Kernel {
        fault: opts.fault,
        compute: true,
    };
    let mut rng = Rng::new(GATE_SEED);
    let mut shapes: Vec<GateShape> = gate_shapes(opts.vocab)
        .into_iter()
        .filter(|s| s.m > 1)
        .collect();
    // An output the 128×128-tile kernel serves, with K ending in a partial
    // step of its 8 and of the fault's 16.
    shapes.push(GateShape {
        name: "M=2048 N=2048 K=40 (128×128 tiles)".into(),
        m: 2048,
        k: 40,
        n: 2048,
        bias: true,
    });
    let (cases, pack_mismatches) =
        random_cases(ctx, reg, (packer, kernel), shapes, &mut rng).await?;
    let millis = (opts.now_ms)() - t0;
    let mut report = case_report(&PATH, cases, pack, pack_mismatches, millis);
    if !report.pack.as_ref().is_some_and(|p| p.pack_on_gpu) {
        report.lines.push(format!(
            "[ops] {}: packing on the CPU here, so training stays on f32 (a step repacks inside its own submission); evaluation reads it",
            PATH.label
        ));
    }
    Ok(report)
}
