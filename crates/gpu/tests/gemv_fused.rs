//! The decoder's fused GEMVs (`shaders/gemv_row.wgsl` around the f32 and
//! the f16-storage GEMV): LayerNorm prologue, GELU epilogue and the residual
//! add (accumulate), alone and together, against the same ops as separate
//! kernels (LayerNorm, plain GEMV, GELU, residual add) and against an f64
//! CPU reference. The f16 weights are half-rounded for every comparison, so
//! only the order of f32 sums differs; K = 48 runs the aligned f16 GEMV,
//! K = 50 (or an odd weight offset) the one for any alignment.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gate::Fault;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::matmul::f16w::{bind_gemv_f16w, PackedW};
use tinygpt_gpu::ops::matmul::{bind_gemv, MatmulDesc, RowFusion};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random_in;

mod gemv_case;
use gemv_case::*;

#[test]
fn fused_gemvs_match_the_separate_kernels_and_the_reference() {
    let gpu = gpu_or_skip!();
    let mut identical = 0;
    let mut compared = 0;
    for (i, &(k, n, w_off)) in SHAPES.iter().enumerate() {
        let case = Case::new(&gpu.ctx, k, n, w_off, 40 + i as u64);
        for &(ln, gelu, residual) in &FOLDS {
            let f = Folds { ln, gelu, residual };
            let want = case.reference(f);
            for f16 in [false, true] {
                let what = format!("K {k} N {n} w_off {w_off} {f:?} f16 {f16}");
                let fused = case.fused(gpu, f16, f);
                let unfused = case.unfused(gpu, f16, f);
                // Same sums in the same order, so only a compiler's choice to
                // fuse a multiply-add differently can tell them apart.
                assert_close(
                    &format!("{what}: fused vs unfused"),
                    &fused,
                    &unfused,
                    1e-6,
                    1e-6,
                );
                identical += fused.iter().zip(&unfused).filter(|(a, b)| a == b).count();
                compared += fused.len();
                let atol = 2e-6 * (k as f64).sqrt();
                assert_close(&format!("{what}: fused vs f64"), &fused, &want, atol, 1e-5);
            }
        }
    }
    eprintln!("fused == unfused bit for bit on {identical} of {compared} outputs");
}

/// The lanes summed with subgroup shuffles (`shaders/lanes_sg.wgsl`) give
/// the workgroup tree's bits in every shape and fold above, f32 and f16
/// weights: the subgroups fast path's claim, per variant.
#[test]
fn subgroup_sums_give_the_workgroup_trees_bits() {
    let gpu = gpu_or_skip!();
    let size = match gpu.ctx.subgroup_size() {
        Ok(n) => n,
        Err(why) => return tinygpt_gpu::testing::did_not_run("subgroup sums", why),
    };
    for (i, &(k, n, w_off)) in SHAPES.iter().enumerate() {
        let case = Case::new(&gpu.ctx, k, n, w_off, 40 + i as u64);
        for &(ln, gelu, residual) in &FOLDS {
            let f = Folds { ln, gelu, residual };
            for f16 in [None, Some(None)] {
                let tree = case.fused_in(gpu, f16, f, (false, None));
                let sg = case.fused_in(gpu, f16, f, (false, Some(size)));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let what =
                    format!("K {k} N {n} w_off {w_off} {f:?} f16 {f16:?}, subgroups of {size}");
                assert_eq!(bits(&sg), bits(&tree), "{what}");
            }
        }
    }
}

/// Many rows at once with the LayerNorm folded: past 512 workgroups each
/// runs two groups of 8 columns (`LN_WIDE_ABOVE`), and every row still gets
/// the bits it gets alone — f32, aligned f16 (K = 48) and any-alignment f16
/// (K = 50) weights; N = 1030 leaves the last workgroup's second group
/// partly past the end. 5 rows × 129 groups of 8 columns = 645 workgroups.
#[test]
fn a_layernorm_gemv_over_many_rows_gives_each_row_its_bits_alone() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let (rows, n) = (5usize, 1030u32);
    for (i, (k, w_off)) in [(48u32, 0u32), (50, 4)].into_iter().enumerate() {
        let case = Case::new(ctx, k, n, w_off, 90 + i as u64);
        let mut rng = Rng::new(7 + i as u64);
        let xs: Vec<Vec<f32>> = (0..rows)
            .map(|_| random_in(&mut rng, k as usize, -0.5, 1.5))
            .collect();
        for f16 in [false, true] {
            let run = |xs: &[Vec<f32>]| -> Vec<f32> {
                let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
                let x = ctx.upload("xs", &xs.concat()).unwrap();
                let out = ctx.zeros("out", xs.len() * n as usize).unwrap();
                let fusion = RowFusion {
                    layernorm: Some((case.ln_w(), case.ln_b())),
                    ..RowFusion::default()
                };
                let desc = MatmulDesc::linear(xs.len() as u32, k, n);
                let k = case.gemv_desc(ctx, &mut reg, f16, desc, &x, fusion, &out);
                submit(ctx, "rows", &[&k]);
                pollster::block_on(ctx.read_f32(&out, xs.len() * n as usize)).unwrap()
            };
            let together = run(&xs);
            for (r, x) in xs.iter().enumerate() {
                let alone = run(std::slice::from_ref(x));
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                let row = &together[r * n as usize..][..n as usize];
                assert_eq!(bits(row), bits(&alone), "K {k} f16 {f16}: row {r}");
            }
            assert!(together.iter().all(|v| v.is_finite() && *v != 0.0));
        }
    }
}

/// A LayerNorm-prologue GEMV whose input row is a stack of slots (the
/// decoder's `Stack` layout: `RowFusion::slots`) gives the bits of the
/// same GEMV reading their sum, added on the CPU in slot order (f32 adds,
/// exact alike), for every row of several — f32 and f16 weights, aligned
/// and not; slots without a LayerNorm, or more than `a` holds, are refused.
#[test]
fn a_gemv_over_slots_gives_the_bits_of_their_sum() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let (rows, n, slots) = (3usize, 70u32, 6usize);
    for (i, (k, w_off)) in [(48u32, 0u32), (50, 4)].into_iter().enumerate() {
        let case = Case::new(ctx, k, n, w_off, 60 + i as u64);
        let mut rng = Rng::new(17 + i as u64);
        // Slot-major: slot s of row r at (s·rows + r)·K.
        let stack = random_in(&mut rng, slots * rows * k as usize, -0.5, 1.0);
        let kk = k as usize;
        let sum: Vec<f32> = (0..rows * kk)
            .map(|e| (1..slots).fold(stack[e], |v, s| v + stack[s * rows * kk + e]))
            .collect();
        let ln = Some((case.ln_w(), case.ln_b()));
        let desc = MatmulDesc::linear(rows as u32, k, n);
        for f16 in [false, true] {
            let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
            let mut run = |x: &[f32], n_slots: u32| -> Vec<f32> {
                let x = ctx.upload("x", x).unwrap();
                let out = ctx.zeros("out", rows * n as usize).unwrap();
                let fusion = RowFusion {
                    layernorm: ln,
                    slots: n_slots,
                    ..RowFusion::default()
                };
                let k = case.gemv_desc(ctx, &mut reg, f16, desc, &x, fusion, &out);
                submit(ctx, "slots", &[&k]);
                pollster::block_on(ctx.read_f32(&out, rows * n as usize)).unwrap()
            };
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            let (summed, stacked) = (run(&sum, 1), run(&stack, slots as u32));
            assert_eq!(bits(&stacked), bits(&summed), "K {k} f16 {f16}");
            assert!(stacked.iter().all(|v| v.is_finite() && *v != 0.0));
            // Fewer slots read a different row.
            assert_ne!(bits(&run(&stack, 2)), bits(&summed), "K {k} f16 {f16}");
        }
        let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
        let x = ctx.upload("x", &stack).unwrap();
        let out = ctx.zeros("out", rows * n as usize).unwrap();
        let refuse = |fusion: RowFusion<'_>, reg: &mut tinygpt_gpu::PipelineRegistry| {
            let plain = bind_gemv(ctx, reg, desc, &x, &case.w, Some(case.bias()), fusion, &out);
            assert!(plain.is_err(), "{fusion:?}");
        };
        refuse(
            RowFusion {
                slots: 2,
                ..RowFusion::default()
            },
            &mut reg,
        );
        refuse(
            RowFusion {
                layernorm: ln,
                slots: slots as u32 + 1,
                ..RowFusion::default()
            },
            &mut reg,
        );
    }
}

/// The column layout (one invocation per output column: CPU
/// implementations) gives the lane layout's results to f32 rounding, and
/// the f64 reference's, f32 and f16 weights at any alignment and K, with
/// GELU and the residual add folded; its f16 fault variants carry their
/// fault. It has no LayerNorm prologue (refused below).
#[test]
fn column_gemvs_match_the_lane_gemvs_and_the_reference() {
    let gpu = gpu_or_skip!();
    // (K, N, offset of the f16 weights): K a multiple of 4 or not, odd; an
    // odd weight offset; N past the 64 columns of a workgroup.
    let shapes = [
        (48, 19, 0),
        (50, 9, 4),
        (48, 13, 7),
        (1, 3, 0),
        (7, 70, 1),
        (517, 130, 3),
        (1030, 4, 0),
    ];
    for (i, &(k, n, w_off)) in shapes.iter().enumerate() {
        let case = Case::new(&gpu.ctx, k, n, w_off, 90 + i as u64);
        for (gelu, residual) in [(false, false), (true, false), (false, true), (true, true)] {
            let f = Folds {
                ln: false,
                gelu,
                residual,
            };
            let want = case.reference(f);
            for f16 in [false, true] {
                let what = format!("K {k} N {n} w_off {w_off} {f:?} f16 {f16}");
                let cols = case.fused_in(gpu, f16.then_some(None), f, (true, None));
                let lanes = case.fused(gpu, f16, f);
                let atol = 2e-6 * (k as f64).sqrt();
                assert_close(
                    &format!("{what}: columns vs lanes"),
                    &cols,
                    &lanes,
                    atol,
                    1e-5,
                );
                assert_close(&format!("{what}: columns vs f64"), &cols, &want, atol, 1e-5);
            }
        }
        let f = Folds {
            ln: false,
            gelu: false,
            residual: false,
        };
        let real = case.fused_in(gpu, Some(None), f, (true, None));
        let what = format!("columns K {k} w_off {w_off}");
        if k <= 64 {
            // Short sums: f16 accumulation stays near the real result.
            let acc16 = case.fused_in(gpu, Some(Some(Fault::F16Accumulate)), f, (true, None));
            assert_close(&format!("{what} f16acc"), &acc16, &real, 2e-2, 2e-2);
            assert!(acc16 != real, "{what}: f16 accumulation rounds");
        }
        if k >= 16 && k % 16 != 0 {
            let dropped = case.fused_in(gpu, Some(Some(Fault::DropKTail)), f, (true, None));
            assert!(
                dropped.iter().zip(&real).any(|(d, r)| (d - r).abs() > 1e-3),
                "{what}: the K tail was dropped"
            );
        }
    }
}

/// The fault variants of every f16 GEMV (aligned or not, with or without
/// the LayerNorm) are the real ones' loops with the fault: the dropped K
/// tail changes the result, f16 accumulation stays near it on these inputs.
#[test]
fn fused_fault_variants_run_with_their_fault() {
    let gpu = gpu_or_skip!();
    for (k, w_off) in [(40, 0), (42, 1)] {
        let case = Case::new(&gpu.ctx, k, 11, w_off, 7);
        for ln in [false, true] {
            let f = Folds {
                ln,
                gelu: false,
                residual: false,
            };
            let real = case.fused(gpu, true, f);
            let what = format!("K {k} w_off {w_off} LayerNorm {ln}");
            let acc16 = case.fused_with(gpu, Some(Some(Fault::F16Accumulate)), f);
            assert_close(&format!("{what} f16acc"), &acc16, &real, 2e-2, 2e-2);
            let dropped = case.fused_with(gpu, Some(Some(Fault::DropKTail)), f);
            assert!(
                dropped.iter().zip(&real).any(|(d, r)| (d - r).abs() > 1e-3),
                "{what}"
            );
        }
    }
}

#[test]
fn a_layernorm_that_is_not_k_wide_or_shares_c_is_refused() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let case = Case::new(ctx, 48, 8, 0, 1);
    // Large enough for K elements, so that sharing it is what is refused.
    let out = ctx.zeros("out", 100).unwrap();
    let desc = MatmulDesc::linear(1, 48, 8);
    let other = ctx.zeros("other", 100).unwrap();
    let bad = [
        // The bias view at the end of `vecs` leaves fewer than K elements.
        (case.ln_w(), View::at(&case.vecs, case.pad + 2 * 48 + 1)),
        // Weight and bias in two buffers.
        (case.ln_w(), View::from(&other)),
        // The LayerNorm parameters in the written buffer.
        (View::from(&out), View::at(&out, 0)),
    ];
    for (w, b) in bad {
        let fusion = RowFusion {
            layernorm: Some((w, b)),
            ..RowFusion::default()
        };
        let bias = Some(case.bias());
        assert!(bind_gemv(ctx, &mut reg, desc, &case.x, &case.w, bias, fusion, &out).is_err());
        let packed = PackedW::at(&case.w16, 0);
        let got = bind_gemv_f16w(ctx, &mut reg, desc, &case.x, packed, bias, fusion, &out);
        assert!(got.is_err());
    }
    // The column layout has no LayerNorm prologue.
    let fusion = RowFusion {
        layernorm: Some((case.ln_w(), case.ln_b())),
        columns: true,
        ..RowFusion::default()
    };
    let bias = Some(case.bias());
    let Err(err) = bind_gemv(ctx, &mut reg, desc, &case.x, &case.w, bias, fusion, &out) else {
        panic!("a LayerNorm with the column layout was bound");
    };
    assert!(err.to_string().contains("column layout"), "{err}");
    let packed = PackedW::at(&case.w16, 0);
    assert!(bind_gemv_f16w(ctx, &mut reg, desc, &case.x, packed, bias, fusion, &out).is_err());
}
