//! The column sums a backward leaves to its end: each LayerNorm's dw and
//! db and each two-stage bias gradient's second stage sum `chunks(N)` rows
//! of partials into a gradient; with every partial in one buffer they all
//! finish in one dispatch ([`Builder::finish_sums`]) instead of one each
//! (at `tiny`, 9 dispatches become 1 on the f32 path, 25 on tensor cores).
//! Each sum adds the same numbers in the same order as its own dispatch
//! did: the same bits. Nothing reads a parameter gradient before the
//! optimiser, after the backward.

use super::{Builder, R};
use crate::ops::bias_grad::{
    bias_grad_partials, bind_bias_grad_deferred, bind_column_sums, chunks, BiasGradDesc, ColumnSum,
};
use crate::ops::common::shape_error;
use crate::ops::layernorm::{
    bind_layernorm_backward_deferred, layernorm_backward_partials, LayerNormGrads,
};
use crate::ops::{BoundOp, View};
use crate::GpuError;
use tinygpt_protocol::memory::backward_sum_partials_floats;

/// The partials' buffer and the sums left: `(partials offset, gradient
/// offset, columns, accumulate)`.
#[derive(Default)]
pub(super) struct DeferredSums {
    partials: Option<wgpu::Buffer>,
    used: u32,
    sums: Vec<[u32; 4]>,
}

impl<'a, 'r> Builder<'a, 'r> {
    /// Makes the partials' buffer, of the size the memory plan counts
    /// ([`backward_sum_partials_floats`]: room for every biased linear's
    /// bias gradient, whether or not it ends up in two stages).
    pub(super) fn make_sum_partials(&mut self) -> R {
        let floats = backward_sum_partials_floats(self.cfg, self.b * self.t) as usize;
        let buffer = self.ctx.zeros("backward_sum_partials", floats)?;
        self.sums = DeferredSums {
            partials: Some(buffer),
            ..Default::default()
        };
        Ok(())
    }

    /// `db (cols) += Σ_rows dy`, accumulating, on the rows of a step.
    pub(super) fn bias_desc(&self, cols: u32) -> BiasGradDesc {
        BiasGradDesc {
            rows: self.n(),
            cols,
            accumulate: true,
            layout: self.layout,
        }
    }

    /// A LayerNorm's backward: `dx` and the `dw`/`db` partials now, their
    /// sums at the end.
    pub(super) fn layernorm_backward_deferred(
        &mut self,
        accumulate: bool,
        grads: LayerNormGrads<'_>,
    ) -> R {
        let desc = self.ln(accumulate);
        let floats = layernorm_backward_partials(desc);
        let partials = self.sum_partials(floats)?;
        let (ctx, buffer) = (self.ctx, self.sums.partials.as_ref().expect("made"));
        let at = View::at(buffer, partials);
        let (op, sums) = bind_layernorm_backward_deferred(ctx, self.reg, desc, grads, at)?;
        let sums = sums.map(|s| self.defer(s));
        self.sums
            .sums
            .extend(sums.into_iter().collect::<Result<Vec<_>, _>>()?);
        self.push(op)
    }

    /// `db (cols) += Σ_rows dy`: the first stage now, the second at the end.
    pub(super) fn bias_grad_deferred(&mut self, dy: View<'_>, db: View<'_>, cols: u32) -> R {
        let desc = self.bias_desc(cols);
        let partials = self.sum_partials(bias_grad_partials(desc))?;
        let (ctx, buffer) = (self.ctx, self.sums.partials.as_ref().expect("made"));
        let at = View::at(buffer, partials);
        let (k, second) = bind_bias_grad_deferred(ctx, self.reg, desc, dy, db, at)?;
        if let Some(s) = second {
            let s = self.defer(s)?;
            self.sums.sums.push(s);
        }
        self.push(k)
    }

    /// Binds every sum left in one dispatch (nothing when none is left).
    pub fn finish_sums(&mut self) -> R {
        let Some(partials) = self.sums.partials.clone() else {
            return Ok(());
        };
        let grads = self.grads.as_ref().expect("backward() first").buffer;
        let sums: Vec<ColumnSum> = std::mem::take(&mut self.sums.sums)
            .into_iter()
            .map(|[src, dst, cols, acc]| ColumnSum {
                src: View::at(&partials, src),
                dst: View::at(grads, dst),
                cols,
                accumulate: acc != 0,
            })
            .collect();
        if sums.is_empty() {
            return Ok(());
        }
        let rows = chunks(self.n()).max(1);
        let k = bind_column_sums(self.ctx, self.reg, self.layout, rows, rows, &sums)?;
        self.push(BoundOp {
            kernels: vec![k],
            scratch: vec![partials],
        })
    }

    /// Takes `floats` of the partials' buffer; its offset.
    fn sum_partials(&mut self, floats: u32) -> Result<u32, GpuError> {
        let at = self.sums.used;
        let room = self.sums.partials.as_ref().map_or(0, |b| b.size() / 4);
        if self.sums.partials.is_none() || (at + floats) as u64 > room {
            return Err(shape_error(
                "backward",
                format!("the sums' partials hold {room} floats; {at} + {floats} asked"),
            ));
        }
        self.sums.used += floats;
        Ok(at)
    }

    /// A sum to finish at the end, as offsets: its destination must be a
    /// gradient.
    fn defer(&self, s: ColumnSum<'_>) -> Result<[u32; 4], GpuError> {
        let grads = self.grads.as_ref().expect("backward() first").buffer;
        if s.dst.buffer != grads {
            let msg = "a deferred sum's destination is not the gradients".into();
            return Err(shape_error("backward", msg));
        }
        Ok([s.src.offset, s.dst.offset, s.cols, s.accumulate as u32])
    }
}
