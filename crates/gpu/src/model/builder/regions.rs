//! The buffers and lists of what a backward leaves to its end
//! (`deferred.rs` binds them).

use crate::ops::common::shape_error;
use crate::ops::matmul::SplitReduce;
use crate::ops::View;
use crate::GpuError;

/// A buffer handed out in consecutive regions.
#[derive(Default)]
pub(super) struct Regions {
    pub(super) buffer: Option<wgpu::Buffer>,
    used: u32,
}

impl Regions {
    pub(super) fn new(buffer: Option<wgpu::Buffer>) -> Self {
        Self { buffer, used: 0 }
    }

    /// `floats` of the buffer: the next region, `None` where none is left.
    pub(super) fn take(&mut self, floats: u64) -> Option<View<'_>> {
        let buffer = self.buffer.as_ref()?;
        let end = self.used as u64 + floats;
        if end > buffer.size() / 4 {
            return None;
        }
        let at = self.used;
        self.used = end as u32;
        Some(View::at(buffer, at))
    }

    /// [`Self::take`], or the error that the `what` buffer is full.
    pub(super) fn need(&mut self, floats: u64, what: &str) -> Result<View<'_>, GpuError> {
        let msg = format!("the backward's {what} buffer is full");
        self.take(floats)
            .ok_or_else(|| shape_error("backward", msg))
    }
}

/// What the backward leaves to its end: the sums' partials and the sums
/// (`(partials offset, gradient offset, columns, accumulate)`); the weight
/// gradients' slices and their reduces.
#[derive(Default)]
pub(super) struct Deferred {
    pub(super) partials: Regions,
    pub(super) sums: Vec<[u32; 4]>,
    /// A bias gradient's first stage its gradient's producer wrote (the
    /// GELU backward's column form): that buffer, the partials' offset and
    /// the columns, for the bias gradient to finish.
    pub(super) first_stage: Option<(wgpu::Buffer, u32, u32)>,
    pub(super) slices: Regions,
    pub(super) reduces: Vec<SplitReduce>,
}
