//! Dropout of a training step (`shaders/dropout.wgsl`): the masks are a
//! hash of (seed, step, site, element), the same bits as
//! `tinygpt_core::model::Dropout`, so nothing is stored between the forward
//! and the backward. The step comes from the optimiser's counter on the GPU.

use super::common::{bind_kernel, check_no_alias, grid, uniform};
use crate::kernel::BoundKernel;
use crate::registry::{KernelSource, PipelineRegistry};
use crate::{GpuContext, GpuError};
use tinygpt_core::model::{Dropout, Site};

pub const DROPOUT: KernelSource = KernelSource {
    key: "dropout",
    wgsl: concat!(
        include_str!("../../../../shaders/dropout.wgsl"),
        include_str!("../../../../shaders/dropout_mask.wgsl")
    ),
    entry: "main",
    constants: &[],
};

/// The dropout of a training graph: rate, seed, and the buffer whose first
/// word is the step counter ([`super::adamw::OptState::step`]).
#[derive(Clone, Copy)]
pub struct DropoutDesc<'a> {
    pub p: f32,
    pub seed: u64,
    pub state: &'a wgpu::Buffer,
}

/// Binds `out (n) = [base (n) +] mask(site) ∘ y (n) / (1 − p)`, whole
/// buffers. `out` must differ from `y` and `base`.
#[allow(clippy::too_many_arguments)]
pub fn bind_dropout(
    ctx: &GpuContext,
    registry: &mut PipelineRegistry,
    d: DropoutDesc<'_>,
    site: Site,
    n: u32,
    base: Option<&wgpu::Buffer>,
    y: &wgpu::Buffer,
    out: &wgpu::Buffer,
) -> Result<BoundKernel, GpuError> {
    let bytes = n as u64 * 4;
    for (name, b) in [("y", Some(y)), ("base", base), ("out", Some(out))] {
        if let Some(b) = b.filter(|b| b.size() < bytes) {
            return Err(GpuError::Shape {
                op: "dropout",
                detail: format!("{name} holds {} bytes, {n} elements need {bytes}", b.size()),
            });
        }
    }
    let base_or_y = base.unwrap_or(y);
    check_no_alias(
        "dropout",
        &[("out", out)],
        &[("y", y), ("base", base_or_y), ("state", d.state)],
    )?;
    let [site, threshold, _, seed_lo, seed_hi, scale] = mask_words(d, site);
    let add = u32::from(base.is_some());
    let words = [n, site, threshold, add, seed_lo, seed_hi, scale, 0];
    let params = uniform(ctx, "dropout_params", &words);
    Ok(bind_kernel(
        ctx,
        registry,
        &DROPOUT,
        &params,
        &[(1, d.state), (2, base_or_y), (3, y), (4, out)],
        grid(ctx, n.div_ceil(256)),
    ))
}

/// The words that draw site `site`'s mask, as the kernels that drop read
/// them: site, threshold, a flag word (1: the mask applies), the seed's
/// two halves and the scale's bits.
pub(super) fn mask_words(d: DropoutDesc<'_>, site: Site) -> [u32; 6] {
    [
        site.id(),
        Dropout::threshold(d.p),
        1,
        d.seed as u32,
        (d.seed >> 32) as u32,
        Dropout::scale(d.p).to_bits(),
    ]
}
