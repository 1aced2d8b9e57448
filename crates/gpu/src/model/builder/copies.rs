//! The f16 copies the tensor-core path's producers write beside their
//! outputs (`copy16.wgsl`): a LayerNorm's output, the GELU epilogue's, a
//! LayerNorm backward's `dx`, the GELU backward's — each the op(A) of the
//! product after it, which then stages nothing (`Reuse::a`): the same
//! halves, one dispatch (a read of the f32 output and a write of its copy)
//! fewer. A copy is made once per output buffer and read only while fresh:
//! its producer was the buffer's last writer (every op of the vocabulary
//! says what it wrote, [`Builder::wrote`]).

use super::{Buf, Builder};
use crate::ops::matmul::coop_stage::StagedRows;
use crate::ops::View;
use crate::GpuError;

impl<'a, 'r> Builder<'a, 'r> {
    /// On tensor cores, the f16 copy of `out` (`rows × cols`, times
    /// `scale`) for the op writing `out` to write too (its binder takes
    /// it); `None` off them.
    pub(super) fn copy_for(
        &mut self,
        out: &Buf,
        (rows, cols): (usize, usize),
        scale: f32,
    ) -> Result<Option<StagedRows>, GpuError> {
        if !self.coop {
            return Ok(None);
        }
        let (rows, cols) = (rows as u32, cols as u32);
        let at = (out.clone(), 0);
        if let Some(c) = self.copies.made(&at) {
            if c.producer_binding("f16 copy", out.into(), (rows, cols))
                .is_ok()
                && c.scale() == scale
            {
                return Ok(Some(c.clone()));
            }
        }
        let c = StagedRows::for_producer(self.ctx, out.into(), (rows, cols), scale)?;
        self.copies.make(at, c.clone());
        Ok(Some(c))
    }

    /// Records that the op just bound wrote `out`, with its copy (which is
    /// then fresh) or without (stale from now on).
    pub(super) fn wrote(&mut self, out: &Buf, copy: bool) {
        self.copies.mark((out.clone(), 0), copy);
    }

    /// The fresh copy of `a` (`rows × cols`), for a product reading it as
    /// op(A).
    pub(super) fn fresh_copy(&self, a: View<'_>, shape: (u32, u32)) -> Option<StagedRows> {
        let c = self.copies.fresh(&(a.buffer.clone(), a.offset))?;
        c.producer_binding("f16 copy", a, shape).ok()?;
        Some(c.clone())
    }
}
