//! Buffer creation and asynchronous read-back.

use crate::{GpuContext, GpuError};
use wgpu::util::DeviceExt;

/// Usage of every tensor buffer: bound as storage, copied in and out.
pub const TENSOR_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl GpuContext {
    fn count_allocation(&self, bytes: u64) {
        self.allocated
            .fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
    }

    /// Refuses a buffer the device cannot hold before wgpu would panic.
    pub fn check_size(&self, label: &str, bytes: u64) -> Result<(), GpuError> {
        let limit = self
            .limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size);
        if bytes > limit {
            return Err(GpuError::TooLarge {
                label: label.to_string(),
                bytes,
                limit,
                what: "storage buffer",
            });
        }
        Ok(())
    }

    /// A storage buffer holding `data`.
    pub fn upload(&self, label: &str, data: &[f32]) -> Result<wgpu::Buffer, GpuError> {
        self.upload_bytes(label, bytemuck::cast_slice(data))
    }

    /// A storage buffer holding raw bytes (`u32` tokens, packed halves).
    pub fn upload_bytes(&self, label: &str, data: &[u8]) -> Result<wgpu::Buffer, GpuError> {
        self.check_size(label, data.len() as u64)?;
        // wgpu rejects zero-sized bindings; a 4-byte dummy keeps shapes legal.
        let contents: &[u8] = if data.is_empty() { &[0; 4] } else { data };
        self.count_allocation(contents.len() as u64);
        Ok(self
            .device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents,
                usage: TENSOR_USAGE,
            }))
    }

    /// A zero-filled storage buffer of `len` f32 elements.
    pub fn zeros(&self, label: &str, len: usize) -> Result<wgpu::Buffer, GpuError> {
        let bytes = (len.max(1) * 4) as u64;
        self.check_size(label, bytes)?;
        self.count_allocation(bytes);
        Ok(self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: bytes,
            usage: TENSOR_USAGE,
            mapped_at_creation: false,
        }))
    }

    /// A uniform buffer holding `data`.
    pub fn uniform(&self, label: &str, data: &[u8]) -> wgpu::Buffer {
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: data,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            })
    }

    /// Copies the first `len` f32 of `src` to the CPU. On the web this awaits
    /// the map callback (`device.poll` does nothing there); natively it polls.
    pub async fn read_f32(&self, src: &wgpu::Buffer, len: usize) -> Result<Vec<f32>, GpuError> {
        let bytes = self.read_bytes(src, (len * 4) as u64).await?;
        Ok(bytemuck::cast_slice(&bytes).to_vec())
    }

    /// Copies the first `size` bytes of `src` to the CPU.
    pub async fn read_bytes(&self, src: &wgpu::Buffer, size: u64) -> Result<Vec<u8>, GpuError> {
        if size == 0 {
            return Ok(Vec::new());
        }
        self.start_read(&[(src, 0, size)]).finish(self).await
    }

    /// Copies the byte ranges `(buffer, offset, size)` into one staging buffer
    /// and starts mapping it, without waiting: work submitted afterwards runs
    /// while the read is in flight. [`PendingRead::finish`] waits only for
    /// this copy, not for later submissions.
    pub fn start_read(&self, ranges: &[(&wgpu::Buffer, u64, u64)]) -> PendingRead {
        let mut enc = self.device.create_command_encoder(&Default::default());
        let staged = self.stage_read(&mut enc, ranges);
        let index = self.queue.submit([enc.finish()]);
        staged.map(index)
    }

    /// Records the copies of [`Self::start_read`] into `enc`, to go with the
    /// work that fills the ranges in one submission; [`StagedRead::map`]
    /// starts the read once that submission is made.
    pub fn stage_read(
        &self,
        enc: &mut wgpu::CommandEncoder,
        ranges: &[(&wgpu::Buffer, u64, u64)],
    ) -> StagedRead {
        let size: u64 = ranges.iter().map(|r| r.2).sum();
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: size.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut at = 0;
        for &(src, offset, len) in ranges {
            enc.copy_buffer_to_buffer(src, offset, &staging, at, len);
            at += len;
        }
        StagedRead { staging, size }
    }
}

/// Copies recorded into an encoder not yet submitted (see
/// [`GpuContext::stage_read`]).
pub struct StagedRead {
    staging: wgpu::Buffer,
    size: u64,
}

impl StagedRead {
    /// Starts mapping the copies, which submission `index` holds.
    pub fn map(self, index: wgpu::SubmissionIndex) -> PendingRead {
        let (tx, rx) = futures_channel::oneshot::channel();
        self.staging
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |r| {
                let _ = tx.send(r);
            });
        PendingRead {
            staging: self.staging,
            size: self.size,
            index,
            rx,
        }
    }
}

/// A read-back in flight (see [`GpuContext::start_read`]).
pub struct PendingRead {
    staging: wgpu::Buffer,
    size: u64,
    #[cfg_attr(target_arch = "wasm32", allow(dead_code))]
    index: wgpu::SubmissionIndex,
    rx: futures_channel::oneshot::Receiver<Result<(), wgpu::BufferAsyncError>>,
}

impl PendingRead {
    /// Waits for the copy (only it: natively this polls until its own
    /// submission is done; on the web it awaits the map callback, since
    /// `device.poll` does nothing there) and returns the bytes.
    pub async fn finish(self, ctx: &GpuContext) -> Result<Vec<u8>, GpuError> {
        #[cfg(not(target_arch = "wasm32"))]
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(self.index.clone()),
                timeout: None,
            })
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        #[cfg(target_arch = "wasm32")]
        let _ = ctx;
        self.rx
            .await
            .map_err(|_| GpuError::Readback("map callback dropped".into()))?
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        let out = self
            .staging
            .get_mapped_range(..)
            .map_err(|e| GpuError::Readback(e.to_string()))?[..self.size as usize]
            .to_vec();
        self.staging.unmap();
        Ok(out)
    }

    /// [`Self::finish`] as f32 values.
    pub async fn finish_f32(self, ctx: &GpuContext) -> Result<Vec<f32>, GpuError> {
        let bytes = self.finish(ctx).await?;
        Ok(bytemuck::cast_slice(&bytes).to_vec())
    }
}
