//! The reductions a backward leaves to its end. Each block linear's K-split
//! f32 weight gradient keeps its slices in a region of its own until one
//! dispatch reduces them all; each LayerNorm's dw and db and each two-stage
//! bias gradient's second stage sum `chunks(N)` rows of partials into a
//! gradient, all in one more dispatch ([`Builder::finish_backward`]) — at
//! `tiny` on the f32 path 16 reduces and 9 column sums become 2 dispatches.
//! Each reduce and sum adds the same numbers in the same order as its own
//! dispatch did: the same bits. Nothing reads a parameter gradient before
//! the optimiser, after the backward; the tied head's weight gradient,
//! which the embedding's backward adds onto, is reduced at once.

use super::regions::{Deferred, Regions};
use super::{Builder, R};
use crate::kernel::Layout;
use crate::ops::bias_grad::{
    bias_grad_partials, bind_bias_grad_deferred, bind_column_sums, chunks, BiasGradDesc, ColumnSum,
};
use crate::ops::common::shape_error;
use crate::ops::layernorm::{
    bind_layernorm_backward_deferred, layernorm_backward_partials, LayerNormGrads,
};
use crate::ops::matmul::{bind_reduce_table, bind_split_k_deferred, MatmulDesc};
use crate::ops::{BoundOp, View};
use crate::GpuError;
use tinygpt_protocol::memory::{
    backward_sum_partials_floats, deferred_split_floats, split_region_floats,
};

impl<'a, 'r> Builder<'a, 'r> {
    /// Makes the buffers of what the backward leaves to its end, of the
    /// sizes the memory plan counts: the sums' partials
    /// ([`backward_sum_partials_floats`]: room for every biased linear's
    /// bias gradient, whether or not it ends up in two stages) and the
    /// weight gradients' slices ([`deferred_split_floats`]; none above
    /// its cap).
    pub(super) fn make_deferred(&mut self) -> R {
        let rows = self.b * self.t;
        let sums = backward_sum_partials_floats(self.cfg, rows) as usize;
        let slices = deferred_split_floats(self.cfg, rows) as usize;
        let slices = match slices {
            0 => None,
            n => Some(self.ctx.zeros("backward_split_slices", n)?),
        };
        self.deferred = Deferred {
            partials: Regions::new(Some(self.ctx.zeros("backward_sum_partials", sums)?)),
            slices: Regions::new(slices),
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
        let floats = layernorm_backward_partials(desc) as u64;
        let at = self.deferred.partials.need(floats, "partials")?;
        let (op, sums) = bind_layernorm_backward_deferred(self.ctx, self.reg, desc, grads, at)?;
        let grads = self.grads.as_ref().expect("backward() first").buffer;
        for s in sums {
            self.deferred.sums.push(sum_words(grads, s)?);
        }
        self.push(op)
    }

    /// `db (cols) += Σ_rows dy`: the first stage now, the second at the end
    /// — or only the second, where `dy`'s producer wrote the first
    /// (`Deferred::first_stage`).
    pub(super) fn bias_grad_deferred(&mut self, dy: View<'_>, db: View<'_>, cols: u32) -> R {
        let desc = self.bias_desc(cols);
        let written = |(b, _, c): &mut (wgpu::Buffer, u32, u32)| {
            b == dy.buffer && dy.offset == 0 && *c == cols
        };
        if let Some((_, at, _)) = self.deferred.first_stage.take_if(written) {
            let grads = self.grads.as_ref().expect("backward() first").buffer;
            let second = sum_at(grads, at, db, (cols, desc.accumulate))?;
            self.deferred.sums.push(second);
            return Ok(());
        }
        let floats = bias_grad_partials(desc) as u64;
        let at = self.deferred.partials.need(floats, "partials")?;
        let (k, second) = bind_bias_grad_deferred(self.ctx, self.reg, desc, dy, db, at)?;
        if let Some(s) = second {
            let grads = self.grads.as_ref().expect("backward() first").buffer;
            self.deferred.sums.push(sum_words(grads, s)?);
        }
        self.push(k)
    }

    /// A block linear's weight gradient `dW += dyᵀ·x` (`desc`), with its
    /// bias gradient `db`, K-split into a region of its own and reduced at
    /// the end, where it splits on the GPU layout and a region is left:
    /// whether it did (else nothing is bound).
    pub(super) fn weight_grad_deferred(
        &mut self,
        desc: MatmulDesc,
        (dy, x): (View<'_>, View<'_>),
        (dw, db): (View<'_>, Option<View<'_>>),
    ) -> Result<bool, GpuError> {
        let floats = split_region_floats(desc.m, desc.k, desc.n);
        if self.layout != Layout::Gpu || floats == 0 {
            return Ok(false);
        }
        let Some(at) = self.deferred.slices.take(floats) else {
            return Ok(false);
        };
        let (ctx, ops) = (self.ctx, [dy, x, dw]);
        // With the bias gradient as the split's row sums where the kernel
        // has them, else without and the bias gradient apart.
        let mut split = None;
        if db.is_some() {
            split = bind_split_k_deferred(ctx, self.reg, desc, ops, db, at)?;
        }
        let row_sums = split.is_some();
        if split.is_none() {
            split = bind_split_k_deferred(ctx, self.reg, desc, ops, None, at)?;
        }
        let Some((k, reduce)) = split else {
            return Ok(false);
        };
        self.deferred.reduces.push(reduce);
        self.push(k)?;
        match db {
            Some(db) if !row_sums => self.bias_grad_deferred(dy, db, desc.m)?,
            _ => {}
        }
        Ok(true)
    }

    /// Binds what the backward left: every weight gradient's reduce in one
    /// dispatch, then every sum in one (nothing where none is left).
    pub fn finish_backward(&mut self) -> R {
        let grads = self.grads.as_ref().expect("backward() first").buffer;
        let reduces = std::mem::take(&mut self.deferred.reduces);
        if let (Some(slices), false) = (self.deferred.slices.buffer.clone(), reduces.is_empty()) {
            let k = bind_reduce_table(self.ctx, self.reg, &reduces, &slices, grads)?;
            self.push(BoundOp {
                kernels: vec![k],
                scratch: vec![slices],
            })?;
        }
        let sums = std::mem::take(&mut self.deferred.sums);
        let Some(partials) = self.deferred.partials.buffer.clone() else {
            return Ok(());
        };
        let sums: Vec<ColumnSum> = sums
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
}

/// A sum to finish at the end, as words: its destination must be a
/// gradient.
fn sum_words(grads: &wgpu::Buffer, s: ColumnSum<'_>) -> Result<[u32; 4], GpuError> {
    sum_at(grads, s.src.offset, s.dst, (s.cols, s.accumulate))
}

/// [`sum_words`] of the partials at `at` into `dst`.
fn sum_at(
    grads: &wgpu::Buffer,
    at: u32,
    dst: View<'_>,
    (cols, accumulate): (u32, bool),
) -> Result<[u32; 4], GpuError> {
    if dst.buffer != grads {
        let msg = "a deferred sum's destination is not the gradients".into();
        return Err(shape_error("backward", msg));
    }
    Ok([at, dst.offset, cols, accumulate as u32])
}
