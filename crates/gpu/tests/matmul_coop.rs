//! The cooperative-matrix matmul (tensor cores) against a device-emulating
//! golden: both operands rounded to f16 by round-to-nearest-even, as the
//! kernels stage them, and each output summed exactly (f64); a kernel
//! may differ from it only by f32 summation, within the classic reordering
//! bound. Each kernel ([`CoopKernel::ALL`]), every layout, on odd shapes
//! around its tiles and K blocks, with bias, accumulation and operands at
//! offsets, unsplit and split along K (the weight gradients' binding); and
//! the seed's gate (max_abs under 1 % of mean|ref|, mean_rel under 0.5 %)
//! against the f32 matmul at the primary gate shape; every form of the
//! tiled kernel gives the bits of its base form. Devices without cooperative
//! matrices (lavapipe, every browser) say that these did not run and why;
//! binding there fails with a message.

use half::f16;
use tinygpt_core::model::layers::gelu_forward;
use tinygpt_core::Rng;
use tinygpt_gpu::gate::stats::gate_stats;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::matmul::coop::{
    bind_matmul_coop, bind_matmul_coop_split_k, bind_matmul_coop_variant, coop_unavailable,
    CoopKernel, CoopOptions, Epilogue, TiledForm,
};
use tinygpt_gpu::ops::matmul::coop_stage::StagedRows;
use tinygpt_gpu::ops::matmul::{coop_split_k, matmul_reference, MatmulDesc};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{assert_copy_is_staged, every_layout, random, TestGpu};

/// The device lacks cooperative matrices: says so (the test did not run).
fn unavailable(gpu: &TestGpu, test: &str) -> bool {
    match coop_unavailable(&gpu.ctx) {
        Some(why) => {
            tinygpt_gpu::testing::did_not_run(test, why);
            true
        }
        None => false,
    }
}

/// The staging dispatches and `kernel`'s matmul of `desc` on `[A, B, C]`;
/// with `split`, split along K through a scratch of 64 `(M, N)` slices (the
/// weight gradients' binding), where the shape's K allows it.
fn bind<'a>(
    gpu: &TestGpu,
    (desc, kernel): (MatmulDesc, CoopKernel),
    ops: [View<'a>; 3],
    bias: Option<View<'a>>,
    split: bool,
) -> Vec<BoundKernel> {
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let [a, b, c] = ops;
    let ctx = &gpu.ctx;
    let opts = CoopOptions {
        kernel,
        ..Default::default()
    };
    if !split {
        return bind_matmul_coop_variant(ctx, &mut reg, desc, (a, opts), b, bias, c).unwrap();
    }
    let scratch = ctx
        .zeros("coop_split_k", 64 * (desc.m * desc.n) as usize)
        .unwrap();
    let parts = (Some(&scratch), Default::default());
    let op = bind_matmul_coop_split_k(ctx, &mut reg, desc, (a, opts), b, bias, c, parts);
    op.unwrap().kernels
}

fn round16(v: &[f32]) -> Vec<f32> {
    v.iter().map(|&x| f16::from_f32(x).to_f32()).collect()
}

/// `desc` on `kernel` with every operand `off` floats into its buffer and
/// C starting from random values; returns (kernel, golden, bound) per
/// output. At an offset of 5 every tile of C goes out through the
/// epilogue's scratch; at 4 (C's rows 16-byte aligned where N is a multiple
/// of 4) the tiles inside C go straight from their accumulators.
fn run(
    gpu: &TestGpu,
    (desc, kernel): (MatmulDesc, CoopKernel),
    (seed, off): (u64, usize),
    split: bool,
) -> (Vec<f32>, Vec<f64>, Vec<f64>) {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let pad = |v: &[f32]| [&vec![3.0; off][..], v].concat();
    let a = random(&mut rng, desc.m * desc.k);
    let b = random(&mut rng, desc.k * desc.n);
    let bias = random(&mut rng, desc.n);
    let c0 = random(&mut rng, desc.m * desc.n);
    let bufs: Vec<_> = [&a, &b, &bias, &c0]
        .iter()
        .map(|v| ctx.upload("coop_operand", &pad(v)).unwrap())
        .collect();
    let at = |i: usize| View::at(&bufs[i], off as u32);
    let ks = bind(
        gpu,
        (desc, kernel),
        [at(0), at(1), at(3)],
        desc.bias.then(|| at(2)),
        split,
    );
    submit(ctx, "matmul_coop", &ks.iter().collect::<Vec<_>>());
    let got = pollster::block_on(ctx.read_f32(&bufs[3], off + (desc.m * desc.n) as usize)).unwrap();
    assert!(
        got[..off].iter().all(|&x| x == 3.0),
        "nothing before C's offset is written"
    );
    let (golden, bound) = golden(desc, &a, &b, &bias, &c0);
    (got[off..].to_vec(), golden, bound)
}

/// The golden (f16 operands, exact sums) and the bound on f32 summation
/// ((K + 2) roundings of the largest partial sum) of every output.
fn golden(
    desc: MatmulDesc,
    a: &[f32],
    b: &[f32],
    bias: &[f32],
    c0: &[f32],
) -> (Vec<f64>, Vec<f64>) {
    let (a16, b16) = (round16(a), round16(b));
    let (m, k, n) = (desc.m as usize, desc.k as usize, desc.n as usize);
    let at = |i: usize, kk: usize| {
        if desc.trans_a {
            a16[kk * m + i]
        } else {
            a16[i * k + kk]
        }
    };
    let bt = |kk: usize, j: usize| {
        if desc.trans_b {
            b16[j * k + kk]
        } else {
            b16[kk * n + j]
        }
    };
    let (mut golden, mut bound) = (Vec::new(), Vec::new());
    for i in 0..m {
        for j in 0..n {
            let (mut sum, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let p = at(i, kk) as f64 * bt(kk, j) as f64;
                sum += p;
                mag += p.abs();
            }
            let extra = [
                desc.bias.then_some(bias[j]),
                desc.accumulate.then_some(c0[i * n + j]),
            ];
            for x in extra.into_iter().flatten() {
                sum += x as f64;
                mag += (x as f64).abs();
            }
            golden.push(sum);
            bound.push((k as f64 + 2.0) * 2f64.powi(-24) * mag + 1e-30);
        }
    }
    (golden, bound)
}

/// Below, at and past one 64×128 or 128×128 tile, one 16-wide K step and
/// one 32-wide K block; long Ks (the last one split into 16 K slices, its
/// last of 9 blocks); tiles of C inside it and across its edges.
const SHAPES: [(u32, u32, u32); 9] = [
    (1, 1, 1),
    (3, 5, 7),
    (128, 32, 128),
    (129, 33, 130),
    (200, 100, 257),
    (257, 48, 129),
    (64, 1032, 40),
    (40, 4100, 72),
    (144, 80, 96),
];

#[test]
fn coop_matmul_equals_the_f16_golden_within_f32_rounding_in_every_layout() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop golden") {
        return;
    }
    for kernel in CoopKernel::ALL {
        for (split, off) in [(false, 5), (false, 4), (true, 5), (true, 4)] {
            let mut worst = 0.0f64;
            for (desc, seed) in every_layout(&SHAPES, 0) {
                let (got, golden, bound) = run(gpu, (desc, kernel), (seed, off), split);
                for (i, ((g, w), b)) in got.iter().zip(&golden).zip(&bound).enumerate() {
                    let ratio = (*g as f64 - w).abs() / b;
                    worst = worst.max(ratio);
                    assert!(
                        ratio <= 1.0,
                        "{kernel:?} {desc:?} split {split} offset {off} output {i}: got {g}, golden {w}, bound {b}"
                    );
                }
            }
            let kernel = kernel.name();
            eprintln!("coop golden ({kernel}, split K: {split}, offset {off}): worst |kernel − golden| is {worst:.3} of the f32 reordering bound");
        }
    }
}

#[test]
fn every_form_of_the_tiled_kernel_gives_the_base_forms_bits() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop tiled forms' bits") {
        return;
    }
    // Each output sums the same fragments' products in the same order in
    // every form: only which subgroup sums it, and when the next block is
    // copied, differ. At offset 4 the tiles inside C leave from their
    // accumulators, scaled, biased and accumulated as cooperative
    // matrices; at 5 through the scratch, element by element, in the same
    // order: the base form's bits either way.
    let base = CoopKernel::Tiled(TiledForm::Base);
    for split in [false, true] {
        for (desc, seed) in every_layout(&SHAPES, 0) {
            let (want, _, _) = run(gpu, (desc, base), (seed, 5), split);
            for form in TiledForm::ALL {
                let (got, _, _) = run(gpu, (desc, CoopKernel::Tiled(form)), (seed, 4), split);
                let n = differing(&got, &want);
                let what = format!("{form:?} {desc:?} split {split} offset 4");
                assert_eq!(
                    n, 0,
                    "{what}: {n} outputs differ from the base form's at offset 5"
                );
            }
        }
    }
}

fn differing(got: &[f32], want: &[f32]) -> usize {
    got.iter()
        .zip(want)
        .filter(|(g, w)| g.to_bits() != w.to_bits())
        .count()
}

#[test]
fn coop_matmul_passes_the_seed_gate_against_f32_at_the_primary_shape() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop gate") {
        return;
    }
    let desc = MatmulDesc {
        m: 64,
        k: 128,
        n: 128,
        ..Default::default()
    };
    let mut rng = Rng::new(0);
    let a: Vec<f32> = (0..desc.m * desc.k)
        .map(|_| rng.uniform(-0.2, 0.2))
        .collect();
    let b: Vec<f32> = (0..desc.k * desc.n)
        .map(|_| rng.uniform(-0.2, 0.2))
        .collect();
    let want = matmul_reference(desc, &a, &b, None);
    let ctx = &gpu.ctx;
    let (ab, bb) = (ctx.upload("a", &a).unwrap(), ctx.upload("b", &b).unwrap());
    for kernel in CoopKernel::ALL {
        let c = ctx.zeros("c", want.len()).unwrap();
        let ks = bind(
            gpu,
            (desc, kernel),
            [(&ab).into(), (&bb).into(), (&c).into()],
            None,
            false,
        );
        submit(ctx, "matmul_coop_gate", &ks.iter().collect::<Vec<_>>());
        let got = pollster::block_on(ctx.read_f32(&c, want.len())).unwrap();
        let s = gate_stats(&got, &want);
        eprintln!("coop gate 64×128×128 ({}): {s:?}", kernel.name());
        assert!(s.passed, "{kernel:?}: {s:?}");
    }
}

/// The epilogue's GELU, as the MLP's first linear runs it (C = A·Wᵀ + b
/// and GELU(C) beside it, and GELU(C)'s f16 copy for the next product),
/// on each kernel: C within the golden's bound, the GELU of the kernel's
/// own C within f32 rounding of the CPU's, the copy the staging's halves.
#[test]
fn coop_epilogue_writes_the_gelu_of_its_output() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop GELU epilogue") {
        return;
    }
    let ctx = &gpu.ctx;
    let (m, k, n) = (130u32, 72u32, 200u32);
    let desc = MatmulDesc::linear(m, k, n);
    let mut rng = Rng::new(11);
    let (a, w, bias) = (
        random(&mut rng, m * k),
        random(&mut rng, k * n),
        random(&mut rng, n),
    );
    let up = |v: &[f32]| ctx.upload("coop_epilogue", v).unwrap();
    let (ab, wb, biasb) = (up(&a), up(&w), up(&bias));
    let (golden, bound) = golden(desc, &a, &w, &bias, &vec![0.0; (m * n) as usize]);
    for kernel in CoopKernel::ALL {
        let len = (m * n) as usize;
        let (c, gelu) = (
            ctx.zeros("c", len).unwrap(),
            ctx.zeros("gelu", len).unwrap(),
        );
        // GELU(C)'s f16 copy, as the next product would stage it.
        let copy = StagedRows::for_producer(ctx, (&gelu).into(), (m, n), 1.0).unwrap();
        let opts = CoopOptions {
            kernel,
            epilogue: Epilogue::Gelu((&gelu).into(), Some(&copy)),
            ..Default::default()
        };
        let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
        let bias_view = Some(View::from(&biasb));
        let ks = bind_matmul_coop_variant(ctx, &mut reg, desc, (&ab, opts), &wb, bias_view, &c);
        drop(reg);
        let ks = ks.unwrap();
        submit(ctx, "coop_epilogue", &ks.iter().collect::<Vec<_>>());
        let got = pollster::block_on(ctx.read_f32(&c, len)).unwrap();
        let got_gelu = pollster::block_on(ctx.read_f32(&gelu, len)).unwrap();
        for i in 0..len {
            let (g, want, b) = (got[i] as f64, golden[i], bound[i]);
            assert!(
                (g - want).abs() <= b,
                "{kernel:?} output {i}: {g} vs {want}"
            );
            let mut y = [0.0f64];
            gelu_forward(&mut y, &[got[i] as f64]);
            // f32 rounding of the result, and of 1 + erf (one ulp of 1,
            // times v/2) where it cancels for negative v.
            let e = (got_gelu[i] as f64 - y[0]).abs();
            assert!(
                e <= 4e-7 * y[0].abs() + 1.2e-7 * g.abs().max(1.0),
                "{kernel:?} GELU {i}: {} vs {}",
                got_gelu[i],
                y[0]
            );
        }
        let what = format!("{kernel:?}: GELU(C)'s f16 copy");
        assert_copy_is_staged(gpu, &copy, (&gelu).into(), (m, n), &what);
        copy_only(gpu, (kernel, desc), (&ab, &wb, &biasb), (&got, &gelu));
        eprintln!(
            "coop GELU epilogue ({}): every output and its GELU within bounds, its f16 copy the staging's; \
             the copy alone (GeluCopy) the same, the f32 GELU untouched",
            kernel.name()
        );
    }
}

/// The epilogue writing GELU(C)'s f16 copy alone (a training forward's):
/// C the same bits as `Gelu`'s (`c_want`), the copy the staging of that
/// run's f32 GELU (`gelu_want`), and the f32 GELU's buffer untouched.
fn copy_only(
    gpu: &TestGpu,
    (kernel, desc): (CoopKernel, MatmulDesc),
    (a, w, bias): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    (c_want, gelu_want): (&[f32], &wgpu::Buffer),
) {
    let ctx = &gpu.ctx;
    let len = (desc.m * desc.n) as usize;
    let c = ctx.zeros("c", len).unwrap();
    let untouched = vec![7.0f32; len];
    let gelu = ctx.upload("gelu_untouched", &untouched).unwrap();
    let copy = StagedRows::for_producer(ctx, (&gelu).into(), (desc.m, desc.n), 1.0).unwrap();
    let opts = CoopOptions {
        kernel,
        epilogue: Epilogue::GeluCopy((&gelu).into(), &copy),
        ..Default::default()
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let bias = Some(View::from(bias));
    let ks = bind_matmul_coop_variant(ctx, &mut reg, desc, (a, opts), w, bias, &c);
    drop(reg);
    submit(
        ctx,
        "coop_epilogue_copy",
        &ks.unwrap().iter().collect::<Vec<_>>(),
    );
    let got = pollster::block_on(ctx.read_f32(&c, len)).unwrap();
    assert!(got == c_want, "{kernel:?}: C differs under GeluCopy");
    let got_gelu = pollster::block_on(ctx.read_f32(&gelu, len)).unwrap();
    assert!(
        got_gelu == untouched,
        "{kernel:?}: GeluCopy wrote the f32 GELU"
    );
    let what = format!("{kernel:?}: GELU(C)'s f16 copy alone");
    assert_copy_is_staged(gpu, &copy, gelu_want.into(), (desc.m, desc.n), &what);
}

#[test]
fn binding_says_why_where_the_device_has_no_cooperative_matrices() {
    let gpu = gpu_or_skip!();
    let Some(why) = coop_unavailable(&gpu.ctx) else {
        tinygpt_gpu::testing::did_not_run(
            "binding refusal",
            "this adapter has cooperative matrices",
        );
        return;
    };
    let ctx = &gpu.ctx;
    let x = ctx.zeros("x", 16).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let desc = MatmulDesc {
        m: 4,
        k: 4,
        n: 4,
        ..Default::default()
    };
    let e = bind_matmul_coop(ctx, &mut reg, desc, &x, &x, None, &x)
        .err()
        .expect("refused");
    eprintln!("{why}: {e}");
    assert!(e.to_string().contains("cooperative matrix"), "{e}");
}

/// A product of few 128×128 tiles (the `small` preset's MLP dX: 64, half
/// a wave in two slices of K by `coop_split_k`) runs in two K slices and
/// their f32 sum, bias and accumulation in the sum: the whole product's
/// values but for the order of f32 additions (within 2⁻¹⁶ of the largest
/// output here; a missing slice would be off by its whole).
#[test]
fn a_product_of_few_tiles_splits_in_two_and_keeps_its_values() {
    let gpu = gpu_or_skip!();
    if unavailable(gpu, "coop split of a product of few tiles") {
        return;
    }
    let desc = MatmulDesc {
        m: 4096,
        k: 1024,
        n: 256,
        bias: true,
        accumulate: true,
        ..Default::default()
    };
    assert_eq!(coop_split_k(desc.m, desc.k, desc.n), 2);
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(11);
    let (m, k, n) = (desc.m, desc.k, desc.n);
    let mut up = |len: u32| ctx.upload("operand", &random(&mut rng, len)).unwrap();
    let (a, b, bias, c0) = (up(m * k), up(k * n), up(n), up(m * n));
    let c_init = pollster::block_on(ctx.read_f32(&c0, (m * n) as usize)).unwrap();
    let (whole, split) = (
        ctx.upload("whole", &c_init).unwrap(),
        ctx.upload("split", &c_init).unwrap(),
    );
    let scratch = ctx.zeros("scratch", 2 * (m * n) as usize).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let (opts, bias) = (CoopOptions::default(), Some(View::from(&bias)));
    let ks = bind_matmul_coop_variant(
        ctx,
        &mut reg,
        desc,
        (View::from(&a), opts),
        &b,
        bias,
        &whole,
    );
    let ks = ks.unwrap();
    let parts = (Some(&scratch), Default::default());
    let a = (View::from(&a), opts);
    let op = bind_matmul_coop_split_k(
        ctx,
        &mut reg,
        desc,
        a,
        View::from(&b),
        bias,
        View::from(&split),
        parts,
    );
    let op = op.unwrap();
    drop(reg);
    assert_eq!(op.kernels.len(), ks.len() + 1, "the slices, then their sum");
    submit(
        ctx,
        "coop_split_wave",
        &ks.iter().chain(&op.kernels).collect::<Vec<_>>(),
    );
    let read = |buf| pollster::block_on(ctx.read_f32(buf, (m * n) as usize)).unwrap();
    let (want, got) = (read(&whole), read(&split));
    let top = want.iter().fold(0.0f32, |t, v| t.max(v.abs()));
    let worst = want
        .iter()
        .zip(&got)
        .fold(0.0f32, |w, (x, y)| w.max((x - y).abs()));
    eprintln!("coop split in two: worst |split − whole| {worst:.3e} of max |C| {top:.3e}");
    assert!(
        top > 1.0 && worst <= top / 65536.0,
        "worst {worst} of {top}"
    );
}
