//! The f16 weight cache: the packed-half copy of the parameters (same
//! element indices as the flat f32 buffer) that the forward linears read
//! while f16 storage or f16 compute is active. It owns its freshness: AdamW changes the
//! f32 weights, so the step that runs AdamW marks it stale as that step is
//! recorded (`GpuModel::encode_step`, the one place), and whoever reads it
//! next repacks first.

use crate::kernel::BoundKernel;
use crate::ops::matmul::f16w::F16Storage;
use crate::ops::matmul::f16w::{
    bind_f16_fresh_check, bind_pack_f16, pack_cpu, packed_words, PackedW,
};
use crate::ops::matmul::Fault;
use crate::{GpuContext, GpuError, PipelineRegistry};

/// Who reads the cache: the decoder (f16 storage), and whether the
/// tiled linears multiply in f16 compute.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheReaders {
    pub decode: bool,
    pub compute: bool,
}

pub struct F16WeightCache {
    cfg: F16Storage,
    readers: CacheReaders,
    buffer: wgpu::Buffer,
    /// The repack dispatch, when packing runs on the GPU.
    pack: Option<BoundKernel>,
    /// The copy matches the f32 weights.
    fresh: bool,
}

impl F16WeightCache {
    /// An empty (stale) cache for the `total` parameters of `params`, with
    /// its GPU repack bound when `cfg` packs on the GPU.
    pub fn new(
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        cfg: F16Storage,
        params: &wgpu::Buffer,
        total: usize,
    ) -> Result<Self, GpuError> {
        let buffer = ctx.zeros("params_f16", packed_words(total))?;
        let pack = cfg
            .pack_on_gpu
            .then(|| bind_pack_f16(ctx, reg, cfg.fault, params, total as u32, &buffer))
            .transpose()?;
        Ok(Self {
            cfg,
            readers: CacheReaders {
                decode: true,
                compute: false,
            },
            buffer,
            pack,
            fresh: false,
        })
    }

    /// The same cache for `readers`.
    pub fn read_by(self, readers: CacheReaders) -> Self {
        Self { readers, ..self }
    }

    pub fn readers(&self) -> CacheReaders {
        self.readers
    }

    /// The packed halves (tests and fault injection).
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Whether a train step can repack inside its own submission.
    pub fn packs_on_gpu(&self) -> bool {
        self.pack.is_some()
    }

    /// The training forward reads these halves ([`F16Storage::training`]).
    pub fn for_training(&self) -> bool {
        self.cfg.training
    }

    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// The f32 weights changed (or are about to, in the submission being
    /// recorded). The test-only `stale` fault skips this.
    pub fn invalidate(&mut self) {
        if !Fault::keeps_stale_cache(self.cfg.fault) {
            self.fresh = false;
        }
    }

    /// The weight `W` starting at element `offset`, as a kernel operand
    /// (with the test-only kernel fault the cache was made with).
    pub fn at(&self, offset: u32) -> PackedW<'_> {
        PackedW {
            buffer: &self.buffer,
            offset,
            fault: self.cfg.fault,
            compute: self.readers.compute,
        }
    }

    /// The repack to record first in a pass, when the copy is stale and the
    /// GPU packs; the copy counts as fresh from then on.
    pub fn take_repack(&mut self) -> Option<&BoundKernel> {
        if self.fresh || self.pack.is_none() {
            return None;
        }
        self.fresh = true;
        self.pack.as_ref()
    }

    /// Brings the copy up to date now: a GPU repack submitted on its own,
    /// or `params` read back and packed on the CPU where the GPU's rounding
    /// is not RNE.
    pub async fn refresh(
        &mut self,
        ctx: &GpuContext,
        params: &wgpu::Buffer,
        total: usize,
    ) -> Result<(), GpuError> {
        if self.fresh {
            return Ok(());
        }
        if let Some(k) = self.take_repack() {
            crate::kernel::submit(ctx, "repack_f16", &[k]);
            return Ok(());
        }
        let words = pack_cpu(&ctx.read_f32(params, total).await?, self.cfg.fault);
        ctx.queue
            .write_buffer(&self.buffer, 0, bytemuck::cast_slice(&words));
        self.fresh = true;
        Ok(())
    }

    /// Counts the cached halves that differ from round-to-nearest-even of
    /// the `total` f32 weights in `params` now: 0 for a cache that is what
    /// it claims to be. On the GPU when it packs there (its packer was
    /// proven RNE), else on the CPU. Call it where the cache is meant to be
    /// current (after [`Self::refresh`]).
    pub async fn mismatches(
        &self,
        ctx: &GpuContext,
        reg: &mut PipelineRegistry,
        params: &wgpu::Buffer,
        total: usize,
    ) -> Result<u64, GpuError> {
        if self.pack.is_none() {
            let want = pack_cpu(&ctx.read_f32(params, total).await?, None);
            let bytes = ctx
                .read_bytes(&self.buffer, (want.len() * 4) as u64)
                .await?;
            let got: &[u32] = bytemuck::cast_slice(&bytes);
            let halves = |w: u32| [w & 0xffff, w >> 16];
            let differ = want.iter().zip(got).enumerate().map(|(i, (&a, &b))| {
                let [a0, a1] = halves(a);
                let [b0, b1] = halves(b);
                (a0 != b0) as u64 + (a1 != b1 && 2 * i + 1 < total) as u64
            });
            return Ok(differ.sum());
        }
        let count = ctx.zeros("f16_fresh_mismatches", 1)?;
        let k = bind_f16_fresh_check(ctx, reg, params, total as u32, &self.buffer, &count)?;
        crate::kernel::submit(ctx, "f16_fresh_check", &[&k]);
        let bytes = ctx.read_bytes(&count, 4).await?;
        Ok(u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes")) as u64)
    }
}
