//! Token + position embedding against `encoder_forward` / `encoder_backward`
//! of the CPU reference, on odd shapes, through views at odd offsets, and in
//! the KV-cache decode form.

use tinygpt_core::model::layers::{encoder_backward, encoder_forward};
use tinygpt_core::numerics::assert_close;
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::Layout;
use tinygpt_gpu::ops::embedding::{bind_embedding_backward, bind_embedding_forward, EmbeddingDesc};
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::random;
use tinygpt_gpu::GpuContext;

/// Any difference fails (a positive atol keeps 0/0 out of the ratio).
const EXACT: f64 = 1e-30;

fn tokens(rng: &mut Rng, n: usize, v: u32) -> Vec<u32> {
    (0..n).map(|_| rng.below(v as usize) as u32).collect()
}

fn read(ctx: &GpuContext, buf: &wgpu::Buffer, len: usize) -> Vec<f32> {
    pollster::block_on(ctx.read_f32(buf, len)).unwrap()
}

fn upload_u32(ctx: &GpuContext, data: &[u32]) -> wgpu::Buffer {
    ctx.upload_bytes("tokens", bytemuck::cast_slice(data))
        .unwrap()
}

/// (B, T, C, V, T_max): N = B·T from 7 to 650 rows (more than one 512-row
/// round of the token gather, and over a hundred rows per token in a round),
/// C not a multiple of 4 or 64, more channels than one workgroup's 128.
const SHAPES: [(u32, u32, u32, u32, u32); 4] = [
    (1, 7, 13, 11, 8),
    (4, 9, 96, 37, 12),
    (2, 37, 70, 65, 40),
    (5, 130, 150, 9, 130),
];

#[test]
fn forward_matches_reference() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    for (i, &(b, t, c, v, t_max)) in SHAPES.iter().enumerate() {
        let n = b * t;
        let mut rng = Rng::new(100 + i as u64);
        let inputs = tokens(&mut rng, n as usize, v);
        let tok = random(&mut rng, (v * c) as usize);
        let pos = random(&mut rng, (t_max * c) as usize);
        let mut want = vec![0.0; (n * c) as usize];
        encoder_forward(&mut want, &inputs, &tok, &pos, t as usize, c as usize);
        let desc = EmbeddingDesc { n, t, c, v, t_max };
        let (inp_buf, tok_buf) = (upload_u32(ctx, &inputs), ctx.upload("tok", &tok).unwrap());
        let pos_buf = ctx.upload("pos", &pos).unwrap();
        let y = ctx.zeros("y", (n * c) as usize).unwrap();
        let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
        let k = bind_embedding_forward(ctx, &mut reg, desc, &inp_buf, &tok_buf, &pos_buf, &y, None)
            .unwrap();
        tinygpt_gpu::kernel::submit(ctx, "embedding", &[&k]);
        assert_close(
            &format!("{desc:?}"),
            &read(ctx, &y, want.len()),
            &want,
            EXACT,
            0.0,
        );
    }
}

#[test]
fn forward_reads_and_writes_views_at_offsets() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let (t, c, v, t_max) = (5u32, 13u32, 7u32, 6u32);
    let n = 2 * t;
    let mut rng = Rng::new(7);
    let inputs = tokens(&mut rng, n as usize, v);
    let tok = random(&mut rng, (v * c) as usize);
    let pos = random(&mut rng, (t_max * c) as usize);
    // One flat "parameter" buffer: 3 floats of padding, tok_emb, pos_emb.
    let flat: Vec<f32> = [vec![9.0; 3], tok.clone(), pos.clone()].concat();
    let flat_buf = ctx.upload("flat", &flat).unwrap();
    let mut padded_inputs = vec![u32::MAX; 2];
    padded_inputs.extend(&inputs);
    let inp_buf = upload_u32(ctx, &padded_inputs);
    let y = ctx.zeros("y", (5 + n * c) as usize).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let k = bind_embedding_forward(
        ctx,
        &mut reg,
        EmbeddingDesc { n, t, c, v, t_max },
        View::at(&inp_buf, 2),
        View::at(&flat_buf, 3),
        View::at(&flat_buf, 3 + v * c),
        View::at(&y, 5),
        None,
    )
    .unwrap();
    tinygpt_gpu::kernel::submit(ctx, "embedding_views", &[&k]);
    let mut want = vec![0.0; (n * c) as usize];
    encoder_forward(&mut want, &inputs, &tok, &pos, t as usize, c as usize);
    let got = read(ctx, &y, (5 + n * c) as usize);
    assert_eq!(&got[..5], &[0.0; 5], "nothing written before the view");
    assert_close("views", &got[5..], &want, EXACT, 0.0);
}

#[test]
fn decode_reads_the_position_uniform_at_run_time() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let (c, v, t_max) = (13u32, 5u32, 9u32);
    let mut rng = Rng::new(8);
    let tok = random(&mut rng, (v * c) as usize);
    let pos = random(&mut rng, (t_max * c) as usize);
    let (tok_buf, pos_buf) = (
        ctx.upload("tok", &tok).unwrap(),
        ctx.upload("pos", &pos).unwrap(),
    );
    let inp_buf = upload_u32(ctx, &[3]);
    let position = ctx.uniform("decode_position", &[0; 16]);
    let y = ctx.zeros("y", c as usize).unwrap();
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let desc = EmbeddingDesc {
        n: 1,
        t: 1,
        c,
        v,
        t_max,
    };
    let k = bind_embedding_forward(
        ctx,
        &mut reg,
        desc,
        &inp_buf,
        &tok_buf,
        &pos_buf,
        &y,
        Some(&position),
    )
    .unwrap();
    // Bound once; only the 4-byte position changes between tokens.
    for p in [6u32, 2, 8] {
        ctx.queue.write_buffer(&position, 0, &p.to_le_bytes());
        tinygpt_gpu::kernel::submit(ctx, "embedding_decode", &[&k]);
        let want: Vec<f32> = (0..c as usize)
            .map(|ch| tok[3 * c as usize + ch] + pos[p as usize * c as usize + ch])
            .collect();
        assert_close(
            &format!("position {p}"),
            &read(ctx, &y, c as usize),
            &want,
            EXACT,
            0.0,
        );
    }
}

#[test]
fn backward_accumulates_into_both_tables() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    for (i, &(b, t, c, v, t_max)) in SHAPES.iter().enumerate() {
        let n = b * t;
        let mut rng = Rng::new(200 + i as u64);
        // Skewed tokens so some rows share a token and some tokens are absent.
        let inputs = tokens(&mut rng, n as usize, v.div_ceil(2));
        let dout = random(&mut rng, (n * c) as usize);
        // Non-zero starting gradients: the tied head's share of dtok_emb.
        let dtok0 = random(&mut rng, (v * c) as usize);
        let dpos0 = random(&mut rng, (t_max * c) as usize);
        let (mut dtok, mut dpos) = (dtok0.clone(), dpos0.clone());
        encoder_backward(&mut dtok, &mut dpos, &dout, &inputs, t as usize, c as usize);
        let desc = EmbeddingDesc { n, t, c, v, t_max };
        for layout in [Layout::Gpu, Layout::Cpu] {
            let inp_buf = upload_u32(ctx, &inputs);
            let dout_buf = ctx.upload("dout", &dout).unwrap();
            let dtok_buf = ctx.upload("dtok", &dtok0).unwrap();
            let dpos_buf = ctx.upload("dpos", &dpos0).unwrap();
            let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
            let op = bind_embedding_backward(
                ctx, &mut reg, layout, desc, &inp_buf, &dout_buf, &dtok_buf, &dpos_buf,
            )
            .unwrap();
            op.submit(ctx, "embedding_backward");
            // Rows are added in the reference's order: the sums are bitwise equal.
            let what = format!("{desc:?} {layout:?}");
            assert_close(
                &format!("dtok {what}"),
                &read(ctx, &dtok_buf, dtok.len()),
                &dtok,
                EXACT,
                0.0,
            );
            assert_close(
                &format!("dpos {what}"),
                &read(ctx, &dpos_buf, dpos.len()),
                &dpos,
                EXACT,
                0.0,
            );
        }
    }
}

#[test]
fn bad_shapes_and_aliasing_are_errors() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let buf = ctx.zeros("buf", 64).unwrap();
    let desc = EmbeddingDesc {
        n: 4,
        t: 4,
        c: 4,
        v: 4,
        t_max: 4,
    };
    let too_small = ctx.zeros("small", 3).unwrap();
    let err = bind_embedding_forward(ctx, &mut reg, desc, &buf, &buf, &buf, &too_small, None);
    assert!(err.is_err(), "y too small");
    let err = bind_embedding_forward(ctx, &mut reg, desc, &buf, &buf, &buf, &buf, None);
    assert!(err.is_err(), "y aliases the tables");
    let err = bind_embedding_forward(
        ctx,
        &mut reg,
        EmbeddingDesc { t: 5, ..desc },
        &buf,
        &buf,
        &buf,
        &too_small,
        None,
    );
    assert!(err.is_err(), "T > T_max");
}
