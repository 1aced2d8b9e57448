//! The f16-storage linear kernels (`matmul_f16w.wgsl`: tiled and GEMV)
//! against the f32 reference on the same half-rounded weights, so that only
//! the order of the f32 sums differs: odd M, K and N around the 64×64 tile
//! and 16-wide K step, the packed weight at an even offset (whole words) and
//! at an odd one (pairs straddling words), with and without bias.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::matmul::f16w::{
    bind_matmul_f16w, pack_cpu, PackedW, GEMV_F16W, GEMV_F16W_ANY, MATMUL_F16W,
};
use tinygpt_gpu::ops::matmul::{f16w_golden, f32_order_bound, matmul_reference, MatmulDesc};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::testing::TestGpu;

fn check(gpu: &TestGpu, desc: MatmulDesc, w_off: u32, seed: u64) {
    let ctx = &gpu.ctx;
    let mut rng = Rng::new(seed);
    let x = random(&mut rng, desc.m * desc.k);
    // Weights exactly representable as halves: packing loses nothing.
    let w: Vec<f32> = random(&mut rng, desc.n * desc.k)
        .iter()
        .map(|&v| half::f16::from_f32(v).to_f32())
        .collect();
    let bias = random(&mut rng, desc.n);
    let flat: Vec<f32> = [vec![0.5; w_off as usize], w.clone()].concat();
    let packed = pack_cpu(&flat, None);
    let x_buf = ctx.upload("x", &x).unwrap();
    let w_buf = ctx
        .upload_bytes("w_f16", bytemuck::cast_slice(&packed))
        .unwrap();
    let bias_buf = ctx.upload("bias", &bias).unwrap();
    let out = ctx.zeros("out", (desc.m * desc.n) as usize).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let bias_view = desc.bias.then(|| View::from(&bias_buf));
    let k = bind_matmul_f16w(
        ctx,
        &mut reg,
        desc,
        &x_buf,
        PackedW::at(&w_buf, w_off),
        bias_view,
        &out,
    )
    .unwrap();
    // One row runs the layout the decoder runs on this device (the lanes
    // on a GPU; tests/gemv_fused.rs runs both anywhere).
    let key = match desc.m {
        1 if ctx.cpu_device => "gemv_f16w_cols",
        1 if w_off.is_multiple_of(4) && desc.k.is_multiple_of(4) => GEMV_F16W.key,
        1 => GEMV_F16W_ANY.key,
        _ => MATMUL_F16W.key,
    };
    assert_eq!(k.key, key);
    submit(ctx, "matmul_f16w", &[&k]);
    let got = pollster::block_on(ctx.read_f32(&out, (desc.m * desc.n) as usize)).unwrap();
    let want = matmul_reference(desc, &x, &w, desc.bias.then_some(&bias[..]));
    let atol = 1e-5 * (desc.k as f64).sqrt() * 4.0;
    assert_close(&format!("{desc:?} w_off {w_off}"), &got, &want, atol, 1e-5);
}

#[test]
fn f16_storage_kernels_match_the_reference_on_rounded_weights() {
    let gpu = gpu_or_skip!();
    // (M, K, N): the GEMVs with K below and past their rounds of eight
    // loads (32 halves per lane aligned, 16 unaligned: K = 1024 and 512 per
    // 32 lanes; 1540 leaves 129 quads past the round, four loads ahead and
    // one more), W's size not a multiple of the aligned kernel's 16-byte
    // vectors (36 × 5), then the tiled kernel. Offset 12 runs the aligned
    // GEMV where K allows, 6 and 7 the other.
    let shapes = [
        (1, 37, 5),
        (1, 36, 5),
        (1, 200, 70),
        (1, 1030, 9),
        (1, 1028, 9),
        (1, 2052, 3),
        (1, 1540, 9),
        (1, 517, 3),
        (3, 5, 7),
        (65, 17, 63),
        (130, 48, 70),
    ];
    for (i, &(m, k, n)) in shapes.iter().enumerate() {
        for (j, w_off) in [0u32, 6, 7, 12].into_iter().enumerate() {
            let bias = j != 1;
            let desc = MatmulDesc {
                bias,
                ..MatmulDesc::linear(m, k, n)
            };
            check(gpu, desc, w_off, 100 + (4 * i + j) as u64);
        }
    }
}

/// The kernels against the device-emulating golden (`f16w_golden`: RNE
/// halves, f32 fused multiply-adds in K order) on raw f32 weights, so the
/// f16 rounding is in both and only f32 rounding can differ: the tiled
/// kernel sums in the golden's order and matches it bit for bit (with the
/// device's `fma`, fused or not: lavapipe's is not), and every kernel stays
/// within the f32 reordering bound. A difference past it is a kernel bug,
/// never f16 drift.
#[test]
fn f16_storage_kernels_match_the_device_emulating_golden() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut rng = Rng::new(404);
    for &(m, k, n) in &[(65, 129, 63), (64, 1032, 40), (1, 136, 70), (1, 131, 70)] {
        let desc = MatmulDesc::linear(m, k, n);
        let (x, w, b) = (
            random(&mut rng, m * k),
            random(&mut rng, n * k),
            random(&mut rng, n),
        );
        let packed = pack_cpu(&w, None);
        let w_buf = ctx
            .upload_bytes("w", bytemuck::cast_slice(&packed))
            .unwrap();
        let (x_buf, b_buf) = (ctx.upload("x", &x).unwrap(), ctx.upload("b", &b).unwrap());
        let out = ctx.zeros("out", (m * n) as usize).unwrap();
        let kernel = bind_matmul_f16w(
            ctx,
            &mut reg,
            desc,
            &x_buf,
            PackedW::at(&w_buf, 0),
            Some((&b_buf).into()),
            &out,
        )
        .unwrap();
        submit(ctx, "golden", &[&kernel]);
        let got = pollster::block_on(ctx.read_f32(&out, (m * n) as usize)).unwrap();
        let goldens = [false, true].map(|fused| f16w_golden(desc, &x, &w, Some(&b), fused));
        let exacts = goldens
            .each_ref()
            .map(|g| got.iter().zip(g).filter(|(a, b)| a == b).count());
        let (exact, golden) = if exacts[1] > exacts[0] {
            (exacts[1], &goldens[1])
        } else {
            (exacts[0], &goldens[0])
        };
        let bound = f32_order_bound(desc, &x, &w, Some(&b));
        let worst = got
            .iter()
            .zip(golden)
            .zip(&bound)
            .map(|((g, r), e)| (g - r).abs() / e)
            .fold(0.0f32, f32::max);
        eprintln!(
            "{} {m}×{k}×{n}: {exact}/{} bit-exact, worst |diff| = {worst:.3} × bound",
            kernel.key,
            got.len()
        );
        assert!(worst <= 1.0, "{desc:?}: a difference past f32 rounding");
        if kernel.key == MATMUL_F16W.key && !ctx.cpu_device {
            assert!(
                exact * 10 >= got.len() * 9,
                "the tiled kernel sums in the golden's order"
            );
        }
    }
}

/// The golden tells a kernel bug from f16 drift: the dropped-tail variant
/// lands far past the f32 bound, where every real kernel stays inside it.
#[test]
fn the_golden_catches_a_kernel_bug() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let mut rng = Rng::new(405);
    let desc = MatmulDesc::linear(8, 40, 16);
    let (x, w) = (random(&mut rng, 8 * 40), random(&mut rng, 16 * 40));
    let b = vec![0.0f32; 16];
    let w_buf = ctx
        .upload_bytes("w", bytemuck::cast_slice(&pack_cpu(&w, None)))
        .unwrap();
    let (x_buf, b_buf) = (ctx.upload("x", &x).unwrap(), ctx.upload("b", &b).unwrap());
    let out = ctx.zeros("out", 8 * 16).unwrap();
    let packed = PackedW {
        fault: Some(tinygpt_gpu::gate::Fault::DropKTail),
        ..PackedW::at(&w_buf, 0)
    };
    let k = bind_matmul_f16w(
        ctx,
        &mut reg,
        desc,
        &x_buf,
        packed,
        Some((&b_buf).into()),
        &out,
    )
    .unwrap();
    submit(ctx, "golden_fault", &[&k]);
    let got = pollster::block_on(ctx.read_f32(&out, 8 * 16)).unwrap();
    let golden = f16w_golden(desc, &x, &w, Some(&b), false);
    let bound = f32_order_bound(desc, &x, &w, Some(&b));
    let worst = got
        .iter()
        .zip(&golden)
        .zip(&bound)
        .map(|((g, r), e)| (g - r).abs() / e)
        .fold(0.0f32, f32::max);
    assert!(
        worst > 100.0,
        "the dropped tail stays near the golden: {worst}"
    );
}
