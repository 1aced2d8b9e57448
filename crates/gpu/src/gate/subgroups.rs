//! The subgroups path (native; wgpu's WebGPU backend has none): the
//! decoder's GEMVs — f32 and f16-storage, plain and with the LayerNorm
//! prologue, the tied head included — sum each column's 32 lanes with
//! subgroup shuffles (`shaders/lanes_sg.wgsl`) instead of a tree in
//! workgroup memory behind a barrier (`shaders/lanes_wg.wgsl`). The
//! shuffles add the same pairs in the same order, so the path claims the
//! same bits, and its gate holds it to that: every case runs the GEMV both
//! ways on the same seeded inputs and passes only if every output is
//! bit-identical (stricter than the seed's thresholds, which its headline
//! still reports). The cases cover what the decoder binds: one row and
//! several (each row's bits its own), K with whole and partial rounds,
//! LayerNorm + GELU, residual adds, a LayerNorm GEMV wide enough to run two
//! column groups a workgroup, f16 weights aligned and not. A device whose
//! subgroups are not laid out as the shuffles assume gives NaN (the
//! kernel checks each shuffle's source lane) and fails.
//!
//! The f16-storage cases run the test-only kernel fault on the subgroup
//! side (the f16 accumulator, the dropped K tail), so those faults fail
//! the gate; packing faults do not reach it (both sides read the same
//! halves). The speed gate times a decode step's linears at the speed
//! shape: the f32 GEMVs as the decoder binds them on this device (the
//! column layout on a CPU implementation, where the subgroup form cannot
//! win) against the same linears summing with subgroups.

use super::f16_storage::failure_reason;
use super::framework::{headline, uniform, FastPath, GateFuture, GateOptions, SpeedFuture};
use super::framework::{SpeedShape, Speeds};
use super::speed::{time_pair, SpeedUnit};
use super::stats::{error_distribution, gate_stats};
use crate::kernel::BoundKernel;
use crate::ops::matmul::f16w::{bind_gemv_f16w, pack_cpu, PackedW};
use crate::ops::matmul::{bind_gemv, Fault, MatmulDesc, RowFusion};
use crate::ops::View;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;
use tinygpt_protocol::{GateCase, GateReport};

pub const PATH: FastPath = FastPath {
    id: "subgroups",
    label: "subgroups",
    pill: "+subgroups",
    status: "subgroup GEMV sums active",
    active_note: ACTIVE_NOTE,
    missing: |ctx| ctx.subgroup_size().err(),
    gate: gate_boxed,
    speed: speed_boxed,
    activate: |_, _, fast| fast.subgroups = true,
    deactivate: |fast| fast.subgroups = false,
    carries,
};

const ACTIVE_NOTE: &str = "subgroup sums active";

/// Seed of the gate's operands.
const GATE_SEED: u64 = 0x5B_6A_7E;

/// The test-only faults the subgroup kernels carry: the f16-storage
/// GEMVs' kernel faults (both sides read the same packed halves).
pub fn carries(fault: Fault) -> bool {
    #[cfg(feature = "fault-injection")]
    return matches!(fault, Fault::F16Accumulate | Fault::DropKTail);
    #[cfg(not(feature = "fault-injection"))]
    match fault {}
}

fn gate_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> GateFuture<'a> {
    Box::pin(gate(ctx, reg, opts))
}

fn speed_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> SpeedFuture<'a> {
    Box::pin(speed(ctx, reg, opts))
}

/// Which weights a case's GEMV reads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Weights {
    F32,
    /// f16 storage, rows and input aligned to four halves.
    F16Aligned,
    /// f16 storage at an odd offset (the any-alignment kernel).
    F16Any,
}

/// One GEMV form: rows M, K, N, and what is folded around it.
struct Case {
    name: &'static str,
    shape: [u32; 3],
    weights: Weights,
    layernorm: bool,
    gelu: bool,
    residual: bool,
}

fn cases() -> Vec<Case> {
    use Weights::*;
    let case = |name, shape, weights, (layernorm, gelu, residual)| Case {
        name,
        shape,
        weights,
        layernorm,
        gelu,
        residual,
    };
    vec![
        case(
            "f32 K=136 + bias",
            [1, 136, 131],
            F32,
            (false, false, false),
        ),
        case(
            "f32 LayerNorm + GELU, K=131",
            [1, 131, 133],
            F32,
            (true, true, false),
        ),
        case(
            "f32 3 rows + residual, K=520",
            [3, 520, 72],
            F32,
            (false, false, true),
        ),
        case(
            "f32 3 rows LayerNorm, K=520",
            [3, 520, 40],
            F32,
            (true, false, false),
        ),
        case(
            "f32 LayerNorm, 2 column groups",
            [5, 64, 1030],
            F32,
            (true, false, false),
        ),
        case(
            "f16 aligned LayerNorm + GELU",
            [1, 136, 128],
            F16Aligned,
            (true, true, false),
        ),
        case(
            "f16 any LayerNorm, K=131",
            [1, 131, 96],
            F16Any,
            (true, false, false),
        ),
        case(
            "f16 2 rows + residual",
            [2, 264, 64],
            F16Aligned,
            (false, false, true),
        ),
    ]
}

/// Runs a case's GEMV with the lanes summed in workgroup memory and with
/// subgroups of `size` (the latter under `fault`); the case and how many
/// outputs differ in any bit.
async fn run_case(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    (case, size, fault): (&Case, u32, Option<Fault>),
    rng: &mut Rng,
) -> Result<(GateCase, usize), GpuError> {
    let [m, k, n] = case.shape;
    let (x, w, b, c0) = (
        uniform(rng, m * k),
        uniform(rng, n * k),
        uniform(rng, n),
        uniform(rng, m * n),
    );
    let ln: Vec<f32> = (0..2 * k)
        .map(|i| (i < k) as u32 as f32 + rng.uniform(-0.2, 0.2))
        .collect();
    let desc = MatmulDesc {
        accumulate: case.residual,
        ..MatmulDesc::linear(m, k, n)
    };
    let (x_buf, b_buf, ln_buf) = (
        ctx.upload("sg_gate_x", &x)?,
        ctx.upload("sg_gate_b", &b)?,
        ctx.upload("sg_gate_ln", &ln)?,
    );
    let (want_buf, got_buf) = (ctx.upload("sg_want", &c0)?, ctx.upload("sg_got", &c0)?);
    let tree = RowFusion {
        layernorm: case
            .layernorm
            .then(|| (View::at(&ln_buf, 0), View::at(&ln_buf, k))),
        gelu: case.gelu,
        ..RowFusion::default()
    };
    let sg = RowFusion {
        subgroups: Some(size),
        ..tree
    };
    let bias = Some(View::from(&b_buf));
    let kernels = match case.weights {
        Weights::F32 => {
            let w_buf = ctx.upload("sg_gate_w", &w)?;
            [
                bind_gemv(ctx, reg, desc, &x_buf, &w_buf, bias, tree, &want_buf)?,
                bind_gemv(ctx, reg, desc, &x_buf, &w_buf, bias, sg, &got_buf)?,
            ]
        }
        f16 => {
            // The any-alignment kernel: the row starts at half 1.
            let at = (f16 == Weights::F16Any) as u32;
            let mut halves = vec![0.0; at as usize];
            halves.extend(&w);
            let words = pack_cpu(&halves, None);
            let packed = ctx.upload_bytes("sg_gate_w16", bytemuck::cast_slice(&words))?;
            let real = PackedW::at(&packed, at);
            let faulty = PackedW { fault, ..real };
            [
                bind_gemv_f16w(ctx, reg, desc, &x_buf, real, bias, tree, &want_buf)?,
                bind_gemv_f16w(ctx, reg, desc, &x_buf, faulty, bias, sg, &got_buf)?,
            ]
        }
    };
    crate::kernel::submit(ctx, "subgroups_gate", &kernels.iter().collect::<Vec<_>>());
    let want = ctx.read_f32(&want_buf, (m * n) as usize).await?;
    let got = ctx.read_f32(&got_buf, (m * n) as usize).await?;
    let differ = got
        .iter()
        .zip(&want)
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count();
    let mut stats = gate_stats(&got, &want);
    stats.passed &= differ == 0;
    let case = GateCase {
        name: case.name.into(),
        shape: case.shape,
        real_weights: false,
        stats,
        distribution: error_distribution(&got, &want),
    };
    Ok((case, differ))
}

/// A case's console line: how many outputs are bit-identical.
fn case_line(c: &GateCase, differ: usize) -> String {
    let [m, k, n] = c.shape;
    let total = (m * n) as usize;
    let verdict = match (differ, c.stats.passed) {
        (0, true) => "PASS".to_string(),
        (0, false) => format!("FAIL ({})", failure_reason(c)),
        _ => format!(
            "FAIL ({differ} differ; max_abs={:.2e})",
            c.stats.max_abs_err
        ),
    };
    format!(
        "[ops] {} gate {} {m}×{k}×{n}: {} of {total} outputs bit-identical to the workgroup-memory sums — {verdict}",
        PATH.label,
        c.name,
        total - differ,
    )
}

/// The whole subgroups gate on seeded inputs.
pub async fn gate(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> Result<GateReport, GpuError> {
    let t0 = (opts.now_ms)();
    let size = ctx.subgroup_size().map_err(|why| GpuError::Shape {
        op: "subgroups gate",
        detail: why.into(),
    })?;
    let mut rng = Rng::new(GATE_SEED);
    let mut run = Vec::new();
    for case in cases() {
        run.push(run_case(ctx, reg, (&case, size, opts.fault), &mut rng).await?);
    }
    let passed = run.iter().all(|(c, _)| c.stats.passed);
    let mut head = headline(PATH.label, &run[0].0.stats, passed, ACTIVE_NOTE);
    let differ: usize = run.iter().map(|(_, d)| d).sum();
    let total: u32 = run.iter().map(|(c, _)| c.shape[0] * c.shape[2]).sum();
    head.push_str(&format!(
        " ({} of {total} outputs bit-identical, subgroups of {size})",
        total as usize - differ
    ));
    let mut lines = vec![head];
    lines.extend(run.iter().map(|(c, d)| case_line(c, *d)));
    Ok(GateReport {
        detected: true,
        passed,
        cases: run.into_iter().map(|(c, _)| c).collect(),
        lines,
        millis: (opts.now_ms)() - t0,
        ..Default::default()
    })
}

/// Binds a decode step's linears at `shape` (per layer: QKV and fc with
/// the LayerNorm folded in, fc with GELU, both projections adding into
/// the residual row), each layer its own weights, with `fusion`'s lanes;
/// on a CPU device the f32 side runs the column layout (its LayerNorms,
/// kernels of their own there, are left out).
fn bind_step(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    shape: SpeedShape,
    (w, ln, x, y): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    subgroups: Option<u32>,
) -> Result<Vec<BoundKernel>, GpuError> {
    let c = shape.width;
    let columns = ctx.cpu_device && subgroups.is_none();
    let ln = (!columns).then(|| (View::at(ln, 0), View::at(ln, c)));
    let mut out = Vec::new();
    let mut at = 0;
    for _ in 0..shape.layers {
        for (k, n, norm, gelu, add) in [
            (c, 3 * c, true, false, false),
            (c, c, false, false, true),
            (c, 4 * c, true, true, false),
            (4 * c, c, false, false, true),
        ] {
            let fusion = RowFusion {
                layernorm: ln.filter(|_| norm),
                gelu,
                columns,
                subgroups,
            };
            let desc = MatmulDesc {
                accumulate: add,
                bias: false,
                ..MatmulDesc::linear(1, k, n)
            };
            let wv = View::at(w, at);
            out.push(bind_gemv(ctx, reg, desc, x, wv, None, fusion, y)?);
            at += k * n;
        }
    }
    Ok(out)
}

/// Times a decode step's linears with and without subgroup sums.
async fn speed(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> Result<Speeds, GpuError> {
    let shape = opts.speed_shape;
    let SpeedShape { width: c, layers } = shape;
    let size = ctx.subgroup_size().map_err(|why| GpuError::Shape {
        op: "subgroups speed gate",
        detail: why.into(),
    })?;
    let mut rng = Rng::new(GATE_SEED);
    let w = ctx.upload("sg_speed_w", &uniform(&mut rng, layers * 12 * c * c))?;
    let ln = ctx.upload("sg_speed_ln", &uniform(&mut rng, 2 * c))?;
    let x = ctx.upload("sg_speed_x", &uniform(&mut rng, 4 * c))?;
    let y = ctx.zeros("sg_speed_y", 4 * c as usize)?;
    let bufs = (&w, &ln, &x, &y);
    let (tree, sg) = (
        bind_step(ctx, reg, shape, bufs, None)?,
        bind_step(ctx, reg, shape, bufs, Some(size))?,
    );
    let work = SpeedUnit {
        what: format!("decode step's f32 GEMVs, {layers} layers at C={c}"),
        unit: "token",
        f32_path: tree.iter().collect(),
        fast_path: sg.iter().collect(),
    };
    let mut activation = time_pair(ctx, opts.now_ms, &work, &y).await?;
    activation.shape = [c, layers];
    Ok(Speeds {
        activation,
        training: None,
    })
}
