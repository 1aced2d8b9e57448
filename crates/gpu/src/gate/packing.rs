//! Packing weights into halves for a gate: on the GPU (the cache's own
//! packer) or the CPU, and counting the halves that differ from `half`'s
//! round-to-nearest-even.

use crate::ops::matmul::f16w::{bind_pack_f16, half_bits, pack_cpu, packed_words};
use crate::ops::matmul::Fault;
use crate::{GpuContext, GpuError, PipelineRegistry};

/// Where weights are packed and with which (test-only) fault.
#[derive(Clone, Copy, Debug)]
pub struct Packer {
    pub on_gpu: bool,
    pub fault: Option<Fault>,
}

impl Packer {
    /// Packs `src` (f32) into halves, on the GPU or the CPU; returns the
    /// packed buffer.
    pub async fn pack(
        &self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        src: &[f32],
    ) -> Result<wgpu::Buffer, GpuError> {
        if self.on_gpu {
            let src_buf = ctx.upload("pack_src", src)?;
            let dst = ctx.zeros("packed", packed_words(src.len()))?;
            let k = bind_pack_f16(ctx, reg, self.fault, &src_buf, src.len() as u32, &dst)?;
            crate::kernel::submit(ctx, "pack_f16", &[&k]);
            Ok(dst)
        } else {
            let words = pack_cpu(src, self.fault);
            ctx.upload_bytes("packed", bytemuck::cast_slice(&words))
        }
    }
}

/// `true` when two halves are the same value (every NaN equals every NaN).
pub(super) fn same_half(a: u16, b: u16) -> bool {
    let nan = |h: u16| h & 0x7c00 == 0x7c00 && h & 0x03ff != 0;
    a == b || (nan(a) && nan(b))
}

/// Halves of packed words in element order.
pub(super) fn halves(words: &[u32]) -> impl Iterator<Item = u16> + '_ {
    words.iter().flat_map(|w| [*w as u16, (*w >> 16) as u16])
}

/// Packed halves in `words` that differ from `half`'s RNE of `w`.
pub fn mismatched_halves(w: &[f32], words: &[u32]) -> usize {
    w.iter()
        .zip(halves(words))
        .filter(|&(&x, got)| !same_half(got, half_bits(x, None)))
        .count()
}
