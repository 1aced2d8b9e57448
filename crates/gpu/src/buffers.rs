//! Buffer creation and asynchronous read-back.

use crate::{GpuContext, GpuError};
use wgpu::util::DeviceExt;

/// Usage of every tensor buffer: bound as storage, copied in and out.
pub const TENSOR_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl GpuContext {
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
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut enc = self.device.create_command_encoder(&Default::default());
        enc.copy_buffer_to_buffer(src, 0, &staging, 0, size);
        self.queue.submit([enc.finish()]);
        let (tx, rx) = futures_channel::oneshot::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        #[cfg(not(target_arch = "wasm32"))]
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        rx.await
            .map_err(|_| GpuError::Readback("map callback dropped".into()))?
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        let out = staging
            .get_mapped_range(..)
            .map_err(|e| GpuError::Readback(e.to_string()))?
            .to_vec();
        staging.unmap();
        Ok(out)
    }
}
