//! The subgroups path (native; wgpu's WebGPU backend has none): the
//! decoder's GEMVs — f32 and f16-storage, plain and with the LayerNorm
//! prologue, the tied head included — sum each column's 32 lanes with
//! subgroup shuffles (`shaders/lanes_sg.wgsl`) instead of a tree in
//! workgroup memory behind a barrier (`shaders/lanes_wg.wgsl`), and the
//! decode attention takes its scores' max and sum the same way
//! (`shaders/reduce_sg.wgsl` for `reduce_wg.wgsl`: 3 barriers a reduction
//! against the workgroup tree's 2, which instead reads eight nodes from
//! workgroup memory in every invocation). The shuffles add the same pairs
//! in the same order, so the path claims the same bits, and its gate holds
//! it to that: every case runs the kernel both ways on the same seeded
//! inputs and passes only if every output is bit-identical (stricter than
//! the seed's thresholds, which its headline still reports). The cases
//! cover what the decoder binds: one row and several (each row's bits its
//! own), K with whole and partial rounds, LayerNorm + GELU, residual adds,
//! a LayerNorm GEMV wide enough to run two column groups a workgroup, f16
//! weights aligned and not; attention at head sizes 64 and 32, over one
//! chunk of 256 positions and two, one sample and two. A device whose
//! subgroups are not laid out as the shuffles assume gives NaN (the kernels
//! check each shuffle's source lane) and fails.
//!
//! The f16-storage cases run the test-only kernel fault on the subgroup
//! side (the f16 accumulator, the dropped K tail), so those faults fail
//! the gate; packing faults do not reach it (both sides read the same
//! halves). The speed gate times greedy decoding of a model of the speed
//! shape with and without the path, as sampling runs it. On a CPU implementation the decoder
//! runs the column layout, which has no lanes: the path would change
//! nothing there, and the speed gate says so and leaves it off.

use super::f16_storage::failure_reason;
use super::framework::{headline, uniform, FastPath, GateFuture, GateOptions, SpeedFuture};
use super::framework::{SpeedShape, Speeds};
use super::speed::{record_round, unmeasured, SPEED_ROUNDS};
use super::stats::{error_distribution, gate_stats};
use crate::engine::{generate_greedy, EngineError};
use crate::model::{DecoderKernels, FastPaths, GpuModel};
use crate::ops::adamw::OptState;
use crate::ops::attention::{
    bind_attention_decode, decode_position_buffer, set_decode_position, DecodeDesc, KvCache,
};
use crate::ops::matmul::f16w::{bind_gemv_f16w, pack_cpu, PackedW};
use crate::ops::matmul::{bind_gemv, Fault, MatmulDesc, RowFusion};
use crate::ops::View;
use crate::{GpuContext, GpuError, PipelineRegistry};
use std::ops::ControlFlow;
use tinygpt_core::{init_params, ModelConfig, Rng, TrainConfig};
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
    Ok(compared(case.name, case.shape, &got, &want))
}

/// One decode-attention case: width, heads, samples, the query's position
/// and the cache's positions.
struct AttentionCase {
    name: &'static str,
    c: u32,
    nh: u32,
    batch: u32,
    position: u32,
    t_max: u32,
}

fn attention_cases() -> Vec<AttentionCase> {
    let case = |name, [c, nh, batch, position, t_max]: [u32; 5]| AttentionCase {
        name,
        c,
        nh,
        batch,
        position,
        t_max,
    };
    vec![
        case("attention HS=64, position 37", [128, 2, 1, 37, 64]),
        case("attention HS=32, 2 samples, 2 chunks", [96, 3, 2, 300, 320]),
        case("attention HS=64, 2 whole chunks", [64, 1, 1, 511, 512]),
    ]
}

/// Runs a decode attention over a seeded cache with its reductions in
/// workgroup memory and with subgroups of `size`; the case (shape: samples,
/// positions attended, C) and how many outputs differ in any bit.
async fn run_attention(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    (case, size): (&AttentionCase, u32),
    rng: &mut Rng,
) -> Result<(GateCase, usize), GpuError> {
    let desc = DecodeDesc {
        c: case.c,
        nh: case.nh,
        t_max: case.t_max,
        batch: case.batch,
    };
    let cache = KvCache::new(ctx, desc)?;
    let len = desc.cache_len() as u32;
    for buf in [&cache.k, &cache.v] {
        let values = uniform(rng, len);
        ctx.queue
            .write_buffer(buf, 0, bytemuck::cast_slice(&values));
    }
    let qkv = ctx.upload("sg_gate_qkv", &uniform(rng, 3 * case.c * case.batch))?;
    let position = decode_position_buffer(ctx);
    set_decode_position(ctx, &position, desc, case.position)?;
    let n = (case.c * case.batch) as usize;
    let (want_buf, got_buf) = (ctx.zeros("sg_att_want", n)?, ctx.zeros("sg_att_got", n)?);
    let bind = |reg: &mut PipelineRegistry, sg, out| {
        bind_attention_decode(ctx, reg, (false, sg), desc, &position, &qkv, &cache, out)
    };
    let kernels = [
        bind(reg, None, &want_buf)?,
        bind(reg, Some(size), &got_buf)?,
    ];
    crate::kernel::submit(
        ctx,
        "subgroups_gate_attention",
        &kernels.iter().collect::<Vec<_>>(),
    );
    let want = ctx.read_f32(&want_buf, n).await?;
    let got = ctx.read_f32(&got_buf, n).await?;
    Ok(compared(
        case.name,
        [case.batch, case.position + 1, case.c],
        &got,
        &want,
    ))
}

/// The case of outputs `got` against `want`, passing only if every bit
/// agrees; and how many outputs differ.
fn compared(name: &str, shape: [u32; 3], got: &[f32], want: &[f32]) -> (GateCase, usize) {
    let differ = got
        .iter()
        .zip(want)
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count();
    let mut stats = gate_stats(got, want);
    stats.passed &= differ == 0;
    let case = GateCase {
        name: name.into(),
        shape,
        real_weights: false,
        stats,
        distribution: error_distribution(got, want),
    };
    (case, differ)
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
        "[ops] {} gate {} {m}×{k}×{n}: {} of {total} outputs bit-identical to the workgroup-memory form — {verdict}",
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
    for case in attention_cases() {
        run.push(run_attention(ctx, reg, (&case, size), &mut rng).await?);
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

/// Milliseconds for `model`'s decoder to decode `tokens` greedy tokens
/// after one prompt token as sampling does (`engine::generate_greedy`:
/// chunks queued while the host records the next), ids read back.
async fn decode_ms(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    model: &mut GpuModel,
    (tokens, now_ms): (usize, fn() -> f64),
) -> Result<f64, GpuError> {
    let dec = model.decoder_for(ctx, reg, 1)?;
    let t0 = now_ms();
    let go_on = |_| ControlFlow::Continue(());
    match generate_greedy(ctx, dec, &[0], tokens, go_on).await {
        Ok(_) => Ok(now_ms() - t0),
        Err(EngineError::Gpu(e)) => Err(e),
        Err(e) => Err(GpuError::Shape {
            op: "subgroups speed gate",
            detail: e.to_string(),
        }),
    }
}

/// Times greedy decoding — whole token steps, as sampling runs them — of
/// a model of the speed shape (seeded init weights) with the lanes summed
/// in workgroup memory and with subgroups, alternating, after one untimed
/// run of each; the fastest of [`SPEED_ROUNDS`] counts. (The GEMVs alone,
/// back to back, measured 0.87× on the H200 while whole tokens decoded
/// 1–4 % faster: the path is timed on what it changes.)
async fn speed(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    opts: GateOptions,
) -> Result<Speeds, GpuError> {
    if DecoderKernels::for_device(ctx) == DecoderKernels::Columns {
        return Err(GpuError::Shape {
            op: "subgroups speed gate",
            detail: "the decoder here runs the column layout (a CPU implementation), which has no lanes to sum: the path would change nothing".into(),
        });
    }
    let SpeedShape { width: c, layers } = opts.speed_shape;
    let cfg = ModelConfig {
        vocab_size: opts.vocab as usize,
        block_size: 128,
        n_layer: layers as usize,
        n_head: (c as usize / 64).max(1),
        d_model: c as usize,
    };
    let params = init_params(&cfg, 0);
    let mut models = Vec::new();
    for subgroups in [false, true] {
        let mut m = GpuModel::new(
            ctx,
            cfg,
            &params,
            None,
            TrainConfig::default(),
            OptState::default(),
        )?;
        let fast = FastPaths {
            subgroups,
            ..FastPaths::default()
        };
        m.set_fast_paths(ctx, reg, fast)?;
        models.push(m);
    }
    // A context window, less the prompt token and one.
    let tokens = cfg.block_size - 2;
    let workload = format!("greedy decoding, {layers} layers at C={c}, {tokens} tokens");
    let mut check = unmeasured(workload, [c, layers]);
    let run = (tokens, opts.now_ms);
    for round in 0..=SPEED_ROUNDS {
        let f32_ms = decode_ms(ctx, reg, &mut models[0], run).await?;
        let fast_ms = decode_ms(ctx, reg, &mut models[1], run).await?;
        // The first round is the untimed one.
        if round > 0 {
            record_round(&mut check, f32_ms, fast_ms);
        }
    }
    Ok(Speeds {
        activation: check,
        training: None,
    })
}
