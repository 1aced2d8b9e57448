//! Greedy token selection on the GPU (`shaders/argmax.wgsl`): the argmax of
//! one row of logits, ties to the lowest index as
//! `tinygpt_core::sample::Sampler` picks greedily, written as the decoder's
//! next input token and recorded per position, so that one submission can
//! decode many tokens and read back only their ids.

use super::common::{bind_kernel, shape_error, uniform, View};
use crate::kernel::BoundKernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

pub const GREEDY_PICK: KernelSource = KernelSource {
    key: "greedy_pick",
    wgsl: include_str!("../../../../shaders/argmax.wgsl"),
    entry: "main",
    constants: &[],
};

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

/// Binds the pick from `logits (V)`: the argmax goes to element 0 of `token`
/// and to record `P` of `picks`, `P` being the `x` of the 16-byte `position`
/// uniform (`ops::attention::decode_position_buffer`).
pub fn bind_greedy_pick<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    v: u32,
    logits: impl Into<View<'a>>,
    position: &wgpu::Buffer,
    token: &wgpu::Buffer,
    picks: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    let logits = logits.into();
    if v == 0 {
        return Err(shape_error("greedy_pick", "no logits to pick from".into()));
    }
    logits.need("greedy_pick", "logits", v as u64)?;
    if [token, picks, position].contains(&logits.buffer) || token == picks {
        return Err(shape_error(
            "greedy_pick",
            "the logits, token, picks and position must be four buffers".into(),
        ));
    }
    if token.size() < 4 || picks.size() < PICK_BYTES || position.size() < 16 {
        return Err(shape_error(
            "greedy_pick",
            "token needs 4 bytes, picks 16 per position, position 16".into(),
        ));
    }
    let params = uniform(ctx, "greedy_pick_params", &[v, logits.offset]);
    Ok(bind_kernel(
        ctx,
        registry,
        &GREEDY_PICK,
        &params,
        &[(1, position), (2, logits.buffer), (3, token), (4, picks)],
        [1, 1, 1],
    ))
}
