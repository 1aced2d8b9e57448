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
