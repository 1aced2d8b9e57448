//! The fused LayerNorm + QKV + decode attention kernel
//! (`shaders/attention_decode_qkv.wgsl`) against what it replaces — the
//! LayerNorm-prologue GEMV writing the qkv rows, then the decode attention
//! appending to its own cache — bit for bit: every output row of every
//! step, and both caches after the steps; with f32 weights and with
//! f16-stored ones (and each of the f16 GEMV's test-only kernel faults,
//! which the fused kernel must carry for the f16-storage gate to catch).
//! The shapes cover the column passes (one, three, several, a last one
//! part-empty), K under one round of 256 inputs, one round and a tail, two
//! rounds and a tail, the widest row (whole rounds of the f16 GEMV's 1,024
//! halves), head sizes not a multiple of 4, two samples, and positions
//! past the first chunk of 256. The caches start from the same random
//! contents, so a late position needs no long run of steps. Then the
//! refusals.

use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::{submit, BoundKernel};
use tinygpt_gpu::ops::attention::{
    bind_attention_decode, bind_attention_decode_qkv, decode_position_buffer, set_decode_position,
    DecodeDesc, KvCache, QkvWeight, QkvWeights, DECODE_QKV_MAX_C,
};
use tinygpt_gpu::ops::matmul::f16w::{bind_gemv_f16w, pack_cpu, PackedW};
use tinygpt_gpu::ops::matmul::{bind_gemv, Fault, MatmulDesc, RowFusion};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{random_in, twin_caches, TestGpu};
use tinygpt_gpu::{GpuContext, PipelineRegistry};

/// (C, NH, samples, T_max, positions stepped in order).
const SHAPES: [(u32, u32, u32, u32, &[u32]); 6] = [
    (20, 2, 1, 12, &[0, 1, 5]),
    (128, 4, 2, 64, &[0, 63]),
    (256, 4, 1, 16, &[9]),
    (384, 6, 1, 300, &[3, 256, 299]),
    (516, 6, 1, 8, &[7]),
    // The widest row staged; whole rounds of f16 quads.
    (DECODE_QKV_MAX_C, 8, 1, 4, &[2]),
];

/// The flat parameters of one layer's first LayerNorm and QKV linear, at
/// odd offsets in one buffer (W at a multiple of four, as the fused f16
/// kernel needs), as the model's flat parameters hold them; and their
/// halves packed.
struct Weights {
    buf: wgpu::Buffer,
    halves: wgpu::Buffer,
    at: [u32; 4],
    c: u32,
}

/// The weights' storage: f32, or f16 with a kernel fault or none.
type Storage = Option<Option<Fault>>;

impl Weights {
    fn new(ctx: &GpuContext, c: u32, rng: &mut Rng) -> Self {
        let n = c as usize;
        let mut flat = vec![0.5_f32; 3];
        let mut at = [0; 4];
        let parts = [
            random_in(rng, n, 0.5, 1.5),
            random_in(rng, n, -0.2, 0.2),
            random_in(rng, 3 * n * n, -0.2, 0.2),
            random_in(rng, 3 * n, -0.2, 0.2),
        ];
        for (i, part) in parts.iter().enumerate() {
            while i == 2 && !flat.len().is_multiple_of(4) {
                flat.push(0.125);
            }
            at[i] = flat.len() as u32;
            flat.extend(part);
            flat.push(0.25);
        }
        let buf = ctx.upload("flat", &flat).unwrap();
        let halves = ctx
            .upload_bytes("halves", bytemuck::cast_slice(&pack_cpu(&flat, None)))
            .unwrap();
        Self { buf, halves, at, c }
    }

    fn view(&self, i: usize) -> View<'_> {
        View::at(&self.buf, self.at[i])
    }

    fn packed(&self, fault: Option<Fault>) -> PackedW<'_> {
        PackedW {
            fault,
            ..PackedW::at(&self.halves, self.at[2])
        }
    }

    fn qkv(&self, storage: Storage) -> QkvWeights<'_> {
        QkvWeights {
            ln: (self.view(0), self.view(1)),
            w: match storage {
                None => QkvWeight::F32(self.view(2)),
                Some(fault) => QkvWeight::F16(self.packed(fault)),
            },
            bias: self.view(3),
        }
    }

    /// The LayerNorm-prologue GEMV writing `qkv` (3C a sample).
    fn gemv(
        &self,
        gpu: &TestGpu,
        reg: &mut PipelineRegistry,
        (desc, storage): (DecodeDesc, Storage),
        x: &wgpu::Buffer,
        qkv: &wgpu::Buffer,
    ) -> BoundKernel {
        let fusion = RowFusion {
            layernorm: Some((self.view(0), self.view(1))),
            ..RowFusion::default()
        };
        let m = MatmulDesc::linear(desc.batch, self.c, 3 * self.c);
        let bias = Some(self.view(3));
        match storage {
            None => bind_gemv(&gpu.ctx, reg, m, x, self.view(2), bias, fusion, qkv),
            Some(fault) => {
                bind_gemv_f16w(&gpu.ctx, reg, m, x, self.packed(fault), bias, fusion, qkv)
            }
        }
        .unwrap()
    }
}

fn bits(gpu: &TestGpu, buf: &wgpu::Buffer, n: u64) -> Vec<u32> {
    let v = pollster::block_on(gpu.ctx.read_f32(buf, n as usize)).unwrap();
    v.iter().map(|x| x.to_bits()).collect()
}

/// Steps one shape through both paths with weights in `storage`; the fused
/// kernel's attention reduces with subgroups of `sg` when given.
fn check_shape(
    gpu: &TestGpu,
    (c, nh, batch, t_max, steps): (u32, u32, u32, u32, &[u32]),
    storage: Storage,
    sg: Option<u32>,
) {
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let desc = DecodeDesc {
        c,
        nh,
        t_max,
        batch,
    };
    let mut rng = Rng::new(7 + c as u64);
    let w = Weights::new(ctx, c, &mut rng);
    let rows = |n: u32, label| ctx.zeros(label, (n * c * batch) as usize).unwrap();
    let (x, qkv, out, fused_out) = (
        rows(1, "x"),
        rows(3, "qkv"),
        rows(1, "out"),
        rows(1, "fused"),
    );
    let [cache, fused_cache] = twin_caches(ctx, desc, &mut rng);
    let position = decode_position_buffer(ctx);
    let gemv = w.gemv(gpu, &mut reg, (desc, storage), &x, &qkv);
    let attention = bind_attention_decode(
        ctx,
        &mut reg,
        (false, None),
        desc,
        &position,
        &qkv,
        &cache,
        &out,
    )
    .unwrap();
    let fused = bind_attention_decode_qkv(
        ctx,
        &mut reg,
        sg,
        desc,
        &position,
        &x,
        w.qkv(storage),
        (&fused_cache, &fused_out),
    )
    .unwrap();
    let n = (c * batch) as u64;
    for &p in steps {
        // An offset mean, so the LayerNorm has something to remove.
        let row = random_in(&mut rng, n, -0.5, 1.5);
        ctx.queue.write_buffer(&x, 0, bytemuck::cast_slice(&row));
        set_decode_position(ctx, &position, desc, p).unwrap();
        submit(ctx, "separate", &[&gemv, &attention]);
        submit(ctx, "fused", &[&fused]);
        let what = format!("C {c} NH {nh} B {batch} at {p}, {storage:?}, subgroups {sg:?}");
        assert_eq!(bits(gpu, &fused_out, n), bits(gpu, &out, n), "{what}: out");
    }
    let len = desc.cache_len();
    assert_eq!(
        bits(gpu, &fused_cache.k, len),
        bits(gpu, &cache.k, len),
        "C {c}, {storage:?}: K cache"
    );
    assert_eq!(
        bits(gpu, &fused_cache.v, len),
        bits(gpu, &cache.v, len),
        "C {c}, {storage:?}: V cache"
    );
}

#[test]
fn the_fused_kernel_gives_the_gemv_and_the_attentions_bits() {
    let gpu = gpu_or_skip!();
    for shape in SHAPES {
        check_shape(gpu, shape, None, None);
        check_shape(gpu, shape, Some(None), None);
    }
}

/// Each test-only fault of the f16 GEMV, in the fused kernel: the faulty
/// GEMV's bits, so the f16-storage gate sees in the decoder the fault it
/// must catch (`f16acc` everywhere; `droptail` where K is not a multiple
/// of the 16-wide tile it drops).
#[test]
fn the_fused_f16_kernel_carries_the_gemvs_faults() {
    let gpu = gpu_or_skip!();
    for fault in [Fault::parse("f16acc"), Fault::parse("droptail")] {
        let fault = fault.expect("the tests build with fault injection");
        for shape in [SHAPES[0], SHAPES[3]] {
            check_shape(gpu, shape, Some(Some(fault)), None);
        }
    }
}

/// The subgroup form of the fused kernel's attention reductions: the same
/// bits again.
#[test]
fn the_fused_kernels_subgroup_form_gives_the_same_bits() {
    let gpu = gpu_or_skip!();
    let size = match gpu.ctx.subgroup_size() {
        Ok(n) => n,
        Err(why) => return tinygpt_gpu::testing::did_not_run("fused decode on subgroups", why),
    };
    for shape in [SHAPES[1], SHAPES[3]] {
        check_shape(gpu, shape, None, Some(size));
        check_shape(gpu, shape, Some(None), Some(size));
    }
}

#[test]
fn the_fused_kernel_refuses_wide_rows_aliases_and_split_weights() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let position = decode_position_buffer(ctx);
    let mut rng = Rng::new(3);
    let bind = |reg: &mut PipelineRegistry,
                desc: DecodeDesc,
                x: &wgpu::Buffer,
                w: QkvWeights<'_>,
                cache: &KvCache,
                out: &wgpu::Buffer| {
        bind_attention_decode_qkv(ctx, reg, None, desc, &position, x, w, (cache, out)).map(|_| ())
    };
    // HS = 96.
    let wide = DECODE_QKV_MAX_C + 32;
    let desc = DecodeDesc {
        c: wide,
        nh: 11,
        t_max: 2,
        batch: 1,
    };
    let w = Weights::new(ctx, wide, &mut rng);
    let (x, out) = (
        ctx.zeros("x", wide as usize).unwrap(),
        ctx.zeros("out", wide as usize).unwrap(),
    );
    let cache = KvCache::new(ctx, desc).unwrap();
    let err = bind(&mut reg, desc, &x, w.qkv(None), &cache, &out).unwrap_err();
    assert!(err.to_string().contains("at most 1024"), "{err}");

    let desc = DecodeDesc {
        c: 20,
        nh: 2,
        t_max: 4,
        batch: 1,
    };
    let w = Weights::new(ctx, 20, &mut rng);
    let (x, out) = (ctx.zeros("x", 20).unwrap(), ctx.zeros("out", 20).unwrap());
    let cache = KvCache::new(ctx, desc).unwrap();
    assert!(bind(&mut reg, desc, &x, w.qkv(None), &cache, &out).is_ok());
    let err = bind(&mut reg, desc, &x, w.qkv(None), &cache, &x).unwrap_err();
    assert!(err.to_string().contains("share a buffer"), "{err}");
    let other = ctx.zeros("bias", 60).unwrap();
    let split = QkvWeights {
        bias: View::at(&other, 0),
        ..w.qkv(None)
    };
    let err = bind(&mut reg, desc, &x, split, &cache, &out).unwrap_err();
    assert!(err.to_string().contains("one buffer"), "{err}");
    let short = DecodeDesc { batch: 2, ..desc };
    assert!(bind(&mut reg, short, &x, w.qkv(None), &cache, &out).is_err());
}
