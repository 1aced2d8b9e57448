//! What the training and decode binders share: the shape checks and the
//! score scale.

use crate::ops::common::shape_error;
use crate::GpuError;

/// Largest head size the kernels hold: four chunks of 32 dims.
pub const MAX_HEAD_SIZE: u32 = 128;

/// Refuses `buf` when it holds fewer than `elems` f32.
pub(super) fn need(
    buf: &wgpu::Buffer,
    elems: u64,
    name: &str,
    what: &dyn std::fmt::Debug,
) -> Result<(), GpuError> {
    if buf.size() < elems * 4 {
        return Err(shape_error(
            "attention",
            format!(
                "{name} holds {} bytes, {what:?} needs {}",
                buf.size(),
                elems * 4
            ),
        ));
    }
    Ok(())
}

/// Checks `c = nh·HS` with `1 ≤ HS ≤ MAX_HEAD_SIZE`; returns HS.
pub(super) fn head_size(c: u32, nh: u32) -> Result<u32, GpuError> {
    if nh == 0 || !c.is_multiple_of(nh) {
        return Err(shape_error(
            "attention",
            format!("C = {c} is not a multiple of NH = {nh}"),
        ));
    }
    let hs = c / nh;
    if hs == 0 || hs > MAX_HEAD_SIZE {
        return Err(shape_error(
            "attention",
            format!("head size {hs} (C = {c}, NH = {nh}) is outside 1..={MAX_HEAD_SIZE}"),
        ));
    }
    Ok(hs)
}

/// `1/√HS` rounded to f32, as the CPU reference's `F::of` rounds it.
pub(super) fn scale(hs: u32) -> f32 {
    (1.0 / (hs as f64).sqrt()) as f32
}
