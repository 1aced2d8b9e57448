//! The f32 matmul against its CPU reference, in every layout, on shapes that
//! are and are not multiples of the tile.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::matmul::{matmul_once, matmul_reference, MatmulDesc};

fn random(rng: &mut Rng, n: u32) -> Vec<f32> {
    (0..n).map(|_| rng.uniform(-1.0, 1.0)).collect()
}

fn check(desc: MatmulDesc, seed: u64) {
    let gpu = gpu_or_skip!();
    let mut rng = Rng::new(seed);
    let a = random(&mut rng, desc.m * desc.k);
    let b = random(&mut rng, desc.k * desc.n);
    let bias = desc.bias.then(|| random(&mut rng, desc.n));
    let mut reg = gpu.registry.lock().unwrap();
    let got = pollster::block_on(matmul_once(
        &gpu.ctx,
        &mut reg,
        desc,
        &a,
        &b,
        bias.as_deref(),
    ))
    .unwrap();
    let want = matmul_reference(desc, &a, &b, bias.as_deref());
    // f32 accumulation of K products of magnitude ≤ 1: error grows ~√K·ε.
    assert_close(
        &format!("{desc:?}"),
        &got,
        &want,
        1e-5 * (desc.k as f64).sqrt() * 4.0,
        1e-5,
    );
}

#[test]
fn a_times_b_odd_shapes() {
    for (i, &(m, k, n)) in [
        (1, 1, 1),
        (3, 5, 7),
        (64, 16, 64),
        (65, 17, 63),
        (130, 33, 70),
    ]
    .iter()
    .enumerate()
    {
        check(
            MatmulDesc {
                m,
                k,
                n,
                ..Default::default()
            },
            i as u64,
        );
    }
}

#[test]
fn a_times_b_transposed_with_bias() {
    for (i, &(m, k, n)) in [(2, 3, 4), (67, 45, 71), (128, 64, 129)].iter().enumerate() {
        check(MatmulDesc::linear(m, k, n), 10 + i as u64);
    }
}

#[test]
fn a_transposed_times_b() {
    for (i, &(m, k, n)) in [(5, 3, 2), (70, 100, 33)].iter().enumerate() {
        check(
            MatmulDesc {
                m,
                k,
                n,
                trans_a: true,
                ..Default::default()
            },
            20 + i as u64,
        );
    }
}

#[test]
fn accumulate_adds_into_c() {
    let gpu = gpu_or_skip!();
    let desc = MatmulDesc {
        m: 9,
        k: 4,
        n: 5,
        accumulate: true,
        ..Default::default()
    };
    let mut rng = Rng::new(5);
    let a = random(&mut rng, 36);
    let b = random(&mut rng, 20);
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap();
    let (a_buf, b_buf) = (ctx.upload("a", &a).unwrap(), ctx.upload("b", &b).unwrap());
    let c_buf = ctx.zeros("c", 45).unwrap();
    let k = tinygpt_gpu::matmul::bind_matmul(ctx, &mut reg, desc, &a_buf, &b_buf, None, &c_buf)
        .unwrap();
    // Recording the same bound kernel twice in one pass accumulates twice.
    tinygpt_gpu::kernel::submit(ctx, "twice", &[&k, &k]);
    let got = pollster::block_on(ctx.read_f32(&c_buf, 45)).unwrap();
    let want: Vec<f32> = matmul_reference(desc, &a, &b, None)
        .iter()
        .map(|x| 2.0 * x)
        .collect();
    assert_close("accumulate", &got, &want, 1e-5, 1e-5);
    assert_eq!(reg.len(), 1, "one pipeline, compiled once");
}

#[test]
fn start_up_kernel_check_passes() {
    let gpu = gpu_or_skip!();
    let mut reg = gpu.registry.lock().unwrap();
    let t = std::time::Instant::now();
    let check = pollster::block_on(tinygpt_gpu::smoke::kernel_check(&gpu.ctx, &mut reg, || {
        t.elapsed().as_secs_f64() * 1e3
    }))
    .unwrap();
    assert!(check.passed, "{check:?}");
    assert!(check.max_abs_err < check.tolerance);
}

#[test]
fn mismatched_buffers_are_errors_not_panics() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap();
    let small = ctx.zeros("small", 4).unwrap();
    let err = tinygpt_gpu::matmul::bind_matmul(
        ctx,
        &mut reg,
        MatmulDesc::linear(8, 8, 8),
        &small,
        &small,
        Some(&small),
        &small,
    );
    assert!(err.is_err());
}
