//! The decode attention with each head's share of the output projection
//! (`shaders/attention_decode_proj.wgsl`, the decoder's `Stack` layout)
//! against what it replaces: the decode attention writing its output row
//! (`bind_attention_decode`), whose output the CPU projects head by head
//! in f64 — every head's slot within f32 rounding, slot 0 (the sum of the
//! source's slots, added in slot order) and both caches bit for bit —
//! with f32 and f16-stored weights (the CPU reading the same halves),
//! reductions through workgroup memory and on subgroups, one slot or a
//! whole stack as the source. Shapes: head sizes 10 (not a multiple of 4
//! or 16), 32, 64, two samples, more outputs than threads (C 384), a
//! position past the first chunk of 256. Then the refusals.

use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::attention::{
    bind_attention_decode, bind_attention_decode_proj, decode_position_buffer, set_decode_position,
    DecodeDesc, KvCache, ProjWeights, Stack,
};
use tinygpt_gpu::ops::matmul::f16w::{half_bits, pack_cpu};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::{random_in, twin_caches, TestGpu};

/// (C, NH, samples, T_max, positions stepped in order).
const SHAPES: [(u32, u32, u32, u32, &[u32]); 4] = [
    (20, 2, 1, 12, &[0, 1, 5]),
    (128, 4, 2, 64, &[0, 63]),
    (384, 6, 1, 300, &[3, 299]),
    (256, 4, 1, 16, &[9]),
];

/// An f16's value (its bits from `half_bits`).
fn half_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let (e, m) = (((h >> 10) & 0x1f) as i32, (h & 0x3ff) as f32);
    match e {
        0 => sign * m * 2f32.powi(-24),
        _ => sign * (1.0 + m / 1024.0) * 2f32.powi(e - 15),
    }
}

fn read(gpu: &TestGpu, buf: &wgpu::Buffer, n: u64) -> Vec<f32> {
    pollster::block_on(gpu.ctx.read_f32(buf, n as usize)).unwrap()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The stack the kernel should write for attention rows `atty` (B rows of
/// C), source slots `src` (`src_slots` blocks of B rows) and weights `w`
/// (C, C) with bias: slot 0 in f32 in slot order, the heads' shares in f64.
fn expected(
    desc: DecodeDesc,
    (atty, src, src_slots): (&[f32], &[f32], usize),
    (w, bias): (&[f32], &[f32]),
) -> (Vec<f32>, Vec<f32>) {
    let (c, nh, b) = (desc.c as usize, desc.nh as usize, desc.batch as usize);
    let hs = c / nh;
    let slot0: Vec<f32> = (0..b * c)
        .map(|e| (1..src_slots).fold(src[e], |v, s| v + src[s * b * c + e]))
        .collect();
    let mut heads = vec![0.0; nh * b * c];
    for h in 0..nh {
        for r in 0..b {
            for n in 0..c {
                let y = &atty[r * c + h * hs..][..hs];
                let wr = &w[n * c + h * hs..][..hs];
                let mut v: f64 = y.iter().zip(wr).map(|(a, b)| *a as f64 * *b as f64).sum();
                if h == 0 {
                    v += bias[n] as f64;
                }
                heads[(h * b + r) * c + n] = v as f32;
            }
        }
    }
    (slot0, heads)
}

/// Steps one shape through both paths: f16 weights when `half`, the
/// attention's reductions on subgroups of `sg` when given, a source of
/// `src_slots` slots.
fn check_shape(
    gpu: &TestGpu,
    (c, nh, batch, t_max, steps): (u32, u32, u32, u32, &[u32]),
    (half, sg, src_slots): (bool, Option<u32>, u32),
) {
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let desc = DecodeDesc {
        c,
        nh,
        t_max,
        batch,
    };
    let mut rng = Rng::new(11 + c as u64);
    let (cu, n) = (c as usize, (c * batch) as u64);
    // W at an odd offset (even for halves: a row's halves from a word
    // boundary or not, whatever C is), then the bias, in one flat buffer.
    let w_off = if half { 6 } else { 5 };
    let mut flat = vec![0.5_f32; w_off];
    flat.extend(random_in(&mut rng, cu * cu, -0.3, 0.3));
    let b_off = flat.len();
    flat.extend(random_in(&mut rng, cu, -0.2, 0.2));
    let w_host: Vec<f32> = match half {
        true => flat[w_off..b_off]
            .iter()
            .map(|&x| half_value(half_bits(x, None)))
            .collect(),
        false => flat[w_off..b_off].to_vec(),
    };
    let params = ctx.upload("flat", &flat).unwrap();
    let halves = ctx
        .upload_bytes("halves", bytemuck::cast_slice(&pack_cpu(&flat, None)))
        .unwrap();
    let weights = ProjWeights {
        w: View::at(if half { &halves } else { &params }, w_off as u32),
        half,
        bias: View::at(&params, b_off as u32),
    };
    let slots = Stack::layer_slots(nh);
    let (qkv, atty) = (
        ctx.zeros("qkv", 3 * n as usize).unwrap(),
        ctx.zeros("atty", n as usize).unwrap(),
    );
    let src_buf = ctx.zeros("src", (src_slots as u64 * n) as usize).unwrap();
    let stack_buf = ctx.zeros("stack", (slots as u64 * n) as usize).unwrap();
    let [cache, proj_cache] = twin_caches(ctx, desc, &mut rng);
    let position = decode_position_buffer(ctx);
    let attention = bind_attention_decode(
        ctx,
        &mut reg,
        (false, None),
        desc,
        &position,
        &qkv,
        &cache,
        &atty,
    )
    .unwrap();
    let (src, stack) = (
        Stack {
            buffer: &src_buf,
            slots: src_slots,
        },
        Stack {
            buffer: &stack_buf,
            slots,
        },
    );
    let proj = bind_attention_decode_proj(
        ctx,
        &mut reg,
        sg,
        desc,
        &position,
        &qkv,
        (&proj_cache, weights),
        (src, stack),
    )
    .unwrap();
    for &p in steps {
        let what =
            format!("C {c} NH {nh} B {batch} at {p}, half {half}, sg {sg:?}, {src_slots} slots");
        let row = random_in(&mut rng, 3 * n as usize, -1.0, 1.0);
        ctx.queue.write_buffer(&qkv, 0, bytemuck::cast_slice(&row));
        let src_rows = random_in(&mut rng, (src_slots as u64 * n) as usize, -1.0, 1.0);
        ctx.queue
            .write_buffer(&src_buf, 0, bytemuck::cast_slice(&src_rows));
        set_decode_position(ctx, &position, desc, p).unwrap();
        submit(ctx, "attention", &[&attention]);
        submit(ctx, "attention + projection", &[&proj]);
        let att = read(gpu, &atty, n);
        let got = read(gpu, &stack_buf, (nh as u64 + 1) * n);
        let (slot0, heads) = expected(
            desc,
            (&att, &src_rows, src_slots as usize),
            (&w_host, &flat[b_off..]),
        );
        assert_eq!(bits(&got[..n as usize]), bits(&slot0), "{what}: slot 0");
        let atol = 2e-6 * ((c / nh) as f64).sqrt();
        assert_close(
            &format!("{what}: shares"),
            &got[n as usize..],
            &heads,
            atol,
            1e-5,
        );
    }
    let len = desc.cache_len();
    assert_eq!(
        bits(&read(gpu, &proj_cache.k, len)),
        bits(&read(gpu, &cache.k, len)),
        "C {c}: K"
    );
    assert_eq!(
        bits(&read(gpu, &proj_cache.v, len)),
        bits(&read(gpu, &cache.v, len)),
        "C {c}: V"
    );
}

#[test]
fn the_heads_shares_are_the_projection_of_the_attentions_output() {
    let gpu = gpu_or_skip!();
    for (i, shape) in SHAPES.into_iter().enumerate() {
        let src_slots = if i % 2 == 0 {
            1
        } else {
            Stack::layer_slots(shape.1)
        };
        for half in [false, true] {
            check_shape(gpu, shape, (half, None, src_slots));
        }
    }
}

/// The attention's reductions on subgroup shuffles: the same checks (the
/// subgroups fast path's kernel), where the adapter has subgroups.
#[test]
fn the_subgroup_form_gives_the_same_stack() {
    let gpu = gpu_or_skip!();
    let sg = match gpu.ctx.subgroup_size() {
        Ok(n) => n,
        Err(why) => {
            return tinygpt_gpu::testing::did_not_run("decode projection on subgroups", why)
        }
    };
    for shape in [SHAPES[0], SHAPES[2]] {
        check_shape(gpu, shape, (false, Some(sg), 1));
        check_shape(gpu, shape, (true, Some(sg), Stack::layer_slots(shape.1)));
    }
}

#[test]
fn a_short_stack_an_alias_or_a_short_weight_is_refused() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|p| p.into_inner());
    let desc = DecodeDesc {
        c: 20,
        nh: 2,
        t_max: 8,
        batch: 1,
    };
    let position = decode_position_buffer(ctx);
    let cache = KvCache::new(ctx, desc).unwrap();
    let qkv = ctx.zeros("qkv", 60).unwrap();
    let flat = ctx.zeros("flat", 420).unwrap();
    let (src_buf, stack_buf) = (
        ctx.zeros("src", 20).unwrap(),
        ctx.zeros("stack", 80).unwrap(),
    );
    let weights = ProjWeights {
        w: View::at(&flat, 0),
        half: false,
        bias: View::at(&flat, 400),
    };
    let src = Stack {
        buffer: &src_buf,
        slots: 1,
    };
    let stack = |buffer, slots| Stack { buffer, slots };
    let mut bind = |w: ProjWeights<'_>, (s, o): (Stack<'_>, Stack<'_>)| {
        bind_attention_decode_proj(
            ctx,
            &mut reg,
            None,
            desc,
            &position,
            &qkv,
            (&cache, w),
            (s, o),
        )
    };
    assert!(bind(weights, (src, stack(&stack_buf, 4))).is_ok());
    // Fewer slots than NH + 1; more slots than the buffer holds.
    assert!(bind(weights, (src, stack(&stack_buf, 2))).is_err());
    assert!(bind(weights, (src, stack(&stack_buf, 5))).is_err());
    assert!(bind(weights, (stack(&src_buf, 2), stack(&stack_buf, 4))).is_err());
    // The stack written is the source read.
    assert!(bind(weights, (stack(&stack_buf, 1), stack(&stack_buf, 4))).is_err());
    // W past its buffer.
    let short = ProjWeights {
        w: View::at(&flat, 30),
        ..weights
    };
    assert!(bind(short, (src, stack(&stack_buf, 4))).is_err());
}
