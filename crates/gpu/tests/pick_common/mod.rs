//! What the pick tests share: the embedding tables the picks read to write
//! the next step's input row, and that row as the CPU computes it.

use tinygpt_gpu::ops::argmax::NextInput;
use tinygpt_gpu::ops::View;
use tinygpt_gpu::testing::TestGpu;

/// Channels of the next input row the picks write.
pub const C: u32 = 3;

/// The embedding tables of a vocabulary of `v` and `t_max` positions, one
/// buffer (tok_emb from element 2, pos_emb after it), and a row of x.
pub fn next_input_tables(gpu: &TestGpu, v: usize, t_max: u32) -> (wgpu::Buffer, wgpu::Buffer, u32) {
    let n = 2 + (v + t_max as usize) * C as usize;
    let table: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let ctx = &gpu.ctx;
    (
        ctx.upload("emb", &table).unwrap(),
        ctx.zeros("x", C as usize).unwrap(),
        t_max,
    )
}

pub fn next_input<'a>(
    emb: &'a wgpu::Buffer,
    x: &'a wgpu::Buffer,
    v: usize,
    t_max: u32,
) -> NextInput<'a> {
    NextInput {
        tok_emb: View::at(emb, 2),
        pos_emb: View::at(emb, 2 + v as u32 * C),
        x,
        c: C,
        t_max,
    }
}

/// tok_emb[token] + pos_emb[p] of [`next_input_tables`]' tables.
pub fn embedded(v: usize, token: u32, p: u32) -> Vec<f32> {
    let at = |i: u32| (i as f32 * 0.37).sin();
    (0..C)
        .map(|ch| at(2 + token * C + ch) + at(2 + (v as u32 + p) * C + ch))
        .collect()
}

/// Checks what a pick of `picked` at position `p` (over `v` logits) left
/// for the next step: position `p + 1` in `next`, and its input row in `x`.
pub fn check_next(
    gpu: &TestGpu,
    (next, x): (&wgpu::Buffer, &wgpu::Buffer),
    (v, picked, p): (usize, u32, u32),
) {
    let ctx = &gpu.ctx;
    let after = pollster::block_on(ctx.read_bytes(next, 4)).unwrap();
    let after = u32::from_le_bytes(after.try_into().unwrap());
    assert_eq!(after, p + 1, "the next step's position");
    let row = pollster::block_on(ctx.read_f32(x, C as usize)).unwrap();
    assert_eq!(row, embedded(v, picked, p + 1), "the next input row");
}
