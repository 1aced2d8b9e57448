//! The greedy pick on the GPU (`shaders/argmax.wgsl`) against the CPU
//! sampler's greedy rule: vocabularies below, at and past the 256 threads
//! of the kernel, ties (the lowest index wins, ±0 included), the pick
//! written both as the next input token and at the position's record, and
//! the first non-finite logit reported as the CPU sampler reports it.

use tinygpt_core::sample::{SampleError, SampleParams, Sampler};
use tinygpt_core::Rng;
use tinygpt_gpu::gpu_or_skip;
use tinygpt_gpu::kernel::submit;
use tinygpt_gpu::ops::argmax::{bind_greedy_pick, Pick, PICK_BYTES};
use tinygpt_gpu::ops::attention::decode_position_buffer;
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::TestGpu;

mod pick_common;
use pick_common::{check_next, next_input, next_input_tables, C};

/// Runs the pick on `logits` (at element offset 5 of their buffer) at
/// position `p`; returns the token buffer and record `p`.
fn pick(gpu: &TestGpu, logits: &[f32], p: u32) -> (u32, Pick) {
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let padded = [vec![1e30; 5], logits.to_vec(), vec![1e30; 3]].concat();
    let buf = ctx.upload("logits", &padded).unwrap();
    let position = decode_position_buffer(ctx);
    ctx.queue.write_buffer(&position, 0, &p.to_le_bytes());
    let next = decode_position_buffer(ctx);
    let (emb, x, t_max) = next_input_tables(gpu, logits.len(), p + 2);
    let token = ctx.zeros("token", 1).unwrap();
    let picks = ctx.zeros("picks", 4 * (p as usize + 2)).unwrap();
    let v = logits.len() as u32;
    let k = bind_greedy_pick(
        ctx,
        &mut reg,
        (v, 1),
        View::at(&buf, 5),
        (&position, &next),
        &token,
        &picks,
        next_input(&emb, &x, logits.len(), t_max),
    )
    .unwrap();
    submit(ctx, "greedy_pick", &[&k]);
    let t = pollster::block_on(ctx.read_bytes(&token, 4)).unwrap();
    let picked = u32::from_le_bytes(t.clone().try_into().unwrap());
    check_next(gpu, (&next, &x), (logits.len(), picked, p));
    let all = pollster::block_on(ctx.read_bytes(&picks, picks.size())).unwrap();
    let at = (PICK_BYTES * p as u64) as usize;
    let record = Pick::parse(&all[at..at + PICK_BYTES as usize]);
    (u32::from_le_bytes(t.try_into().unwrap()), record[0])
}

fn cpu(logits: &[f32]) -> Result<u32, SampleError> {
    Sampler::new(SampleParams::greedy()).unwrap().sample(logits)
}

#[test]
fn the_pick_is_the_cpu_samplers_greedy_token() {
    let gpu = gpu_or_skip!();
    let mut rng = Rng::new(5);
    for (i, v) in [1usize, 2, 65, 255, 256, 257, 300, 512]
        .into_iter()
        .enumerate()
    {
        let mut logits: Vec<f32> = (0..v).map(|_| rng.uniform(-4.0, 4.0)).collect();
        let (token, record) = pick(gpu, &logits, i as u32);
        let want = cpu(&logits).unwrap();
        assert_eq!(
            (token, record),
            (
                want,
                Pick {
                    token: want,
                    non_finite: None
                }
            ),
            "V {v}"
        );
        // Ties with the maximum at later indices, in other threads' slices.
        if v > 3 {
            let max = logits[want as usize];
            for j in [v - 1, v / 2, 1] {
                logits[j] = max;
            }
            let first = logits.iter().position(|&x| x == max).unwrap() as u32;
            assert_eq!(cpu(&logits).unwrap(), first);
            assert_eq!(pick(gpu, &logits, 3).0, first, "V {v} with ties");
        }
    }
    // Coarse values tie everywhere; −0 and +0 are equal, the first wins.
    let coarse: Vec<f32> = (0..300).map(|i| ((i * 7919) % 5) as f32).collect();
    assert_eq!(pick(gpu, &coarse, 0).0, cpu(&coarse).unwrap());
    let zeros = [-1.0, -0.0, 0.0, -0.0, -2.0];
    assert_eq!(pick(gpu, &zeros, 0).0, 1);
    assert_eq!(cpu(&zeros).unwrap(), 1);
}

#[test]
fn the_first_non_finite_logit_is_reported_as_the_cpu_sampler_reports_it() {
    let gpu = gpu_or_skip!();
    let mut logits: Vec<f32> = (0..300).map(|i| (i % 17) as f32 * 0.1).collect();
    logits[280] = f32::NAN;
    logits[200] = f32::NEG_INFINITY;
    logits[260] = f32::INFINITY;
    let (token, record) = pick(gpu, &logits, 7);
    assert!((token as usize) < logits.len());
    assert_eq!(record.token, token);
    let (index, value) = record.non_finite.expect("a non-finite logit");
    match cpu(&logits) {
        Err(SampleError::NonFiniteLogit { index: i, value: x }) => {
            assert_eq!((index, value.to_bits()), (i, x.to_bits()));
        }
        other => panic!("the CPU sampler returned {other:?}"),
    }
    assert_eq!(index, 200);
}

#[test]
fn a_pick_refuses_buffers_it_would_share() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let logits = ctx.upload("logits", &[0.0; 8]).unwrap();
    let (position, next) = (decode_position_buffer(ctx), decode_position_buffer(ctx));
    let (token, picks) = (
        ctx.zeros("token", 1).unwrap(),
        ctx.zeros("picks", 4).unwrap(),
    );
    let (emb, x, t_max) = next_input_tables(gpu, 8, 4);
    let mut bind = |pos: (&wgpu::Buffer, &wgpu::Buffer), token: &wgpu::Buffer, x: &wgpu::Buffer| {
        let next = next_input(&emb, x, 8, t_max);
        bind_greedy_pick(ctx, &mut reg, (8, 1), &logits, pos, token, &picks, next)
            .err()
            .map(|e| e.to_string())
    };
    assert_eq!(bind((&position, &next), &token, &x), None);
    for err in [
        bind((&position, &position), &token, &x),
        bind((&position, &next), &next, &x),
        bind((&position, &next), &picks, &x),
        bind((&position, &next), &token, &logits),
        bind((&position, &next), &token, &emb),
    ] {
        let err = err.expect("shared buffers are refused");
        assert!(
            err.contains("six buffers") || err.contains("apart from the tables"),
            "{err}"
        );
    }
}

#[test]
fn no_next_input_is_written_past_the_context() {
    let gpu = gpu_or_skip!();
    let ctx = &gpu.ctx;
    let mut reg = gpu.registry.lock().unwrap_or_else(|e| e.into_inner());
    let logits = ctx.upload("logits", &[0.0, 2.0, 1.0]).unwrap();
    let (position, next) = (decode_position_buffer(ctx), decode_position_buffer(ctx));
    ctx.queue.write_buffer(&position, 0, &3u32.to_le_bytes());
    let (token, picks) = (
        ctx.zeros("token", 1).unwrap(),
        ctx.zeros("picks", 16).unwrap(),
    );
    // P = 3 is the last position of a context of 4: no step follows.
    let (emb, x, t_max) = next_input_tables(gpu, 3, 4);
    let next_in = next_input(&emb, &x, 3, t_max);
    let k = bind_greedy_pick(
        ctx,
        &mut reg,
        (3, 1),
        &logits,
        (&position, &next),
        &token,
        &picks,
        next_in,
    )
    .unwrap();
    submit(ctx, "greedy_pick", &[&k]);
    let t = pollster::block_on(ctx.read_bytes(&token, 4)).unwrap();
    assert_eq!(u32::from_le_bytes(t.try_into().unwrap()), 1);
    let row = pollster::block_on(ctx.read_f32(&x, C as usize)).unwrap();
    assert_eq!(row, vec![0.0; C as usize]);
}
