//! Saved runs in the Origin Private File System.
//!
//! Layout: `runs/<id>/` holds `ckpt-a.safetensors` and `ckpt-b.safetensors`
//! (two slots: weights, AdamW moments, step, configs, vocabulary), the
//! uploaded corpus `corpus.txt` when the run did not use the bundled one,
//! and `run.json`, the manifest: which slot is current, the step, the batch
//! stream's RNG state, the loss history and the names shown in the UI.
//!
//! A save writes the checkpoint into the slot the manifest does *not* name,
//! then the manifest; each file write is itself atomic (`opfs::Dir::write`).
//! A crash at any point leaves the previous manifest naming the previous,
//! complete slot: the last save is never lost to the next one.

use crate::error::{ManifestError, SaveError};
use crate::opfs::{self, Dir};
use serde::{Deserialize, Serialize};
use tinygpt_protocol::{ModelConfig, SavedRunInfo, TrainConfig};

/// Manifest format version.
const VERSION: u32 = 1;
const RUNS: &str = "runs";
const MANIFEST: &str = "run.json";
const CORPUS: &str = "corpus.txt";

/// Where a saved run's corpus is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum CorpusRef {
    /// The bundled Shakespeare corpus (not copied).
    Bundled,
    /// An uploaded file, copied into the run's directory.
    Stored { name: String },
}

/// `run.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub version: u32,
    pub id: String,
    pub name: String,
    pub created_ms: f64,
    pub saved_ms: f64,
    /// The current checkpoint slot, `"a"` or `"b"`.
    pub slot: String,
    pub step: usize,
    pub target_step: usize,
    pub config: ModelConfig,
    pub train: TrainConfig,
    pub corpus: CorpusRef,
    /// Where the training-batch stream is (for an exact resume).
    pub sampler: [u64; 4],
    pub history_train: Vec<(usize, f32)>,
    pub history_val: Vec<(usize, f32)>,
    pub checkpoint_bytes: u64,
}

fn slot_file(slot: &str) -> String {
    format!("ckpt-{slot}.safetensors")
}

impl Manifest {
    pub fn info(&self, bytes: u64) -> SavedRunInfo {
        SavedRunInfo {
            id: self.id.clone(),
            name: self.name.clone(),
            config: self.config,
            step: self.step,
            target_step: self.target_step,
            train_loss: self.history_train.last().map(|x| x.1),
            val_loss: self.history_val.last().map(|x| x.1),
            saved_ms: self.saved_ms,
            bytes,
        }
    }
}

async fn runs_dir(create: bool) -> Result<Option<Dir>, SaveError> {
    Ok(opfs::root().await?.dir(RUNS, create).await?)
}

/// Writes `manifest`'s run: the checkpoint into the slot after `previous`'s,
/// the corpus when given, then the manifest naming the new slot. Returns the
/// manifest as written. `crash_halfway` (a test hook) stops halfway through
/// the checkpoint, as a crash would.
pub async fn save(
    mut manifest: Manifest,
    previous_slot: Option<&str>,
    checkpoint: &[u8],
    corpus: Option<&[u8]>,
    crash_halfway: bool,
) -> Result<Manifest, SaveError> {
    let runs = runs_dir(true).await?.expect("created");
    let dir = runs.dir(&manifest.id, true).await?.expect("created");
    manifest.version = VERSION;
    manifest.slot = if previous_slot == Some("a") { "b" } else { "a" }.to_string();
    manifest.checkpoint_bytes = checkpoint.len() as u64;
    if let Some(bytes) = corpus {
        dir.write(CORPUS, bytes, false).await?;
    }
    dir.write(&slot_file(&manifest.slot), checkpoint, crash_halfway)
        .await?;
    if crash_halfway {
        return Err(SaveError::CrashedHalfway);
    }
    let json = serde_json::to_vec(&manifest).map_err(ManifestError::Encode)?;
    dir.write(MANIFEST, &json, false).await?;
    Ok(manifest)
}

/// Bytes the run's files take.
async fn run_bytes(dir: &Dir) -> u64 {
    let mut total = 0;
    for name in [MANIFEST, CORPUS, "ckpt-a.safetensors", "ckpt-b.safetensors"] {
        total += dir.size(name).await.unwrap_or(0);
    }
    total
}

/// Every readable saved run, newest first; unreadable ones are reported in
/// the second list (name and why) and left alone.
pub async fn list() -> Result<(Vec<SavedRunInfo>, Vec<String>), SaveError> {
    let Some(runs) = runs_dir(false).await? else {
        return Ok((Vec::new(), Vec::new()));
    };
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    for id in runs.names().await? {
        let Some(dir) = runs.dir(&id, false).await? else {
            continue;
        };
        match read_manifest(&dir).await {
            Ok(m) => out.push(m.info(run_bytes(&dir).await)),
            Err(e) => problems.push(format!("{id}: {e}")),
        }
    }
    out.sort_by(|a, b| b.saved_ms.total_cmp(&a.saved_ms));
    Ok((out, problems))
}

async fn read_manifest(dir: &Dir) -> Result<Manifest, SaveError> {
    let bytes = dir.read(MANIFEST).await?.ok_or(ManifestError::Missing)?;
    let m: Manifest = serde_json::from_slice(&bytes).map_err(ManifestError::Unparsable)?;
    if m.version != VERSION {
        return Err(ManifestError::Version {
            found: m.version,
            expected: VERSION,
        }
        .into());
    }
    Ok(m)
}

/// A saved run's manifest alone (its names and loss history).
pub async fn manifest(id: &str) -> Result<Manifest, SaveError> {
    read_manifest(&run_dir(id).await?).await
}

async fn run_dir(id: &str) -> Result<Dir, SaveError> {
    runs_dir(false)
        .await?
        .ok_or(SaveError::NoSavedRuns)?
        .dir(id, false)
        .await?
        .ok_or_else(|| SaveError::NoSuchRun { id: id.to_string() })
}

/// A saved run: its manifest, the current slot's checkpoint, and its stored
/// corpus when it has one.
pub async fn load(id: &str) -> Result<(Manifest, Vec<u8>, Option<Vec<u8>>), SaveError> {
    let dir = run_dir(id).await?;
    let m = read_manifest(&dir).await?;
    let ckpt = dir
        .read(&slot_file(&m.slot))
        .await?
        .ok_or_else(|| SaveError::MissingSlot {
            slot: m.slot.clone(),
        })?;
    let corpus = match &m.corpus {
        CorpusRef::Bundled => None,
        CorpusRef::Stored { .. } => Some(dir.read(CORPUS).await?.ok_or(SaveError::MissingCorpus)?),
    };
    Ok((m, ckpt, corpus))
}

pub async fn delete(id: &str) -> Result<(), SaveError> {
    if let Some(runs) = runs_dir(false).await? {
        runs.remove(id).await?;
    }
    Ok(())
}
