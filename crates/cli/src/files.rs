//! What the subcommands share: the GPU (or the CPU reference), reading
//! files, and checkpoints in and out.

use crate::args::Backend;
use anyhow::{Context, Result};
use std::path::Path;
use std::rc::Rc;
use tinygpt_core::checkpoint::{self, WeightDtype};
use tinygpt_gpu::engine::{Gpu, Session};
use tinygpt_gpu::GpuContext;

/// The GPU, unless `--cpu`; no adapter is an error that says what to do.
pub(crate) async fn open_gpu(backend: &Backend) -> Result<Option<Rc<Gpu>>> {
    if backend.cpu {
        return Ok(None);
    }
    let ctx = GpuContext::new()
        .await
        .context("opening the GPU (pass --cpu to use the CPU reference)")?;
    eprintln!(
        "GPU: {} ({}, {:?})",
        ctx.info.name, ctx.info.backend, ctx.info.device_type
    );
    Ok(Some(Gpu::new(ctx)))
}

pub(crate) fn read(path: &Path, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {what} {}", path.display()))
}

pub(crate) fn load_session(path: &Path, gpu: Option<Rc<Gpu>>) -> Result<Session> {
    let ckpt = checkpoint::load(&read(path, "checkpoint")?)
        .with_context(|| format!("{} is not a valid checkpoint", path.display()))?;
    Ok(Session::from_checkpoint(
        ckpt,
        path.display().to_string(),
        gpu,
    )?)
}

/// Writes the file next to its destination, then renames it over: a crash
/// mid-write leaves the previous checkpoint intact.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("safetensors.tmp");
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}

pub(crate) async fn save(session: &Session, path: &Path, f16: bool) -> Result<()> {
    let mut ckpt = session.checkpoint().await?;
    let dtype = if f16 {
        // Shipping weights: moments are f32-only and not needed to sample.
        ckpt.adam = None;
        WeightDtype::F16
    } else {
        WeightDtype::F32
    };
    write_atomic(path, &checkpoint::save(&ckpt, dtype)?)
}
