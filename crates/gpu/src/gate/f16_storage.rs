//! The first gated path: forward linears read f16-packed weights
//! (`pack2x16float` / `unpack2x16float`, core WGSL, so every WebGPU device
//! can try it) and accumulate in f32.
//!
//! The gate (1) measures whether the GPU's f32 → f16 conversion is
//! round-to-nearest-even bit for bit, which decides GPU or CPU packing;
//! (2) checks the weights it packs equal `half`'s RNE halves exactly; and
//! (3) compares the f16-weight matmul with the f32 matmul at M=64, K=128,
//! N=128 plus K=256, K=1024, K=vocab and the M=1 decode shape, inputs
//! seeded uniform in [−0.2, 0.2]. Any failure rejects the path.

use super::decoder_cases::decoder_cases;
use super::framework::{headline, uniform, FastPath, GateFuture, GateOptions};
pub use super::packing::Packer;
use super::packing::{halves, mismatched_halves, same_half};
use super::stats::{error_distribution, gate_stats};
use crate::model::FastPaths;
use crate::ops::matmul::f16w::F16Storage;
use crate::ops::matmul::f16w::{bind_matmul_f16w, half_bits, packed_words, PackedW};
use crate::ops::matmul::Fault;
use crate::ops::matmul::{matmul_once, MatmulDesc};
use crate::ops::View;
use crate::{GpuContext, GpuError, PipelineRegistry};
use tinygpt_core::Rng;
use tinygpt_protocol::{GateCase, GateReport, PackCheck};

pub const PATH: FastPath = FastPath {
    id: "f16_storage",
    label: "f16-storage",
    pill: "+f16 storage",
    status: "f16-storage matmul active",
    active_note: ACTIVE_NOTE,
    // pack2x16float / unpack2x16float are core WGSL: nothing to detect
    // beyond a working device. The gate decides.
    missing: |_| None,
    gate: gate_boxed,
    speed: super::f16_speed::speed_boxed,
    activate,
    deactivate: |fast| fast.f16_storage = None,
    carries: |_| true,
};

/// What the passing headline ends with.
const ACTIVE_NOTE: &str = "f16 path active";

/// Seed of the gate's inputs.
const GATE_SEED: u64 = 0x16_57_0A_6E;

fn gate_boxed<'a>(
    ctx: &'a GpuContext,
    reg: &'a mut PipelineRegistry,
    opts: GateOptions,
) -> GateFuture<'a> {
    Box::pin(gate(ctx, reg, opts))
}

fn activate(report: &GateReport, fault: Option<Fault>, active: &mut FastPaths) {
    active.f16_storage = Some(F16Storage {
        pack_on_gpu: report.pack.as_ref().is_some_and(|p| p.pack_on_gpu),
        fault,
        training: report.speed_training.as_ref().is_none_or(|s| s.faster()),
    });
}

/// The rounding sweep: exact ties (odd and even mantissas, both signs),
/// subnormals and their ties, the overflow edge (65519 → 65504,
/// 65520 → inf), infinities, NaN, and a seeded spread of ordinary values.
pub fn rounding_sweep() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        1.0 + 2f32.powi(-11),       // tie, even below → 1.0
        1.0 + 3.0 * 2f32.powi(-11), // tie, odd below → up
        -(1.0 + 2f32.powi(-11)),
        -(1.0 + 3.0 * 2f32.powi(-11)),
        1.0 + 2f32.powi(-11) + 2f32.powi(-20), // just above a tie
        2048.0 + 1.0,                          // tie at ulp 2 → 2048
        2048.0 + 3.0,                          // tie → 2052
        2f32.powi(-24),                        // smallest subnormal
        2f32.powi(-25),                        // tie with zero → 0
        3.0 * 2f32.powi(-25),                  // tie, odd → 2^-23
        2f32.powi(-26),                        // rounds to 0
        -(3.0 * 2f32.powi(-25)),
        2f32.powi(-14),                  // smallest normal
        2f32.powi(-14) - 2f32.powi(-25), // tie between subnormal max and min normal
        6.1e-5,
        65504.0,
        65519.0, // → 65504
        65520.0, // tie past the max → inf
        -65520.0,
        1e6,
        f32::MAX,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    let mut rng = Rng::new(0xF16);
    v.extend((0..4096).map(|i| {
        let x = rng.uniform(-1.0, 1.0);
        x * 2f32.powi(i % 40 - 26)
    }));
    v
}

/// Measures the GPU's `pack2x16float` against `half`'s RNE on the sweep.
pub async fn check_gpu_packing(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
) -> Result<PackCheck, GpuError> {
    let sweep = rounding_sweep();
    let gpu = Packer {
        on_gpu: true,
        fault: None,
    }
    .pack(ctx, reg, &sweep)
    .await?;
    let bytes = ctx
        .read_bytes(&gpu, (packed_words(sweep.len()) * 4) as u64)
        .await?;
    let words: &[u32] = bytemuck::cast_slice(&bytes);
    let mut examples = Vec::new();
    let mut mismatches = 0;
    for (&x, got) in sweep.iter().zip(halves(words)) {
        let want = half_bits(x, None);
        if !same_half(got, want) {
            mismatches += 1;
            if examples.len() < 8 {
                examples.push(format!("{x:e}: gpu 0x{got:04x} want 0x{want:04x}"));
            }
        }
    }
    let pack_on_gpu = mismatches == 0;
    let reason = if pack_on_gpu {
        format!(
            "pack2x16float matched round-to-nearest-even on all {} values (ties, subnormals, overflow, NaN): packing on the GPU",
            sweep.len()
        )
    } else {
        format!(
            "pack2x16float differs from round-to-nearest-even on {mismatches} of {} values: packing on the CPU",
            sweep.len()
        )
    };
    Ok(PackCheck {
        checked: sweep.len(),
        mismatches,
        examples,
        pack_on_gpu,
        reason,
    })
}

/// What one comparison of the f16-weight matmul against the f32 matmul found.
pub struct CaseResult {
    pub case: GateCase,
    /// Packed halves that differ from `half`'s RNE of the f32 weights.
    pub pack_mismatches: usize,
}

/// Which f16-weight kernel a case runs: a test-only fault, and whether it
/// multiplies in f16 compute (`f16_compute`'s gate) or f32.
#[derive(Clone, Copy, Debug, Default)]
pub struct F16Kernel {
    pub fault: Option<Fault>,
    pub compute: bool,
}

impl From<Option<Fault>> for F16Kernel {
    /// The f16-storage kernel with `fault`.
    fn from(fault: Option<Fault>) -> Self {
        Self {
            fault,
            compute: false,
        }
    }
}

/// Runs `x · Wᵀ [+ bias]` on the f16-weight kernel (weights packed by
/// `packer`) and on the f32 kernel, and compares. `kernel` selects f16
/// compute or storage and a test-only kernel variant.
#[allow(clippy::too_many_arguments)]
pub async fn compare_case(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    name: &str,
    packer: Packer,
    kernel: impl Into<F16Kernel>,
    desc: MatmulDesc,
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    real_weights: bool,
) -> Result<CaseResult, GpuError> {
    let desc = MatmulDesc {
        bias: bias.is_some(),
        ..desc
    };
    let reference = matmul_once(ctx, reg, desc, x, w, bias).await?;
    let packed = packer.pack(ctx, reg, w).await?;
    let bytes = ctx.read_bytes(&packed, packed.size()).await?;
    let words: &[u32] = bytemuck::cast_slice(&bytes);
    let pack_mismatches = mismatched_halves(w, words);
    let x_buf = ctx.upload("gate_x", x)?;
    let b_buf = bias.map(|b| ctx.upload("gate_bias", b)).transpose()?;
    let out = ctx.zeros("gate_out", (desc.m * desc.n) as usize)?;
    let kernel: F16Kernel = kernel.into();
    let w = PackedW {
        fault: kernel.fault,
        compute: kernel.compute,
        ..PackedW::at(&packed, 0)
    };
    let b_view = b_buf.as_ref().map(View::from);
    let k = bind_matmul_f16w(ctx, reg, desc, &x_buf, w, b_view, &out)?;
    crate::kernel::submit(ctx, "gate_f16w", &[&k]);
    let got = ctx.read_f32(&out, (desc.m * desc.n) as usize).await?;
    Ok(CaseResult {
        case: GateCase {
            name: name.into(),
            shape: [desc.m, desc.k, desc.n],
            real_weights,
            stats: gate_stats(&got, &reference),
            distribution: error_distribution(&got, &reference),
        },
        pack_mismatches,
    })
}

/// One case of the gate: `x (M, K) · Wᵀ (K, N)`, with a bias or not.
pub struct GateShape {
    pub name: String,
    pub m: u32,
    pub k: u32,
    pub n: u32,
    pub bias: bool,
}

/// The gate's shapes, the seed's primary first: a bare matmul at
/// M=64 K=128 N=128 exactly as seed 000 specifies, then the same with a
/// bias, then shapes whose K ends in a partial tile of every kernel (K
/// not a multiple of 16, the tiled kernel's step and the drop-tail fault's
/// unit), so a dropped tail shows in the tiled kernel and in both GEMVs
/// (rows aligned to four halves, and not).
pub fn gate_shapes(vocab: u32) -> Vec<GateShape> {
    let shape = |name: String, m, k, n, bias| GateShape {
        name,
        m,
        k,
        n,
        bias,
    };
    vec![
        shape("primary".into(), 64, 128, 128, false),
        shape("primary + bias".into(), 64, 128, 128, true),
        shape("K=264 (inference)".into(), 64, 264, 128, true),
        shape("K=1032 (training)".into(), 64, 1032, 128, true),
        shape(format!("K=vocab={vocab} (head)"), 64, vocab, 128, true),
        shape(
            "M=1 K=136 (decode GEMV, aligned rows)".into(),
            1,
            136,
            128,
            true,
        ),
        shape(
            "M=1 K=131 (decode GEMV, any rows)".into(),
            1,
            131,
            128,
            true,
        ),
    ]
}

/// One detail console line per case; a failing case says why.
pub fn case_line(label: &str, c: &GateCase) -> String {
    let [m, k, n] = c.shape;
    let s = &c.stats;
    format!(
        "[ops] {label} gate {} {m}×{k}×{n}: mean|ref|={:.2e}, max_abs={:.2e} (limit {:.2e}), mean_rel={:.3}%, max_rel={:.2}%, rel_l2={:.2e}, cos={:.6} — {}",
        c.name,
        s.mean_abs_ref,
        s.max_abs_err,
        s.abs_limit,
        s.mean_rel_err * 100.0,
        s.max_rel_err * 100.0,
        c.distribution.rel_l2,
        c.distribution.cosine,
        if s.passed {
            "PASS".to_string()
        } else {
            format!("FAIL ({})", failure_reason(c))
        }
    )
}

/// Limits on a real-weight case beyond the seed's two: the output's
/// relative L2 error and its cosine with the f32 output. f16 storage
/// rounds each weight by at most 2⁻¹¹ relative (RMS about 2.8e-4), and an
/// output's relative L2 error from such independent roundings is about
/// that RMS (1.6e-4 to 2.0e-4 measured on the random gate shapes): 1e-3
/// leaves 4–5× headroom while a systematic error of a few f16 ulps, or any
/// lost term, exceeds it. 1 − cos ≈ rel_l2²/2, so 5e-7 at that limit; 1e-5
/// refuses an output pointing elsewhere.
pub const REAL_REL_L2_LIMIT: f64 = 1e-3;
pub const REAL_COSINE_LIMIT: f64 = 1.0 - 1e-5;

/// Why a case failed, in the terms of the seed's two thresholds.
pub fn failure_reason(c: &GateCase) -> String {
    let s = &c.stats;
    let mut why = Vec::new();
    if s.non_finite > 0 {
        why.push(format!("{} non-finite outputs", s.non_finite));
    }
    if s.max_abs_err >= s.abs_limit || s.max_abs_err.is_nan() {
        why.push(format!(
            "max_abs {:.2e} ≥ limit {:.2e}",
            s.max_abs_err, s.abs_limit
        ));
    }
    if s.mean_rel_err >= s.rel_limit || s.mean_rel_err.is_nan() {
        why.push(format!(
            "mean_rel {:.3}% ≥ limit {:.3}%",
            s.mean_rel_err * 100.0,
            s.rel_limit * 100.0
        ));
    }
    let d = &c.distribution;
    if c.real_weights && d.rel_l2 >= REAL_REL_L2_LIMIT {
        why.push(format!(
            "rel_l2 {:.2e} ≥ limit {:.0e}",
            d.rel_l2, REAL_REL_L2_LIMIT
        ));
    }
    if c.real_weights && d.cosine <= REAL_COSINE_LIMIT {
        why.push(format!(
            "cos {:.7} ≤ limit {:.5}",
            d.cosine, REAL_COSINE_LIMIT
        ));
    }
    if why.is_empty() {
        why.push("packed weights differ from round-to-nearest-even".into());
    }
    why.join(", ")
}

/// Each of `shapes` on seeded U[−0.2, 0.2] operands (seed 000, drawn in
/// this order) through `kernel`, compared with f32; with the packed
/// halves that differ from RNE, summed.
pub(super) async fn random_cases(
    ctx: &GpuContext,
    reg: &mut PipelineRegistry,
    (packer, kernel): (Packer, F16Kernel),
    shapes: Vec<GateShape>,
    rng: &mut Rng,
) -> Result<(Vec<GateCase>, usize), GpuError> {
    let (mut cases, mut pack_mismatches) = (Vec::new(), 0);
    for GateShape {
        name,
        m,
        k,
        n,
        bias,
    } in shapes
    {
        let desc = MatmulDesc::linear(m, k, n);
        let (x, w) = (uniform(rng, m * k), uniform(rng, n * k));
        let b = bias.then(|| uniform(rng, n));
        let b = b.as_deref();
        let r = compare_case(ctx, reg, &name, packer, kernel, desc, &x, &w, b, false).await?;
        pack_mismatches += r.pack_mismatches;
        cases.push(r.case);
    }
    Ok((cases, pack_mismatches))
}

/// The whole f16-storage gate on random seeded inputs.
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
    let mut rng = Rng::new(GATE_SEED);
    let shapes = gate_shapes(opts.vocab);
    let (mut cases, mut pack_mismatches) =
        random_cases(ctx, reg, (packer, opts.fault.into()), shapes, &mut rng).await?;
    // The decoder's fused forms of the M = 1 GEMV on this device.
    for (case, mismatches) in decoder_cases(ctx, reg, packer, opts.fault, &mut rng).await? {
        pack_mismatches += mismatches;
        cases.push(case);
    }
    let millis = (opts.now_ms)() - t0;
    Ok(case_report(&PATH, cases, pack, pack_mismatches, millis))
}

/// A gate's report from its cases and the packing check: the headline
/// (with why, on a FAIL), a line per case, the packing lines.
pub(super) fn case_report(
    path: &FastPath,
    cases: Vec<GateCase>,
    pack: PackCheck,
    pack_mismatches: usize,
    millis: f64,
) -> GateReport {
    let passed = pack_mismatches == 0 && cases.iter().all(|c| c.stats.passed);
    let mut head = headline(path.label, &cases[0].stats, passed, path.active_note);
    if !passed {
        // A FAIL says why: each failing case, and the packing.
        let mut why: Vec<String> = cases
            .iter()
            .filter(|c| !c.stats.passed)
            .map(|c| format!("{}: {}", c.name, failure_reason(c)))
            .collect();
        if pack_mismatches > 0 {
            why.push(format!(
                "{pack_mismatches} packed halves differ from round-to-nearest-even"
            ));
        }
        head.push_str(&format!(" ({})", why.join("; ")));
    }
    let mut lines = vec![head];
    lines.extend(cases.iter().map(|c| case_line(path.label, c)));
    lines.push(format!("[ops] {} packing: {}", path.label, pack.reason));
    lines.push(format!(
        "[ops] {} packed weights vs round-to-nearest-even: {pack_mismatches} mismatched halves — {}",
        path.label,
        if pack_mismatches == 0 { "PASS" } else { "FAIL" }
    ));
    GateReport {
        detected: true,
        passed,
        cases,
        pack: Some(pack),
        lines,
        millis,
        ..Default::default()
    }
}
