//! The device's precision log: every gate report this browser ran, kept in
//! the origin's private storage (OPFS) with the adapter, user agent and
//! build it ran on, so the page can show it and export it as one JSON file.
//! Nothing leaves the page.

use crate::error::StorageError;
use crate::js;
use crate::opfs;
use serde::{Deserialize, Serialize};
use tinygpt_protocol::{AdapterDesc, GateReport, PrecisionRecord, PRECISION_LOG_RECORDS};

const FILE: &str = "precision-log.json";
/// Where an unreadable log is moved, so that nothing is lost.
const UNREADABLE: &str = "precision-log.unreadable.json";
const VERSION: u32 = 1;

#[derive(Default, Serialize, Deserialize)]
struct LogFile {
    version: u32,
    records: Vec<PrecisionRecord>,
}

/// A record of `report`, run now on `adapter` at `occasion`.
pub fn record(report: &GateReport, adapter: &AdapterDesc, occasion: &str) -> PrecisionRecord {
    PrecisionRecord {
        at_ms: js_sys::Date::now(),
        adapter: adapter.clone(),
        user_agent: js::user_agent(),
        build: env!("CARGO_PKG_VERSION").into(),
        occasion: occasion.into(),
        report: report.clone(),
    }
}

/// Every record kept, oldest first (none when there is no log yet).
pub async fn read() -> Result<Vec<PrecisionRecord>, String> {
    let root = opfs::root().await.map_err(|e| e.to_string())?;
    let Some(bytes) = root.read(FILE).await.map_err(|e| e.to_string())? else {
        return Ok(Vec::new());
    };
    match serde_json::from_slice::<LogFile>(&bytes) {
        Ok(f) if f.version == VERSION => Ok(f.records),
        Ok(f) => Err(format!(
            "the precision log has version {}, this build reads {VERSION}",
            f.version
        )),
        Err(e) => Err(format!("the precision log is not valid JSON ({e})")),
    }
}

/// Appends `new` records, dropping the oldest past
/// [`PRECISION_LOG_RECORDS`]. A log this build cannot read is moved aside
/// to `precision-log.unreadable.json` first.
pub async fn append(new: Vec<PrecisionRecord>) -> Result<(), String> {
    let root = opfs::root().await.map_err(|e| e.to_string())?;
    let mut records = match read().await {
        Ok(r) => r,
        Err(_) => {
            let old = root.read(FILE).await.map_err(|e| e.to_string())?;
            if let Some(old) = old {
                root.write(UNREADABLE, &old, false)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Vec::new()
        }
    };
    records.extend(new);
    let drop = records.len().saturating_sub(PRECISION_LOG_RECORDS);
    records.drain(..drop);
    write(&root, records).await.map_err(|e| e.to_string())
}

async fn write(root: &opfs::Dir, records: Vec<PrecisionRecord>) -> Result<(), StorageError> {
    let file = LogFile {
        version: VERSION,
        records,
    };
    let bytes = serde_json::to_vec(&file).expect("plain data serializes");
    root.write(FILE, &bytes, false).await
}

/// Empties the log.
pub async fn clear() -> Result<(), String> {
    let root = opfs::root().await.map_err(|e| e.to_string())?;
    root.remove(FILE).await.map_err(|e| e.to_string())
}

/// Keeps the gates of `reports` that ran (run at `occasion` on `adapter`;
/// a lever this device lacks ran none: its reason is on the lever line,
/// not in the log); a storage failure is logged, never fatal: the gate's
/// verdict stands without its record.
pub async fn keep(reports: &[GateReport], adapter: &AdapterDesc, occasion: &str) {
    let records: Vec<_> = reports
        .iter()
        .filter(|r| r.detected)
        .map(|r| record(r, adapter, occasion))
        .collect();
    if records.is_empty() {
        return;
    }
    if let Err(e) = append(records).await {
        crate::outbox::log(
            tinygpt_protocol::LogLevel::Warn,
            format!("[precision] the gate report was not kept in the precision log: {e}"),
        );
    }
}
