//! The f16-compute linear kernel (`matmul_f16c.wgsl`, shader-f16) and its
//! gate on the local adapter. The kernel against its device-emulating
//! golden — A and W rounded to f16 by round-to-nearest-even, as the kernel
//! holds them, each output summed in f32 in K order — within the f32
//! reordering bound and (on GPUs) bit for bit; seed 003's partial sums past
//! 65504 right with its f32 accumulators and caught with the f16-arithmetic
//! fault; the gate passing, and failing under each fault. An adapter
//! without shader-f16 says these did not run and why.

use half::f16;
use tinygpt_core::Rng;
use tinygpt_gpu::gate::f16_compute::gate;
use tinygpt_gpu::gate::f16_storage::{compare_case, F16Kernel, Packer};
use tinygpt_gpu::gate::{Fault, GateOptions, BUNDLED_SHAPE, DEFAULT_VOCAB};
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::matmul::f16c::{f16_compute_unavailable, MATMUL_F16C, MATMUL_F16C_LARGE};
use tinygpt_gpu::ops::matmul::f16w::{bind_matmul_f16w, pack_cpu, PackedW};
use tinygpt_gpu::ops::matmul::{f16w_golden, f32_order_bound, matmul_reference, MatmulDesc};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{random, TestGpu};

/// The adapter lacks shader-f16: says so (the test did not run).
fn unavailable(gpu: &TestGpu, test: &str) -> bool {
    match f16_compute_unavailable(&gpu.ctx) {
        Some(why) => {
            tinygpt_gpu::testing::did_not_run(test, why);
            true
        }
        None => false,
    }
}

fn round16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| f16::from_f32(x).to_f32()).collect()
}

/// `desc` on the f16-compute kernel, W at half `w_off` of its buffer.
fn run(
    gpu: &TestGpu,
    desc: MatmulDesc,
    w_off: u32,
    (x, w, b): (&[f32], &[f32], &[f32]),
) -> Vec<f32> {
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let flat: Vec<f32> = [vec![0.5; w_off as usize], w.to_vec()].concat();
    let w_buf = ctx
        .upload_bytes("w", bytemuck::cast_slice(&pack_cpu(&flat, None)))
        .unwrap();
    let (x_buf, b_buf) = (ctx.upload("x", x).unwrap(), ctx.upload("b", b).unwrap());
    let out = ctx.zeros("out", (desc.m * desc.n) as usize).unwrap();
    let bias = desc.bias.then(|| View::from(&b_buf));
    let w = PackedW::at(&w_buf, w_off).computing(true);
    let k = bind_matmul_f16w(ctx, &mut reg, desc, &x_buf, w, bias, &out).unwrap();
    let key = match desc.uses_large_tiles() {
        true => MATMUL_F16C_LARGE.key,
        false => MATMUL_F16C.key,
    };
    assert_eq!(k.key, key);
    submit(ctx, "matmul_f16c", &[&k]);
    pollster::block_on(ctx.read_f32(&out, (desc.m * desc.n) as usize)).unwrap()
}

/// Odd M, K and N around the 64×64 tile and the 16-wide K step, and an
/// output of 16 × 17 tiles of 128 with K in 8-wide steps and a partial one
/// (the 128×128 kernel), W at an even offset (whole words) and an odd one
/// (pairs straddling words), with and without bias: every output within the f32 reordering bound of the
/// golden — anything more is a kernel bug, never f16 drift — and nine in
/// ten bit for bit (the kernel sums in the golden's order; the golden
/// rounds each product or not as the device's `fma` does: lavapipe gave
/// every output exactly).
#[test]
fn f16_compute_matches_its_device_emulating_golden() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "f16_compute_matches_its_device_emulating_golden") {
        return;
    }
    let mut rng = Rng::new(1616);
    let shapes = [
        (3, 5, 7),
        (65, 129, 63),
        (64, 1032, 40),
        (130, 48, 70),
        (2053, 21, 2048),
    ];
    for (i, &(m, k, n)) in shapes.iter().enumerate() {
        for w_off in [0u32, 7] {
            let desc = MatmulDesc {
                bias: w_off == 0,
                ..MatmulDesc::linear(m, k, n)
            };
            let (x, w, b) = (
                random(&mut rng, m * k),
                random(&mut rng, n * k),
                random(&mut rng, n),
            );
            let got = run(gpu, desc, w_off, (&x, &w, &b));
            let (x16, bias) = (round16(&x), desc.bias.then_some(&b[..]));
            let goldens = [false, true].map(|fused| f16w_golden(desc, &x16, &w, bias, fused));
            let bound = f32_order_bound(desc, &x16, &w, bias);
            let exact = goldens
                .each_ref()
                .map(|g| got.iter().zip(g).filter(|(a, b)| a == b).count());
            let golden = &goldens[(exact[1] > exact[0]) as usize];
            let worst = got
                .iter()
                .zip(golden)
                .zip(&bound)
                .map(|((g, r), e)| (g - r).abs() / e)
                .fold(0.0f32, f32::max);
            let exact = exact[0].max(exact[1]);
            eprintln!(
                "case {i} {m}×{k}×{n} w_off {w_off}: {exact}/{} bit-exact, worst {worst:.3} × bound",
                got.len()
            );
            assert!(worst <= 1.0, "{desc:?} w_off {w_off}: past f32 rounding");
            assert!(exact * 10 >= got.len() * 9, "not in the golden's order");
        }
    }
}

/// The golden tells a kernel bug from f16 drift: the dropped-tail variant
/// lands far past the bound, and the f16-arithmetic one past it too.
#[test]
fn f16_compute_faults_land_past_the_bound() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "f16_compute_faults_land_past_the_bound") {
        return;
    }
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(1617);
    let desc = MatmulDesc {
        bias: false,
        ..MatmulDesc::linear(8, 40, 16)
    };
    let (x, w) = (random(&mut rng, 8 * 40), random(&mut rng, 16 * 40));
    let w_buf = ctx
        .upload_bytes("w", bytemuck::cast_slice(&pack_cpu(&w, None)))
        .unwrap();
    let x_buf = ctx.upload("x", &x).unwrap();
    let golden = f16w_golden(desc, &round16(&x), &w, None, false);
    let bound = f32_order_bound(desc, &round16(&x), &w, None);
    for (fault, past) in [(Fault::DropKTail, 100.0), (Fault::F16Accumulate, 2.0)] {
        let out = ctx.zeros("out", 8 * 16).unwrap();
        let packed = PackedW {
            fault: Some(fault),
            ..PackedW::at(&w_buf, 0).computing(true)
        };
        let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
        let k = bind_matmul_f16w(ctx, &mut reg, desc, &x_buf, packed, None, &out).unwrap();
        drop(reg);
        submit(ctx, "f16c_fault", &[&k]);
        let got = pollster::block_on(ctx.read_f32(&out, 8 * 16)).unwrap();
        let worst = got
            .iter()
            .zip(&golden)
            .zip(&bound)
            .map(|((g, r), e)| (g - r).abs() / e)
            .fold(0.0f32, f32::max);
        eprintln!("{fault:?}: worst {worst:.1} × bound");
        assert!(worst > past, "{fault:?} stays near the golden: {worst}");
    }
}

/// Seed 003's cases on the f16-compute kernel: a running sum past 65504
/// whose result is representable, and a result past it. The f32
/// accumulators get both right; the fault's f16 arithmetic saturates.
#[test]
fn f16_compute_sums_past_the_f16_range_in_f32_and_the_fault_overflows() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "f16_compute_sums_past_the_f16_range") {
        return;
    }
    let desc = MatmulDesc::linear(4, 4096, 8);
    let (k, turn) = (desc.k as usize, 3749);
    let mut rng = Rng::new(3005);
    let x: Vec<f32> = (0..4 * k).map(|_| rng.uniform(4.1, 4.3)).collect();
    let peaked: Vec<f32> = (0..8 * k)
        .map(|i| rng.uniform(4.1, 4.3) * if i % k < turn { 1.0 } else { -1.0 })
        .collect();
    let past: Vec<f32> = (0..8 * k).map(|_| rng.uniform(4.0, 4.2)).collect();
    let b = vec![0.0f32; 8];
    assert!(matmul_reference(desc, &x, &past, Some(&b))
        .iter()
        .all(|v| *v > 65504.0));
    let packer = Packer {
        on_gpu: false,
        fault: None,
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for (name, w) in [
        ("partial sums past 65504", &peaked),
        ("result past 65504", &past),
    ] {
        let mut case = |fault| {
            let kernel = F16Kernel {
                fault,
                compute: true,
            };
            let r = compare_case(
                &gpu.ctx,
                &mut reg,
                name,
                packer,
                kernel,
                desc,
                &x,
                w,
                Some(&b),
                false,
            );
            pollster::block_on(r).unwrap().case.stats
        };
        let good = case(None);
        eprintln!("{name}, f32 sums: {good:?}");
        assert!(good.passed && good.non_finite == 0, "{good:?}");
        let bad = case(Some(Fault::F16Accumulate));
        eprintln!("{name}, f16 arithmetic: {bad:?}");
        assert!(!bad.passed && bad.non_finite > 0, "{bad:?}");
    }
}

fn opts(fault: Option<Fault>) -> GateOptions {
    GateOptions {
        fault,
        vocab: DEFAULT_VOCAB,
        now_ms: || 0.0,
        measure_speed: false,
        speed_shape: BUNDLED_SHAPE,
    }
}

/// The gate: the real kernel passes every shape (M > 1: one row keeps the
/// f16-storage GEMV) and its packing check; each fault fails it.
#[test]
fn the_f16_compute_gate_passes_the_kernel_and_fails_every_fault() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "the_f16_compute_gate_passes_the_kernel") {
        return;
    }
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let r = pollster::block_on(gate(&gpu.ctx, &mut reg, opts(None))).unwrap();
    for line in &r.lines {
        eprintln!("{line}");
    }
    assert!(r.passed && r.detected, "{:#?}", r.cases);
    assert!(r.lines[0].starts_with("[ops] f16-compute gate: mean|ref|="));
    assert!(r.lines[0].ends_with("— PASS — f16 compute active"));
    assert_eq!(
        r.cases.len(),
        6,
        "five of f16 storage's shapes and the large tiles"
    );
    assert!(r.cases.iter().all(|c| c.shape[0] > 1));
    for fault in [Fault::F16Accumulate, Fault::DropKTail, Fault::TruncatePack] {
        let r = pollster::block_on(gate(&gpu.ctx, &mut reg, opts(Some(fault)))).unwrap();
        eprintln!("{fault:?}: {}", r.lines[0]);
        assert!(!r.passed, "{fault:?} passed the gate");
        assert!(r.lines[0].contains("— FAIL ("), "{}", r.lines[0]);
        if fault == Fault::DropKTail {
            let large = r.cases.last().unwrap();
            assert!(!large.stats.passed, "the 128×128 kernel's dropped tail");
        }
    }
}
