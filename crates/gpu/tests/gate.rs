//! The f16-storage gate on the local adapter: the GPU's f32 → f16 rounding
//! check, the real kernel passing every shape, each fault variant failing
//! it, and the f16-accumulator overflow of issue 003 caught.

use tinygpt_core::Rng;
use tinygpt_gpu::gate::f16_storage::{check_gpu_packing, compare_case, gate, Packer};
use tinygpt_gpu::gate::{run_gates, Fault, GateOptions, DEFAULT_VOCAB};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::ops::matmul::f16w::{half_bits, pack_cpu};
use tinygpt_gpu::ops::matmul::{matmul_reference, MatmulDesc};

fn now_ms() -> f64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e3
}

fn opts(fault: Option<Fault>) -> GateOptions {
    GateOptions {
        fault,
        vocab: DEFAULT_VOCAB,
        now_ms,
    }
}

#[test]
fn cpu_packing_rounds_to_nearest_even_with_overflow_and_nan() {
    let one_tie = 1.0 + 2f32.powi(-11);
    assert_eq!(half_bits(one_tie, None), 0x3c00, "tie to even (down)");
    assert_eq!(
        half_bits(1.0 + 3.0 * 2f32.powi(-11), None),
        0x3c02,
        "tie to even (up)"
    );
    assert_eq!(half_bits(65519.0, None), 0x7bff);
    assert_eq!(half_bits(65520.0, None), 0x7c00);
    assert_eq!(half_bits(2f32.powi(-25), None), 0x0000);
    assert_eq!(half_bits(3.0 * 2f32.powi(-25), None), 0x0002);
    let nan = half_bits(f32::NAN, None);
    assert!(nan & 0x7c00 == 0x7c00 && nan & 0x3ff != 0);
    // Truncation rounds toward zero, including at the overflow edge.
    assert_eq!(
        half_bits(1.0 + 3.0 * 2f32.powi(-11), Some(Fault::TruncatePack)),
        0x3c01
    );
    assert_eq!(half_bits(65520.0, Some(Fault::TruncatePack)), 0x7bff);
    assert_eq!(
        pack_cpu(&[1.0, -2.0, 0.5], None),
        vec![0xc000_3c00, 0x0000_3800]
    );
}

#[test]
fn gpu_packing_check_runs_and_explains_its_choice() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let check = pollster::block_on(check_gpu_packing(&gpu.ctx, &mut reg)).unwrap();
    eprintln!("{check:#?}");
    assert!(check.checked > 4000);
    assert_eq!(check.pack_on_gpu, check.mismatches == 0);
    assert!(!check.reason.is_empty());
}

#[test]
fn the_real_kernel_passes_every_shape() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let report = pollster::block_on(gate(&gpu.ctx, &mut reg, opts(None))).unwrap();
    for line in &report.lines {
        eprintln!("{line}");
    }
    assert!(report.passed, "{:#?}", report.cases);
    assert_eq!(report.cases.len(), 5);
    assert_eq!(report.cases[0].shape, [64, 128, 128]);
    assert!(
        report.lines[0].ends_with("— PASS — f16 path active"),
        "{}",
        report.lines[0]
    );
    for c in &report.cases {
        assert!(c.distribution.cosine > 0.9999, "{c:#?}");
    }
}

#[test]
fn every_fault_variant_fails_the_gate_and_nothing_activates() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    for fault in [Fault::F16Accumulate, Fault::DropKTail, Fault::TruncatePack] {
        let (reports, active) =
            pollster::block_on(run_gates(&gpu.ctx, &mut reg, opts(Some(fault))));
        for line in &reports[0].lines {
            eprintln!("{fault:?}: {line}");
        }
        assert!(!reports[0].passed && !reports[0].active, "{fault:?} passed");
        assert!(
            reports[0].lines[0].ends_with("— FAIL"),
            "{}",
            reports[0].lines[0]
        );
        assert_eq!(active.f16_storage, None, "{fault:?} activated");
    }
    let (reports, active) = pollster::block_on(run_gates(&gpu.ctx, &mut reg, opts(None)));
    assert!(reports[0].active && active.f16_storage.is_some());
}

/// Issue 003: with K = 4096 and products near 16 the partial sums pass
/// 65504 (the f16 maximum) while the result (~6.6e4) is an ordinary f32.
#[test]
fn f16_accumulator_overflow_is_caught_and_f32_accumulation_is_right() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let desc = MatmulDesc::linear(4, 4096, 8);
    let mut rng = Rng::new(3);
    let x: Vec<f32> = (0..desc.m * desc.k)
        .map(|_| rng.uniform(4.0, 4.2))
        .collect();
    let w: Vec<f32> = (0..desc.n * desc.k)
        .map(|_| rng.uniform(4.0, 4.2))
        .collect();
    let b = vec![0.0f32; desc.n as usize];
    let want = matmul_reference(desc, &x, &w, Some(&b));
    assert!(
        want.iter().all(|v| v.is_finite() && *v > 65504.0),
        "{want:?}"
    );
    let packer = Packer {
        on_gpu: false,
        fault: None,
    };
    for gemv in [false, true] {
        let desc = if gemv {
            MatmulDesc::linear(1, 4096, 8)
        } else {
            desc
        };
        let xs = &x[..(desc.m * desc.k) as usize];
        let mut run = |fault| {
            pollster::block_on(compare_case(
                &gpu.ctx, &mut reg, "overflow", packer, fault, desc, xs, &w, &b, false,
            ))
            .unwrap()
            .case
            .stats
        };
        let good = run(None);
        eprintln!("f32 acc (gemv {gemv}): {good:?}");
        assert!(good.passed && good.non_finite == 0, "{good:?}");
        let bad = run(Some(Fault::F16Accumulate));
        eprintln!("f16 acc (gemv {gemv}): {bad:?}");
        assert!(!bad.passed && bad.non_finite > 0, "{bad:?}");
    }
}
