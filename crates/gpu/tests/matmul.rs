//! The f32 matmul against its CPU reference, in every layout, on shapes that
//! are and are not multiples of the tile.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::ops::matmul::{bind_matmul, matmul_once, matmul_reference, MatmulDesc};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;

fn check(desc: MatmulDesc, seed: u64) {
    let gpu = gpu_or_skip!();
    let mut rng = Rng::new(seed);
    let a = random(&mut rng, desc.m * desc.k);
    let b = random(&mut rng, desc.k * desc.n);
    let bias = desc.bias.then(|| random(&mut rng, desc.n));
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
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
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let (a_buf, b_buf) = (ctx.upload("a", &a).unwrap(), ctx.upload("b", &b).unwrap());
    let c_buf = ctx.zeros("c", 45).unwrap();
    let k =
        tinygpt_gpu::ops::matmul::bind_matmul(ctx, &mut reg, desc, &a_buf, &b_buf, None, &c_buf)
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
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
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
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let small = ctx.zeros("small", 4).unwrap();
    let other = ctx.zeros("other", 4).unwrap();
    let desc = MatmulDesc::linear(8, 8, 8);
    let err = bind_matmul(
        ctx,
        &mut reg,
        desc,
        &small,
        &small,
        Some((&small).into()),
        &other,
    );
    assert!(err.is_err(), "buffers too small");
    let big = ctx.zeros("big", 64).unwrap();
    let desc = MatmulDesc {
        m: 2,
        k: 2,
        n: 2,
        ..Default::default()
    };
    let aliased = bind_matmul(ctx, &mut reg, desc, &big, &small, None, &big);
    assert!(aliased.is_err(), "C aliases A");
}

#[test]
fn operands_at_offsets_in_flat_buffers() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let desc = MatmulDesc::linear(5, 7, 3);
    let mut rng = Rng::new(9);
    // A flat "parameter" buffer: junk, W, junk, bias.
    let mut flat = random(&mut rng, 11);
    let w_off = flat.len() as u32;
    flat.extend(random(&mut rng, desc.n * desc.k));
    flat.extend(random(&mut rng, 5));
    let b_off = flat.len() as u32;
    flat.extend(random(&mut rng, desc.n));
    let x = random(&mut rng, desc.m * desc.k);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let flat_buf = ctx.upload("flat", &flat).unwrap();
    let x_buf = ctx.upload("x", &x).unwrap();
    let len = 3 + (desc.m * desc.n) as usize;
    let out = ctx.zeros("out", len).unwrap();
    let w = View::at(&flat_buf, w_off);
    let bias = Some(View::at(&flat_buf, b_off));
    let k = bind_matmul(ctx, &mut reg, desc, &x_buf, w, bias, View::at(&out, 3)).unwrap();
    tinygpt_gpu::kernel::submit(ctx, "offsets", &[&k]);
    let got = pollster::block_on(ctx.read_f32(&out, len)).unwrap();
    let w = &flat[w_off as usize..][..(desc.n * desc.k) as usize];
    let bias = &flat[b_off as usize..][..desc.n as usize];
    let want = matmul_reference(desc, &x, w, Some(bias));
    assert_eq!(&got[..3], &[0.0; 3], "nothing before C's offset is written");
    assert_close("offsets", &got[3..], &want, 1e-5, 1e-5);
}
