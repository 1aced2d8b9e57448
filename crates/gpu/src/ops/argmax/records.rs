//! What every pick shares: the records it writes, the next step's input,
//! and the checks of its buffers.

use crate::ops::common::{shape_error, uniform, View};
use crate::{GpuContext, GpuError};

/// Bytes of one recorded pick: `(token, first non-finite index or
/// u32::MAX, its bits, 0)`.
pub const PICK_BYTES: u64 = 16;

/// One greedy pick as recorded on the GPU.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pick {
    /// The argmax (lowest index on a tie).
    pub token: u32,
    /// The first logit that is ±inf or NaN, with its value: the CPU
    /// sampler refuses such logits, and so does the caller of this one.
    pub non_finite: Option<(usize, f32)>,
}

impl Pick {
    /// Picks from the bytes of consecutive records.
    pub fn parse(bytes: &[u8]) -> Vec<Pick> {
        bytes
            .chunks_exact(PICK_BYTES as usize)
            .map(|record| {
                let [token, bad, bits, _] = bytemuck::pod_read_unaligned::<[u32; 4]>(record);
                Pick {
                    token,
                    non_finite: (bad != u32::MAX).then(|| (bad as usize, f32::from_bits(bits))),
                }
            })
            .collect()
    }
}

/// Where a pick writes the next step's input (`shaders/pick_next_input.wgsl`):
/// row `b` of `x` becomes `tok_emb[pick_b] + pos_emb[P + 1]` (C channels),
/// as the decode embedding would write it; nothing when `P + 1 ≥ t_max`.
#[derive(Clone, Copy, Debug)]
pub struct NextInput<'a> {
    /// `tok_emb (V, C)` and `pos_emb (t_max, C)`, views into one buffer.
    pub tok_emb: View<'a>,
    pub pos_emb: View<'a>,
    /// The residual rows (C per row, from element 0).
    pub x: &'a wgpu::Buffer,
    pub c: u32,
    pub t_max: u32,
}

impl NextInput<'_> {
    /// Checks the tables and rows, and returns the uniform, the tables'
    /// buffer and the rows to bind (8, 9, 10).
    fn bind(
        &self,
        ctx: &GpuContext,
        op: &'static str,
        (v, rows): (u32, u32),
    ) -> Result<(wgpu::Buffer, wgpu::Buffer, wgpu::Buffer), GpuError> {
        let (c, t_max) = (self.c as u64, self.t_max as u64);
        self.tok_emb.need(op, "tok_emb", v as u64 * c)?;
        self.pos_emb.need(op, "pos_emb", t_max * c)?;
        if c == 0 || self.tok_emb.buffer != self.pos_emb.buffer {
            return Err(shape_error(
                op,
                "the next input needs C ≥ 1 and both tables in one buffer".into(),
            ));
        }
        if self.x.size() < 4 * rows as u64 * c || self.x == self.tok_emb.buffer {
            return Err(shape_error(
                op,
                format!("the next input's x needs {rows} rows of {c}, apart from the tables"),
            ));
        }
        let words = [self.c, self.tok_emb.offset, self.pos_emb.offset, self.t_max];
        let u = uniform(ctx, "next_input_params", &words);
        Ok((u, self.tok_emb.buffer.clone(), self.x.clone()))
    }
}

/// Where a pick writes: the position it picks at and the next one, the
/// token and the records.
#[derive(Clone, Copy, Debug)]
pub struct Records<'a> {
    pub positions: (&'a wgpu::Buffer, &'a wgpu::Buffer),
    pub token: &'a wgpu::Buffer,
    pub picks: &'a wgpu::Buffer,
}

/// A pick's bindings past its logits (8–14: pick_next_input.wgsl's and
/// pick_common.wgsl's).
pub(crate) struct Bound<'a> {
    records: Records<'a>,
    next_in: wgpu::Buffer,
    emb: wgpu::Buffer,
    x: wgpu::Buffer,
}

impl Bound<'_> {
    pub(crate) fn entries(&self) -> Vec<(u32, &wgpu::Buffer)> {
        let r = &self.records;
        vec![
            (8, &self.next_in),
            (9, &self.emb),
            (10, &self.x),
            (11, r.positions.0),
            (12, r.token),
            (13, r.picks),
            (14, r.positions.1),
        ]
    }
}

impl<'a> Records<'a> {
    /// Checks a pick of `rows` rows of `v` logits in `logits`, writing
    /// `next_input`: V from 1 to `MAX_VOCAB`, every buffer its own, room
    /// for a token and a record a row.
    pub(crate) fn check(
        self,
        ctx: &GpuContext,
        op: &'static str,
        (v, rows): (u32, u32),
        logits: &wgpu::Buffer,
        next_input: NextInput<'_>,
    ) -> Result<Bound<'a>, GpuError> {
        let max = tinygpt_protocol::config::MAX_VOCAB;
        if rows == 0 || v == 0 || v as usize > max {
            return Err(shape_error(
                op,
                format!("{v} logits: 1 to {max} can be picked from"),
            ));
        }
        let (position, next) = self.positions;
        let (token, picks) = (self.token, self.picks);
        check_distinct(op, &[logits, position, next, token, picks, next_input.x])?;
        let (next_in, emb, x) = next_input.bind(ctx, op, (v, rows))?;
        if token.size() < 4 * rows as u64
            || picks.size() < PICK_BYTES * rows as u64
            || position.size() < 16
            || next.size() < 16
        {
            return Err(shape_error(
                op,
                "token needs 4 bytes a row, picks 16 a row per position, each position 16".into(),
            ));
        }
        Ok(Bound {
            records: self,
            next_in,
            emb,
            x,
        })
    }
}

/// Refuses a pick whose buffers are not all different (the logits, the
/// two positions, the token, the picks and the next input's rows).
fn check_distinct(op: &'static str, buffers: &[&wgpu::Buffer]) -> Result<(), GpuError> {
    for (i, b) in buffers.iter().enumerate() {
        if buffers[..i].contains(b) {
            return Err(shape_error(
                op,
                "the logits, the two positions, the token, the picks and x must be six buffers"
                    .into(),
            ));
        }
    }
    Ok(())
}

/// Refuses a seeded pick's rule and draws where they do not fit: 32 bytes
/// of params, one draw for every position a pick may be recorded at.
pub(crate) fn check_rule(
    op: &'static str,
    params: &wgpu::Buffer,
    draws: &wgpu::Buffer,
    picks: &wgpu::Buffer,
) -> Result<(), GpuError> {
    if params.size() < 32 || 4 * draws.size() < picks.size() {
        return Err(shape_error(
            op,
            "params needs 32 bytes, and draws 4 bytes for each pick's 16".into(),
        ));
    }
    Ok(())
}
