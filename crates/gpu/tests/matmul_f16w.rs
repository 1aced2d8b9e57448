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
use tinygpt_gpu::ops::matmul::{matmul_reference, MatmulDesc};
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
    // 32 lanes), W's size not a multiple of the aligned kernel's 16-byte
    // vectors (36 × 5), then the tiled kernel. Offset 12 runs the aligned
    // GEMV where K allows, 6 and 7 the other.
    let shapes = [
        (1, 37, 5),
        (1, 36, 5),
        (1, 200, 70),
        (1, 1030, 9),
        (1, 1028, 9),
        (1, 2052, 3),
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
