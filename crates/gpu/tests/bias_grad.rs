//! The bias gradient (column sums of dout) against the CPU reference's
//! `matmul_backward`, in one stage (≤ 64 rows) and two (more rows), in both
//! kernel layouts.

use tinygpt_core::model::layers::matmul_backward;
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::bias_grad::{
    bind_bias_grad, bind_column_sum, bind_column_sums, BiasGradDesc, ColumnSum,
};
use tinygpt_gpu::ops::{BoundOp, View};
use tinygpt_gpu::testing::random;
use tinygpt_gpu::GpuContext;

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

/// The reference's `dbias += Σ_rows dout`, through the linear layer's
/// backward with a 1-wide input.
fn reference(dout: &[f32], db0: &[f32], rows: usize) -> Vec<f32> {
    let oc = db0.len();
    let (mut dinp, mut dw, mut db) = (vec![0.0; rows], vec![0.0; oc], db0.to_vec());
    let (inp, w) = (vec![0.0; rows], vec![0.0; oc]);
    matmul_backward(&mut dinp, &mut dw, Some(&mut db), dout, &inp, &w, 1, oc);
    db
}

#[test]
fn column_sums_match_reference() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    // (rows, cols): one chunk; two chunks; many chunks, cols past 64;
    // chunks of more than 64 rows (√5000 rounded up to 96).
    let shapes = [(7u32, 13u32), (37, 96), (300, 13), (1000, 70), (5000, 5)];
    for (i, &(rows, cols)) in shapes.iter().enumerate() {
        for (accumulate, layout) in [
            (true, Layout::Gpu),
            (false, Layout::Gpu),
            (true, Layout::Cpu),
            (false, Layout::Cpu),
        ] {
            let mut rng = Rng::new(800 + i as u64);
            let dout = random(&mut rng, (rows * cols) as usize);
            let db0 = if accumulate {
                random(&mut rng, cols as usize)
            } else {
                vec![0.0; cols as usize]
            };
            let want = reference(&dout, &db0, rows as usize);
            let dout_buf = ctx.upload("dout", &dout).unwrap();
            // db is a view 2 floats into the flat gradient buffer; overwrite
            // mode must ignore what was there.
            let start = if accumulate {
                db0.clone()
            } else {
                vec![5.0; cols as usize]
            };
            let grads = ctx
                .upload("grads", &[vec![0.0; 2], start].concat())
                .unwrap();
            let desc = BiasGradDesc {
                rows,
                cols,
                accumulate,
                layout,
            };
            let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
            let op = bind_bias_grad(ctx, &mut reg, desc, &dout_buf, View::at(&grads, 2)).unwrap();
            op.submit(ctx, "bias_grad");
            let got = read(ctx, &grads, 2 + cols as usize);
            // Sums of `rows` terms of magnitude ≤ 1 in another order.
            let atol = 2e-6 * (rows as f64).sqrt();
            assert_close(&format!("{desc:?}"), &got[2..], &want, atol, 1e-5);
        }
    }
}

/// Sums of different widths and accumulation in one dispatch
/// (`bind_column_sums`, how a backward finishes its LayerNorms' and bias
/// gradients' second stages) give each sum's bits bound alone; sources or
/// destinations in two buffers are refused.
#[test]
fn many_sums_in_one_dispatch_are_each_sum_alone() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let rows = 37u32;
    // (columns, accumulate): past one and two workgroups' columns, narrower.
    let shapes = [
        (13u32, true),
        (70, false),
        (5, true),
        (40, true),
        (96, false),
    ];
    let mut rng = Rng::new(880);
    let (mut src, mut dst0, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
    for &(cols, _) in &shapes {
        offsets.push((src.len() as u32 + 3, dst0.len() as u32 + 1));
        src.extend(
            [0.5; 3]
                .into_iter()
                .chain(random(&mut rng, (rows * cols) as usize)),
        );
        dst0.extend(std::iter::once(7.0).chain(random(&mut rng, cols as usize)));
    }
    let src_buf = ctx.upload("src", &src).unwrap();
    for layout in [Layout::Gpu, Layout::Cpu] {
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        // Each alone, into its own copy of the destinations.
        let alone = ctx.upload("alone", &dst0).unwrap();
        for (&(cols, acc), &(s, d)) in shapes.iter().zip(&offsets) {
            let sum = [(View::at(&src_buf, s), View::at(&alone, d))];
            let k = bind_column_sum(ctx, &mut reg, layout, rows, cols, rows, acc, &sum).unwrap();
            BoundOp::from(k).submit(ctx, "column_sum");
        }
        let together = ctx.upload("together", &dst0).unwrap();
        let sums: Vec<ColumnSum> = shapes
            .iter()
            .zip(&offsets)
            .map(|(&(cols, accumulate), &(s, d))| ColumnSum {
                src: View::at(&src_buf, s),
                dst: View::at(&together, d),
                cols,
                accumulate,
            })
            .collect();
        let k = bind_column_sums(ctx, &mut reg, layout, rows, rows, &sums).unwrap();
        BoundOp::from(k).submit(ctx, "column_sums");
        let (want, got) = (
            read(ctx, &alone, dst0.len()),
            read(ctx, &together, dst0.len()),
        );
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want), "{layout:?}");
        // And each is the reference's column sum (onto dst0 when accumulating).
        for (&(cols, acc), &(s, d)) in shapes.iter().zip(&offsets) {
            let (s, d, c) = (s as usize, d as usize, cols as usize);
            let start = if acc {
                dst0[d..d + c].to_vec()
            } else {
                vec![0.0; c]
            };
            let want = reference(&src[s..s + rows as usize * c], &start, rows as usize);
            assert_close(
                &format!("{cols} {layout:?}"),
                &got[d..d + c],
                &want,
                1e-5,
                1e-5,
            );
        }
        // The gaps between destinations are untouched.
        for &(_, d) in &offsets {
            assert_eq!(got[d as usize - 1], dst0[d as usize - 1]);
        }
        let other = ctx.upload("other", &dst0).unwrap();
        let mut split = sums.clone();
        split[1].dst = View::at(&other, offsets[1].1);
        let err = bind_column_sums(ctx, &mut reg, layout, rows, rows, &split)
            .err()
            .expect("refused");
        assert!(err.to_string().contains("share one buffer"), "{err}");
    }
}
