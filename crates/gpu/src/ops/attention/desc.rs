//! What the attention's training binders share: the batch's shape
//! ([`AttentionDesc`]: its checks, grid and uniform), the backward's
//! buffers and the binding of its two dispatches.

use super::shape::{head_size, need, scale};
use crate::kernel::{BoundKernel, Layout};
use crate::ops::common::{bind_kernel_shaped, shape_error};
use crate::ops::dropout::DropoutDesc;
use crate::registry::{KernelSource, PipelineRegistry, Shape};
use crate::{GpuContext, GpuError};
use tinygpt_core::model::{Dropout, Site};

/// Head dims per chunk of the forward and backward kernels' tiles.
const HEAD_CHUNK: u32 = 32;
/// Query (or key) rows per workgroup of the forward and backward kernels
/// (`ROWS` in attention_common.wgsl).
const ROWS_PER_WORKGROUP: u32 = 32;
/// The same in the [`Layout::Cpu`] kernels (a row per invocation).
const ROWS_PER_WORKGROUP_SERIAL: u32 = 64;

/// Attention over a batch: `B` sequences of `T` tokens, `C` channels in
/// `NH` heads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AttentionDesc {
    pub b: u32,
    pub t: u32,
    pub c: u32,
    pub nh: u32,
    /// Workgroups of 32 rows with tiles in workgroup memory (`Gpu`), or a
    /// row per invocation (`Cpu`).
    pub layout: Layout,
}

impl AttentionDesc {
    /// Checks the shape against the kernels and the device; returns HS.
    pub(super) fn validate(&self, ctx: &GpuContext) -> Result<u32, GpuError> {
        let hs = head_size(self.c, self.nh)?;
        let max = ctx.limits.max_compute_workgroups_per_dimension;
        let [x, y, z] = self.workgroups();
        if self.b == 0 || self.t == 0 || x > max || y > max || z > max {
            return Err(shape_error(
                "attention",
                format!("{self:?} needs {x}×{y}×{z} workgroups; each must be 1..={max}"),
            ));
        }
        Ok(hs)
    }

    /// `(row blocks of T, NH, B)`.
    pub(super) fn workgroups(&self) -> [u32; 3] {
        let rows = match self.layout {
            Layout::Gpu => ROWS_PER_WORKGROUP,
            Layout::Cpu => ROWS_PER_WORKGROUP_SERIAL,
        };
        [self.t.div_ceil(rows), self.nh, self.b]
    }

    /// `gpu`, or `serial` in the [`Layout::Cpu`] layout.
    pub(super) fn kernel(
        &self,
        gpu: &'static KernelSource,
        serial: &'static KernelSource,
    ) -> &'static KernelSource {
        match self.layout {
            Layout::Gpu => gpu,
            Layout::Cpu => serial,
        }
    }

    /// The kernels' uniform; with `dropout`, the mask of `site` on the
    /// attention weights (threshold 0 turns it off).
    pub(super) fn uniform_bytes(
        &self,
        hs: u32,
        dropout: Option<(DropoutDesc<'_>, Site)>,
    ) -> [u8; 64] {
        let chunks = hs.div_ceil(HEAD_CHUNK);
        let (site, threshold, seed, drop_scale) = match dropout {
            Some((d, site)) => (
                site.id(),
                Dropout::threshold(d.p),
                d.seed,
                Dropout::scale(d.p),
            ),
            None => (0, 0, 0, 1.0),
        };
        bytemuck::cast([
            self.t,
            self.c,
            self.nh,
            hs,
            chunks,
            scale(hs).to_bits(),
            0,
            0,
            site,
            threshold,
            seed as u32,
            (seed >> 32) as u32,
            drop_scale.to_bits(),
            0,
            0,
            0,
        ])
    }

    fn rows(&self) -> u64 {
        self.b as u64 * self.t as u64
    }

    /// Elements of `qkv`/`dqkv (B,T,3C)`, `out`/`dout (B,T,C)`, `lse (B,NH,T)`.
    pub fn qkv_len(&self) -> u64 {
        self.rows() * 3 * self.c as u64
    }

    pub fn out_len(&self) -> u64 {
        self.rows() * self.c as u64
    }

    pub fn lse_len(&self) -> u64 {
        self.rows() * self.nh as u64
    }
}

/// The buffers of one attention backward.
#[derive(Clone, Copy)]
pub struct AttentionBackwardBuffers<'a> {
    /// `(B,T,3C)`: the forward's input.
    pub qkv: &'a wgpu::Buffer,
    /// `(B,T,C)`: the forward's output.
    pub out: &'a wgpu::Buffer,
    /// `(B,T,C)`: the loss gradient of `out`.
    pub dout: &'a wgpu::Buffer,
    /// `(B,NH,T)`: the forward's log-sum-exp.
    pub lse: &'a wgpu::Buffer,
    /// `(B,T,3C)`: written in full, **overwriting** (not accumulating into)
    /// its contents, unlike the CPU reference's `+=`.
    pub dqkv: &'a wgpu::Buffer,
}

impl AttentionDesc {
    /// Refuses forward buffers smaller than the shape needs.
    pub(super) fn check_forward(
        &self,
        (qkv, out, lse): (&wgpu::Buffer, &wgpu::Buffer, &wgpu::Buffer),
    ) -> Result<(), GpuError> {
        need(qkv, self.qkv_len(), "qkv", self)?;
        need(out, self.out_len(), "out", self)?;
        need(lse, self.lse_len(), "lse", self)
    }

    /// Refuses backward buffers smaller than the shape needs.
    pub(super) fn check_backward(
        &self,
        bufs: &AttentionBackwardBuffers<'_>,
    ) -> Result<(), GpuError> {
        self.check_forward((bufs.qkv, bufs.out, bufs.lse))?;
        need(bufs.dout, self.out_len(), "dout", self)?;
        need(bufs.dqkv, self.qkv_len(), "dqkv", self)
    }
}

impl AttentionDesc {
    /// The backward's two dispatches over `bufs`, to record in this order:
    /// `dq_dkv[0]` writes the Q columns of `dqkv` and the row terms
    /// `D = dout·out (B,NH,T)` into a scratch made here, `dq_dkv[1]` reads
    /// `D` and writes the K and V columns — the f32 kernels' bindings,
    /// which the tensor-core ones share — each with the uniform `bytes`
    /// and the shape constants `shape` (the tensor-core kernels' `HS`;
    /// none for the f32 ones), over `grid`. `state`: the optimiser's state
    /// (the dropout masks' step) or any read-only buffer.
    pub(super) fn bind_backward(
        &self,
        (ctx, registry): (&GpuContext, &mut PipelineRegistry),
        (bufs, state, copy16): (
            &AttentionBackwardBuffers<'_>,
            &wgpu::Buffer,
            Option<&wgpu::Buffer>,
        ),
        (dq_dkv, bytes, shape): ([&KernelSource; 2], &[u8], Shape<'_>),
        grid: [u32; 3],
    ) -> Result<Vec<BoundKernel>, GpuError> {
        // The bind groups keep `delta` alive once this handle drops:
        // wgpu-core holds its resources by reference count, and on the web
        // the GPUBindGroup references the GPUBuffer.
        let delta = ctx.zeros("attention_delta", self.lse_len() as usize)?;
        let (qkv, out, dout, lse, dqkv) = (bufs.qkv, bufs.out, bufs.dout, bufs.lse, bufs.dqkv);
        // The tensor-core kernels' f16 copy of dqkv (binding 15), if any.
        let copy = copy16.map(|b| (15, b));
        let mut dq = vec![
            (1, qkv),
            (2, out),
            (3, dout),
            (4, lse),
            (5, &delta),
            (6, dqkv),
            (7, state),
        ];
        let mut dkv = vec![
            (1, qkv),
            (2, dout),
            (3, lse),
            (4, &delta),
            (5, dqkv),
            (6, state),
        ];
        dq.extend(copy);
        dkv.extend(copy);
        let [dq_src, dkv_src] = dq_dkv;
        let dq_uniform = ctx.uniform(dq_src.key, bytes);
        let dkv_uniform = ctx.uniform(dkv_src.key, bytes);
        Ok(vec![
            bind_kernel_shaped(ctx, registry, (dq_src, shape), &dq_uniform, &dq, grid),
            bind_kernel_shaped(ctx, registry, (dkv_src, shape), &dkv_uniform, &dkv, grid),
        ])
    }
}
