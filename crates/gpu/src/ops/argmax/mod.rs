//! Token selection on the GPU, written as the decoder's next input token
//! and recorded per position, so that one submission can decode many tokens
//! and read back only their ids: greedy (`shaders/argmax.wgsl`: the argmax
//! of one row of logits, ties to the lowest index as
//! `tinygpt_core::sample::Sampler` picks greedily) and seeded sampling
//! (`shaders/sample_pick.wgsl`: temperature, top-k and top-p by the CPU
//! reference's rule, `tinygpt_core::sample::pick`, with the host's draw for
//! each position). Both also write the next step's position and input row
//! ([`NextInput`]), so that chained steps need no copy and no embedding.

mod head;
mod records;

pub use head::*;
pub use records::{NextInput, Pick, Records, PICK_BYTES};

use super::common::{bind_kernel, uniform, View};
use crate::kernel::BoundKernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
pub(crate) use records::check_rule;
use tinygpt_core::sample::{inverse_temperature, SampleParams};

/// A pick's source: the kernel over rows of logits in storage
/// (pick_logits.wgsl), what the picks share, the pick `$pick` and the
/// next input's write.
macro_rules! pick_source {
    ($pick:literal) => {
        concat!(
            include_str!("../../../../../shaders/pick_logits.wgsl"),
            include_str!("../../../../../shaders/pick_common.wgsl"),
            include_str!($pick),
            include_str!("../../../../../shaders/pick_next_input.wgsl")
        )
    };
}

pub const GREEDY_PICK: KernelSource = KernelSource {
    key: "greedy_pick",
    wgsl: pick_source!("../../../../../shaders/argmax.wgsl"),
    entry: "main",
    constants: &[],
};

/// Binds the pick from `logits (V)`: the argmax goes to element 0 of `token`
/// and to record `P` of `picks`, `P` being the `x` of the 16-byte position
/// uniform (`ops::attention::decode_position_buffer`), the first of
/// `(position, next)`; `P + 1` goes to the second, the next step's
/// position. With `rows` > 1 (the samples decoded together) row `b` of
/// `logits (rows, V)` goes to element `b` of `token` and record `P·rows + b`.
#[allow(clippy::too_many_arguments)]
pub fn bind_greedy_pick<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (v, rows): (u32, u32),
    logits: impl Into<View<'a>>,
    (position, next): (&wgpu::Buffer, &wgpu::Buffer),
    token: &wgpu::Buffer,
    picks: &wgpu::Buffer,
    next_input: NextInput<'_>,
) -> Result<BoundKernel, GpuError> {
    let logits = logits.into();
    let bound = Records {
        positions: (position, next),
        token,
        picks,
    }
    .check(ctx, "greedy_pick", (v, rows), logits.buffer, next_input)?;
    logits.need("greedy_pick", "logits", v as u64 * rows as u64)?;
    let params = uniform(ctx, "greedy_pick_params", &[v, logits.offset]);
    let mut buffers = vec![(2, logits.buffer)];
    buffers.extend(bound.entries());
    Ok(bind_kernel(
        ctx,
        registry,
        &GREEDY_PICK,
        &params,
        &buffers,
        [rows, 1, 1],
    ))
}

pub const SAMPLE_PICK: KernelSource = KernelSource {
    key: "sample_pick",
    wgsl: pick_source!("../../../../../shaders/sample_pick.wgsl"),
    entry: "main",
    constants: &[],
};

/// The sampling pick's uniform for `params` over `v` logits at
/// `logits_off`: `(v, off, top_k or 0, 0, top_p or 1, 1/T, 0, 0)`.
pub fn sample_params_words(v: u32, logits_off: u32, params: &SampleParams) -> [u32; 8] {
    [
        v,
        logits_off,
        params.top_k.map_or(0, |k| k.min(u32::MAX as usize) as u32),
        0,
        params.top_p.unwrap_or(1.0).to_bits(),
        inverse_temperature(params.temperature).to_bits(),
        0,
        0,
    ]
}

/// Binds the seeded pick from `logits`: like [`bind_greedy_pick`] (the
/// positions, the token and the records), with the
/// rule's uniform `params` (32 bytes, [`sample_params_words`], rewritten
/// by the caller per generation) and `draws`, one f32 per position and row
/// (row `b` of position `P` at `P·rows + b`).
#[allow(clippy::too_many_arguments)]
pub fn bind_sample_pick<'a>(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (v, rows): (u32, u32),
    logits: impl Into<View<'a>>,
    params: &wgpu::Buffer,
    (position, next): (&wgpu::Buffer, &wgpu::Buffer),
    token: &wgpu::Buffer,
    picks: &wgpu::Buffer,
    draws: &wgpu::Buffer,
    next_input: NextInput<'_>,
) -> Result<BoundKernel, GpuError> {
    let logits = logits.into();
    let records = Records {
        positions: (position, next),
        token,
        picks,
    };
    let bound = records.check(ctx, "sample_pick", (v, rows), logits.buffer, next_input)?;
    logits.need("sample_pick", "logits", v as u64 * rows as u64)?;
    check_rule("sample_pick", params, draws, picks)?;
    let mut buffers = vec![(2, logits.buffer), (15, draws), (16, params)];
    buffers.extend(bound.entries());
    Ok(bind_kernel(
        ctx,
        registry,
        &SAMPLE_PICK,
        params,
        &buffers,
        [rows, 1, 1],
    ))
}
