//! The K-split matmul (partial products per K slice into a scratch buffer,
//! then their in-order sum) against the CPU reference, in every layout, with
//! bias and accumulation, on the small-output and the 64×64 tile kernel,
//! two ops sharing one scratch in one pass, the fallback to the plain
//! kernel when the scratch is too small, and a weight gradient's bias
//! gradient as the split's row sums. (Its own test
//! binary: `matmul.rs` counts the pipelines of its registry.)

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::matmul::{
    bind_matmul_split_k, bind_matmul_split_k_row_sums, matmul_reference, MatmulDesc, TileKernel,
    MATMUL_F32_SMALL_ROW_SUMS, MATMUL_REDUCE, SPLIT_MIN_K,
};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::testing::TestGpu;

/// f32 accumulation of K products of magnitude ≤ 1: error grows ~√K·ε.
fn atol(desc: MatmulDesc) -> f64 {
    1e-5 * (desc.k as f64).sqrt() * 4.0
}

/// Binds `descs` through one scratch of `scratch_floats`, records them in one
/// pass, and compares every C with the reference; returns the dispatch count
/// of each op, checking that a split op is the tiled kernel then the sum.
fn run(gpu: &TestGpu, descs: &[MatmulDesc], scratch_floats: usize, seed: u64) -> Vec<usize> {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let scratch = ctx.zeros("scratch", scratch_floats).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut cases = Vec::new();
    for &d in descs {
        let (a, b) = (random(&mut rng, d.m * d.k), random(&mut rng, d.k * d.n));
        let bias = d.bias.then(|| random(&mut rng, d.n));
        let c0 = random(&mut rng, d.m * d.n);
        let bufs = (
            ctx.upload("a", &a).unwrap(),
            ctx.upload("b", &b).unwrap(),
            ctx.upload("bias", bias.as_deref().unwrap_or(&[0.0]))
                .unwrap(),
            ctx.upload("c", &c0).unwrap(),
        );
        cases.push((d, a, b, bias, c0, bufs));
    }
    let ops: Vec<_> = cases
        .iter()
        .map(|(d, _, _, _, _, (a, b, bias, c))| {
            let bias = d.bias.then(|| bias.into());
            bind_matmul_split_k(ctx, &mut reg, *d, a, b, bias, c, Some(&scratch)).unwrap()
        })
        .collect();
    let kernels: Vec<&BoundKernel> = ops.iter().flat_map(|op| &op.kernels).collect();
    submit(ctx, "split_k", &kernels);
    for (d, a, b, bias, c0, (_, _, _, c)) in &cases {
        let got = pollster::block_on(ctx.read_f32(c, (d.m * d.n) as usize)).unwrap();
        let mut want = matmul_reference(*d, a, b, bias.as_deref());
        if d.accumulate {
            want.iter_mut().zip(c0).for_each(|(x, c)| *x += c);
        }
        assert_close(&format!("{d:?}"), &got, &want, atol(*d), 1e-5);
    }
    for (op, (d, ..)) in ops
        .iter()
        .zip(&cases)
        .filter(|(op, _)| op.kernels.len() > 1)
    {
        let keys: Vec<_> = op.kernels.iter().map(|k| k.key).collect();
        let kernel = if d.split_k().small_tiles {
            TileKernel::Small
        } else {
            TileKernel::General
        };
        assert_eq!(keys, [kernel.source().key, MATMUL_REDUCE.key]);
    }
    ops.iter().map(|op| op.kernels.len()).collect()
}

#[test]
fn split_k_matches_reference_in_every_layout() {
    let gpu = gpu_or_skip!();
    let desc = |m, k, n, trans_a, trans_b, bias, accumulate| MatmulDesc {
        m,
        k,
        n,
        trans_a,
        trans_b,
        bias,
        accumulate,
    };
    // K not a multiple of the kernels' K steps nor of the slice; M, N not
    // multiples of the tiles. The last two split on 64×64 tiles (the
    // output is large enough; K is long enough to fill a GPU with them),
    // the others on the small-output kernel.
    let shapes = [
        desc(70, 1000, 33, true, false, false, true), // a weight gradient
        desc(5, 700, 9, false, false, true, false),
        desc(3, 600, 70, false, true, true, true),
        desc(65, 513, 64, true, false, false, false),
        desc(1000, 300, 520, true, false, false, true),
        desc(130, 8200, 260, true, false, false, true),
    ];
    let small: Vec<_> = shapes.iter().map(|d| d.split_k().small_tiles).collect();
    assert_eq!(small, [true, true, true, true, false, false]);
    for (i, &d) in shapes.iter().enumerate() {
        assert!(d.split_k_slices() >= 2, "{d:?} is split");
        let slices = d.split_k_slices() as usize;
        let counts = run(gpu, &[d], slices * (d.m * d.n) as usize, 60 + i as u64);
        assert_eq!(counts, [2], "partial products, then their sum");
    }
}

#[test]
fn ops_sharing_one_scratch_in_one_pass_stay_correct() {
    let gpu = gpu_or_skip!();
    let first = MatmulDesc {
        m: 40,
        k: 800,
        n: 24,
        trans_a: true,
        accumulate: true,
        ..Default::default()
    };
    let second = MatmulDesc {
        m: 24,
        k: 900,
        n: 40,
        trans_a: true,
        ..Default::default()
    };
    let floats = 4 * 40 * 24;
    assert_eq!(run(gpu, &[first, second], floats, 70), [2, 2]);
}

#[test]
fn a_small_scratch_or_a_short_k_falls_back_to_one_dispatch() {
    let gpu = gpu_or_skip!();
    let long = MatmulDesc {
        m: 30,
        k: 700,
        n: 20,
        trans_a: true,
        ..Default::default()
    };
    // Room for one slice only.
    assert_eq!(run(gpu, &[long], 30 * 20 + 7, 80), [1]);
    let short = MatmulDesc { k: 200, ..long };
    assert!(short.k < 2 * SPLIT_MIN_K);
    assert_eq!(short.split_k_slices(), 1, "K under two slices");
    assert_eq!(run(gpu, &[short], 10 * 30 * 20, 81), [1]);
}

/// A scratch that is also an operand (A, B, the bias or C) would be
/// overwritten by the partial products before the product reads it: the
/// binding refuses it, naming why, wherever it sits.
#[test]
fn a_scratch_that_is_also_an_operand_is_refused() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let desc = MatmulDesc {
        m: 30,
        k: 700,
        n: 20,
        bias: true,
        ..Default::default()
    };
    assert!(desc.split_k_slices() >= 2, "a shape that splits");
    // Room for every operand and many slices.
    let shared = ctx.zeros("shared", 64 * 30 * 700).unwrap();
    let own: Vec<_> = (0..4)
        .map(|_| ctx.zeros("own", 30 * 700).unwrap())
        .collect();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    for aliased in 0..4 {
        let pick = |i: usize| if i == aliased { &shared } else { &own[i] };
        let (a, b, bias, c) = (pick(0), pick(1), pick(2), pick(3));
        let e = bind_matmul_split_k(
            ctx,
            &mut reg,
            desc,
            a,
            b,
            Some(bias.into()),
            c,
            Some(&shared),
        )
        .err()
        .unwrap_or_else(|| panic!("operand {aliased} as the scratch was accepted"));
        assert!(
            e.to_string().contains("split-K scratch is also an operand"),
            "{e}"
        );
    }
    let ok = bind_matmul_split_k(
        ctx,
        &mut reg,
        desc,
        &own[0],
        &own[1],
        Some((&own[2]).into()),
        &own[3],
        Some(&shared),
    );
    assert_eq!(
        ok.expect("distinct buffers bind").kernels.len(),
        2,
        "split in two dispatches"
    );
}

/// A weight gradient with its bias gradient: `dW (+)= op(A)·B` and the row
/// sums of op(A) added into a view beside it, in the same two dispatches
/// (the small-output kernel's row-summing pipeline, then the reduce). C is
/// bit for bit the plain split's; the sums match the reference within
/// f32's reordering and are the same bits when run again; K not a multiple
/// of the slices.
#[test]
fn a_weight_gradient_sums_its_rows_in_the_same_two_dispatches() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(90);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    // Weight gradients (op(A) = dyᵀ), and one A stored (M, K).
    for (m, k, n, trans_a) in [
        (70, 1000, 33, true),
        (65, 4100, 128, true),
        (40, 900, 24, false),
    ] {
        let d = MatmulDesc {
            m,
            k,
            n,
            trans_a,
            accumulate: true,
            ..Default::default()
        };
        let (mu, nu, ku) = (m as usize, n as usize, k as usize);
        let (a, b) = (random(&mut rng, ku * mu), random(&mut rng, ku * nu));
        // C, a gap of three floats, then the row sums: all one buffer.
        let (c0, sums0) = (random(&mut rng, mu * nu), random(&mut rng, mu));
        let out: Vec<f32> = c0
            .iter()
            .copied()
            .chain([0.0; 3])
            .chain(sums0.iter().copied())
            .collect();
        let at = (mu * nu + 3) as u32;
        let slices = d.split_k().slices as usize;
        let (a_buf, b_buf) = (ctx.upload("a", &a).unwrap(), ctx.upload("b", &b).unwrap());
        let (out_buf, plain_buf) = (
            ctx.upload("out", &out).unwrap(),
            ctx.upload("plain", &c0).unwrap(),
        );
        let scratch = ctx.zeros("scratch", slices * mu * (nu + 1)).unwrap();
        let op = bind_matmul_split_k_row_sums(
            ctx,
            &mut reg,
            d,
            &a_buf,
            &b_buf,
            &out_buf,
            View::at(&out_buf, at),
            Some(&scratch),
        )
        .unwrap()
        .expect("the shape splits");
        let keys: Vec<_> = op.kernels.iter().map(|k| k.key).collect();
        assert_eq!(
            keys,
            [MATMUL_F32_SMALL_ROW_SUMS.key, MATMUL_REDUCE.key],
            "the same two dispatches"
        );
        let plain = bind_matmul_split_k(
            ctx,
            &mut reg,
            d,
            &a_buf,
            &b_buf,
            None,
            &plain_buf,
            Some(&scratch),
        )
        .unwrap();
        let kernels: Vec<&BoundKernel> = op.kernels.iter().chain(&plain.kernels).collect();
        submit(ctx, "split_k_row_sums", &kernels);
        let got = pollster::block_on(ctx.read_f32(&out_buf, out.len())).unwrap();
        let plain_c = pollster::block_on(ctx.read_f32(&plain_buf, mu * nu)).unwrap();
        assert_eq!(
            &got[..mu * nu],
            &plain_c[..],
            "C of {d:?} is the plain split's"
        );
        let mut want = matmul_reference(d, &a, &b, None);
        want.iter_mut().zip(&c0).for_each(|(x, c)| *x += c);
        assert_close(
            &format!("C of {d:?}"),
            &got[..mu * nu],
            &want,
            atol(d),
            1e-5,
        );
        assert_eq!(
            &got[mu * nu..mu * nu + 3],
            &[0.0; 3],
            "the gap is untouched"
        );
        let sums = &got[at as usize..];
        let reference: Vec<f32> = (0..mu)
            .map(|r| {
                let at = |kk: usize| {
                    if trans_a {
                        a[kk * mu + r]
                    } else {
                        a[r * ku + kk]
                    }
                };
                sums0[r] + (0..ku).map(|kk| at(kk) as f64).sum::<f64>() as f32
            })
            .collect();
        assert_close(
            &format!("row sums of {d:?}"),
            sums,
            &reference,
            atol(d),
            1e-5,
        );
        ctx.queue
            .write_buffer(&out_buf, 0, bytemuck::cast_slice(&out));
        submit(
            ctx,
            "split_k_row_sums_again",
            &op.kernels.iter().collect::<Vec<_>>(),
        );
        let again = pollster::block_on(ctx.read_f32(&out_buf, out.len())).unwrap();
        assert_eq!(
            &again[at as usize..],
            sums,
            "the same row sums when run again"
        );
    }
}

/// Row sums outside C's buffer, or over C, are refused, naming why; a shape
/// that does not split, or splits on the 64×64 kernel, binds nothing, so
/// that the caller sums the rows apart.
#[test]
fn row_sums_are_refused_over_c_and_absent_when_nothing_splits() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let d = MatmulDesc {
        m: 30,
        k: 700,
        n: 20,
        trans_a: true,
        ..Default::default()
    };
    assert!(d.split_k_slices() >= 2, "a shape that splits");
    let (a, b) = (
        ctx.zeros("a", 30 * 700).unwrap(),
        ctx.zeros("b", 700 * 20).unwrap(),
    );
    let (c, other) = (
        ctx.zeros("c", 30 * 20 + 30).unwrap(),
        ctx.zeros("other", 30).unwrap(),
    );
    let scratch = ctx.zeros("scratch", 64 * 30 * 21).unwrap();
    for (sums, why) in [
        (View::from(&other), "another buffer"),
        (View::at(&c, 30 * 20 - 1), "overlapping C"),
    ] {
        let e = bind_matmul_split_k_row_sums(ctx, &mut reg, d, &a, &b, &c, sums, Some(&scratch))
            .err()
            .unwrap_or_else(|| panic!("row sums in {why} were accepted"));
        assert!(e.to_string().contains("apart from C"), "{why}: {e}");
    }
    let beside = View::at(&c, 30 * 20);
    let split =
        bind_matmul_split_k_row_sums(ctx, &mut reg, d, &a, &b, &c, beside, Some(&scratch)).unwrap();
    assert_eq!(split.map(|op| op.kernels.len()), Some(2));
    let short = MatmulDesc { k: 200, ..d };
    let none =
        bind_matmul_split_k_row_sums(ctx, &mut reg, short, &a, &b, &c, beside, Some(&scratch))
            .unwrap();
    assert!(none.is_none(), "K under two slices binds nothing");
    let wide = MatmulDesc {
        m: 1000,
        k: 300,
        n: 520,
        ..d
    };
    assert!(wide.split_k_slices() >= 2 && !wide.split_k().small_tiles);
    let (a, b) = (
        ctx.zeros("a", 1000 * 300).unwrap(),
        ctx.zeros("b", 300 * 520).unwrap(),
    );
    let c = ctx.zeros("c", 1000 * 520 + 1000).unwrap();
    let scratch = ctx.zeros("scratch", 8 * 1000 * 521).unwrap();
    let beside = View::at(&c, 1000 * 520);
    let none =
        bind_matmul_split_k_row_sums(ctx, &mut reg, wide, &a, &b, &c, beside, Some(&scratch))
            .unwrap();
    assert!(none.is_none(), "a 64×64 split binds nothing");
}
