//! The tensor-core matmul's GELU-gradient epilogue (`Epilogue::GeluGrad`),
//! as the MLP's backward runs it: `dpre = GELU'(pre) ⊙ (dy·W)` with dy
//! scaled by the gradient scale as staged, and dpre's f16 copy (times the
//! same scale) for the next product. On each kernel it must give the bits
//! of the plain product followed by the GELU backward kernel — what the
//! training graph ran before the epilogue — and its copy must be the
//! staging's halves of its own output. Devices without cooperative
//! matrices (lavapipe, every browser) say that it did not run and why.

use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::gelu::bind_gelu_backward_copy;
use tinygpt_gpu::ops::matmul::coop::{
    bind_matmul_coop_variant, coop_unavailable, CoopKernel, CoopOptions, Epilogue,
};
use tinygpt_gpu::ops::matmul::coop_stage::StagedRows;
use tinygpt_gpu::ops::matmul::MatmulDesc;
use tinygpt_gpu::testing::{assert_copy_is_staged, random, TestGpu};

/// The gradient scale of a batch of N rows (the builder's: N rounded up to
/// a power of two).
const SCALE: f32 = 256.0;

/// dpre by the epilogue, and by the plain product then the GELU backward,
/// as bits (each copy checked against its output's staging on the way).
struct Both {
    fused: Vec<u32>,
    apart: Vec<u32>,
}

fn run(gpu: &TestGpu, kernel: CoopKernel, desc: MatmulDesc, ops: [&wgpu::Buffer; 3]) -> Both {
    let ctx = &gpu.ctx;
    let [dy, w, pre] = ops;
    let (m, n) = (desc.m, desc.n);
    let len = (m * n) as usize;
    let (dpre, dx, dpre_apart) = (
        ctx.zeros("dpre", len).unwrap(),
        ctx.zeros("dx", len).unwrap(),
        ctx.zeros("dpre_apart", len).unwrap(),
    );
    let copy = StagedRows::for_producer(ctx, (&dpre).into(), (m, n), SCALE).unwrap();
    let copy_apart = StagedRows::for_producer(ctx, (&dpre_apart).into(), (m, n), SCALE).unwrap();
    let fused = CoopOptions {
        kernel,
        scale: SCALE,
        epilogue: Epilogue::GeluGrad(pre.into(), Some(&copy)),
        ..Default::default()
    };
    let plain = CoopOptions {
        kernel,
        scale: SCALE,
        ..Default::default()
    };
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let ks = bind_matmul_coop_variant(ctx, &mut reg, desc, (dy, fused), w, None, &dpre);
    let ks2 = bind_matmul_coop_variant(ctx, &mut reg, desc, (dy, plain), w, None, &dx);
    let shape = (m, n, None);
    let ops = (pre.into(), (&dx).into());
    let gelu = bind_gelu_backward_copy(
        ctx,
        &mut reg,
        shape,
        false,
        ops,
        (&dpre_apart).into(),
        &copy_apart,
    );
    drop(reg);
    let mut ks = ks.unwrap();
    ks.extend(ks2.unwrap());
    ks.push(gelu.unwrap());
    submit(ctx, "coop_gelu_grad", &ks.iter().collect::<Vec<_>>());
    let bits = |b: &wgpu::Buffer| -> Vec<u32> {
        let v = pollster::block_on(ctx.read_f32(b, len)).unwrap();
        v.iter().map(|x| x.to_bits()).collect()
    };
    let what = format!("{kernel:?}: dpre's f16 copy");
    assert_copy_is_staged(gpu, &copy, (&dpre).into(), (m, n), &what);
    let what = format!("{kernel:?}: the GELU backward's f16 copy");
    assert_copy_is_staged(gpu, &copy_apart, (&dpre_apart).into(), (m, n), &what);
    Both {
        fused: bits(&dpre),
        apart: bits(&dpre_apart),
    }
}

#[test]
fn the_gelu_gradient_epilogue_gives_the_bits_of_the_product_then_the_gelu_backward() {
    let gpu = gpu_or_skip!();
    if let Some(why) = coop_unavailable(&gpu.ctx) {
        tinygpt_gpu::testing::did_not_run("coop GELU-gradient epilogue", why);
        return;
    }
    let ctx = &gpu.ctx;
    // dx (M, d_in) = dy (M, d_out) · W (d_out, d_in): rows past a tile,
    // d_in past a 128-wide tile and not a multiple of 32 (the copy's
    // padded columns), K across two blocks.
    let (m, d_out, d_in) = (130u32, 72u32, 200u32);
    let desc = MatmulDesc {
        m,
        k: d_out,
        n: d_in,
        ..Default::default()
    };
    let mut rng = Rng::new(12);
    // Gradients of order 1/N as the loss gives them; pre-activations of
    // order one, both signs.
    let dy: Vec<f32> = random(&mut rng, m * d_out)
        .iter()
        .map(|v| v / SCALE)
        .collect();
    let (w, pre) = (random(&mut rng, d_out * d_in), random(&mut rng, m * d_in));
    let pre: Vec<f32> = pre.iter().map(|v| 4.0 * v).collect();
    let up = |v: &[f32]| ctx.upload("coop_gelu_grad", v).unwrap();
    let (dyb, wb, preb) = (up(&dy), up(&w), up(&pre));
    for kernel in CoopKernel::ALL {
        let r = run(gpu, kernel, desc, [&dyb, &wb, &preb]);
        let differ = r.fused.iter().zip(&r.apart).filter(|(a, b)| a != b).count();
        assert_eq!(
            differ,
            0,
            "{kernel:?}: {differ} of {} outputs differ",
            r.fused.len()
        );
        assert!(r.fused.iter().any(|&b| b != 0), "{kernel:?}: all zeros");
        eprintln!(
            "coop GELU-gradient epilogue ({}): the product-then-GELU-backward bits, its copy the staging's",
            kernel.name()
        );
    }
}
