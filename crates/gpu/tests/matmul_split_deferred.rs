//! K-split weight gradients whose second stage is left to one table
//! reduce (`bind_split_k_deferred`, `bind_reduce_table`: how a backward
//! reduces its blocks' weight gradients at its end) give the bits of each
//! split reduced at once — with its bias gradient as row sums on the
//! small-output kernel, without on it and on the 64×64 kernel — and the
//! table refuses a scratch that is also the output, and an empty table.
//! (Its own test binary: `matmul.rs` counts the pipelines of its registry.)

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::matmul::{
    bind_matmul_split_k, bind_matmul_split_k_row_sums, bind_reduce_table, bind_split_k_deferred,
    matmul_reference, MatmulDesc, SplitReduce,
};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;

/// `dW (m, n) += dyᵀ·x` over `k` rows.
fn weight_grad(m: u32, k: u32, n: u32) -> MatmulDesc {
    MatmulDesc {
        m,
        k,
        n,
        trans_a: true,
        accumulate: true,
        ..Default::default()
    }
}

#[test]
fn weight_gradients_reduced_in_one_table_are_each_reduced_at_once() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(91);
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    // (desc, with row sums): small-output kernel with and without them,
    // then the 64×64 kernel (128 tiles of 64, two slices).
    let cases = [
        (weight_grad(96, 512, 32), true),
        (weight_grad(64, 512, 48), false),
        (weight_grad(512, 256, 1024), false),
    ];
    // Every dW then its row sums, one after another in one buffer (a
    // gradients buffer); each case's slices in its region of one scratch.
    let (mut ops, mut out0, mut at) = (Vec::new(), Vec::new(), 0u32);
    for &(d, sums) in &cases {
        let (mu, nu, ku) = (d.m as usize, d.n as usize, d.k as usize);
        let (a, b) = (random(&mut rng, ku * mu), random(&mut rng, ku * nu));
        ops.push((d, sums, a, b, out0.len() as u32, at));
        out0.extend(random(&mut rng, mu * nu + mu));
        at += d.split_k().slices * d.m * (d.n + 1);
    }
    let slices = ctx.zeros("slices", at as usize).unwrap();
    let (deferred, at_once) = (
        ctx.upload("deferred", &out0).unwrap(),
        ctx.upload("at once", &out0).unwrap(),
    );
    let mut kernels: Vec<BoundKernel> = Vec::new();
    let mut reduces: Vec<SplitReduce> = Vec::new();
    let mut alone = Vec::new();
    for (d, sums, a, b, c_at, s_at) in &ops {
        let (a_buf, b_buf) = (ctx.upload("a", a).unwrap(), ctx.upload("b", b).unwrap());
        let len = d.m * d.n;
        let views = [(&a_buf).into(), (&b_buf).into(), View::at(&deferred, *c_at)];
        let row_sums = sums.then(|| View::at(&deferred, c_at + len));
        let at = View::at(&slices, *s_at);
        let (k, r) = bind_split_k_deferred(ctx, &mut reg, *d, views, row_sums, at)
            .unwrap()
            .expect("the shape splits");
        kernels.push(k);
        reduces.push(r);
        // The same split reduced at once, through a scratch of its own.
        let scratch = ctx.zeros("scratch", at_len(*d)).unwrap();
        let c = View::at(&at_once, *c_at);
        let op = match sums {
            true => bind_matmul_split_k_row_sums(
                ctx,
                &mut reg,
                *d,
                &a_buf,
                &b_buf,
                c,
                View::at(&at_once, c_at + len),
                Some(&scratch),
            )
            .unwrap()
            .expect("splits"),
            false => {
                bind_matmul_split_k(ctx, &mut reg, *d, &a_buf, &b_buf, None, c, Some(&scratch))
                    .unwrap()
            }
        };
        assert_eq!(op.kernels.len(), 2, "{d:?} splits at once too");
        alone.push((op, a_buf, b_buf, scratch));
    }
    kernels.push(bind_reduce_table(ctx, &mut reg, &reduces, &slices, &deferred).unwrap());
    let all: Vec<&BoundKernel> = kernels
        .iter()
        .chain(alone.iter().flat_map(|(op, ..)| &op.kernels))
        .collect();
    submit(ctx, "split_k_deferred", &all);
    let read = |b| pollster::block_on(ctx.read_f32(b, out0.len())).unwrap();
    let (got, want) = (read(&deferred), read(&at_once));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&got),
        bits(&want),
        "the table's bits are each reduce's"
    );
    // And each dW is the reference's (onto what C held).
    for (d, _, a, b, c_at, _) in &ops {
        let (c, len) = (*c_at as usize, (d.m * d.n) as usize);
        let mut reference = matmul_reference(*d, a, b, None);
        reference
            .iter_mut()
            .zip(&out0[c..])
            .for_each(|(x, c)| *x += c);
        let atol = 4e-5 * (d.k as f64).sqrt();
        assert_close(&format!("{d:?}"), &got[c..c + len], &reference, atol, 1e-4);
    }
    // Refused: an empty table; a scratch that is also the output.
    assert!(bind_reduce_table(ctx, &mut reg, &[], &slices, &deferred).is_err());
    let err = bind_reduce_table(ctx, &mut reg, &reduces, &deferred, &deferred)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("share a buffer"), "{err}");
}

/// Floats a split of `d` needs in a scratch: its slices and row sums.
fn at_len(d: MatmulDesc) -> usize {
    (d.split_k().slices * d.m * (d.n + 1)) as usize
}
