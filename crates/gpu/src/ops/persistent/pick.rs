//! The persistent kernel with the pick after its logits
//! (`shaders/decode_persistent_pick.wgsl`): each sample's workgroup
//! decodes its token and picks its successor from the logits it wrote, as
//! `bind_greedy_pick` or `bind_sample_pick` would — one dispatch a token.

use super::kernel::{
    checked, persistent_source, variants, PersistentSources, PersistentWeights, PersistentWidth,
    HALF_W,
};
use crate::kernel::BoundKernel;
use crate::ops::argmax::{check_rule, NextInput, Records, Rule};
use crate::ops::attention::{DecodeDesc, KvCache};
use crate::ops::common::{bind_kernel, shape_error};
use crate::ops::matmul::variants_with;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};

/// The kernel's source at width `$width` with the pick `$pick`.
macro_rules! pick_source {
    ($width:literal, $pick:literal) => {
        persistent_source!(
            $width,
            "../../../../../shaders/decode_persistent_pick.wgsl",
            "../../../../../shaders/pick_common.wgsl",
            $pick,
            "../../../../../shaders/pick_next_input.wgsl"
        )
    };
}

/// By width ([`PersistentWidth`] as an index), then by pick (greedy,
/// seeded), each in its weights' variants.
pub const DECODE_PERSISTENT_PICK: [[PersistentSources; 2]; 2] = [
    [
        variants!(
            "decode_persistent_greedy",
            pick_source!(
                "decode_persistent_wg256.wgsl",
                "../../../../../shaders/argmax.wgsl"
            )
        ),
        variants!(
            "decode_persistent_sample",
            pick_source!(
                "decode_persistent_wg256.wgsl",
                "../../../../../shaders/sample_pick.wgsl"
            )
        ),
    ],
    [
        variants!(
            "decode_persistent_wide_greedy",
            pick_source!(
                "decode_persistent_wide.wgsl",
                "../../../../../shaders/argmax.wgsl"
            )
        ),
        variants!(
            "decode_persistent_wide_sample",
            pick_source!(
                "decode_persistent_wide.wgsl",
                "../../../../../shaders/sample_pick.wgsl"
            )
        ),
    ],
];

/// Storage buffers the kernel binds with the seeded pick (one fewer with
/// the greedy one): past WebGPU's default of 8 (`tests/shaders.rs` counts
/// them).
pub const PERSISTENT_PICK_STORAGE_BUFFERS: u32 = 13;

/// Workgroup memory the kernel uses with the seeded pick (the greedy one
/// uses less), by width (`tests/shaders.rs` counts it).
pub const PERSISTENT_PICK_BYTES: [u32; 2] = [25_868, 26_892];

/// Whether a device of `limits` runs the kernel with either pick at
/// `width` (the width itself offered: `persistent_wide_offered`).
pub fn persistent_pick_offered(limits: &wgpu::Limits, width: PersistentWidth) -> bool {
    limits.max_storage_buffers_per_shader_stage >= PERSISTENT_PICK_STORAGE_BUFFERS
        && limits.max_compute_workgroup_storage_size >= PERSISTENT_PICK_BYTES[width as usize]
}

/// Binds a token step as `bind_decode_persistent` does, then the pick by
/// `rule` from each sample's logits, writing what `bind_greedy_pick`
/// writes. Refuses what `bind_decode_persistent` refuses, and a device
/// that does not [`persistent_pick_offered`].
#[allow(clippy::too_many_arguments)]
pub fn bind_decode_persistent_pick(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    (desc, width, rule): (DecodeDesc, PersistentWidth, Rule<'_>),
    weights: &PersistentWeights<'_>,
    cache: &KvCache,
    (x, logits): (&wgpu::Buffer, &wgpu::Buffer),
    records: Records<'_>,
    next_input: NextInput<'_>,
) -> Result<BoundKernel, GpuError> {
    const OP: &str = "decode_persistent_pick";
    if !persistent_pick_offered(&ctx.limits, width) {
        return Err(shape_error(
            OP,
            format!(
                "the kernel with its pick binds {PERSISTENT_PICK_STORAGE_BUFFERS} storage buffers and {} bytes of workgroup memory; this device offers {} and {}",
                PERSISTENT_PICK_BYTES[width as usize],
                ctx.limits.max_storage_buffers_per_shader_stage,
                ctx.limits.max_compute_workgroup_storage_size
            ),
        ));
    }
    let next_x = next_input.x;
    let bound = records.check(ctx, OP, (weights.vocab, desc.batch), logits, next_input)?;
    let written = [("the next input", next_x)];
    let (uniform, mut buffers) =
        checked(ctx, (desc, width), weights, cache, (x, logits), &written)?;
    buffers.push((17, logits));
    let sources = &DECODE_PERSISTENT_PICK[width as usize];
    let src = match rule {
        Rule::Greedy => &sources[0],
        Rule::Sample { params, draws } => {
            check_rule(OP, params, draws, records.picks)?;
            buffers.extend([(15, draws), (16, params)]);
            &sources[1]
        }
    };
    buffers.extend(bound.entries());
    let src = src.get(weights.variant());
    Ok(bind_kernel(
        ctx,
        registry,
        src,
        &uniform,
        &buffers,
        [1, desc.batch, 1],
    ))
}
