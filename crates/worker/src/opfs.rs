//! The Origin Private File System, from the worker: directories, whole-file
//! reads, and atomic whole-file writes.
//!
//! A write goes through `createWritable()`, which writes a swap file and
//! replaces the target only on `close()`: a crash before `close()` leaves the
//! previous contents intact. The save layout (`saves.rs`) adds a second
//! guarantee on top: checkpoints alternate between two slots and the small
//! manifest naming the current slot is written last.
//!
//! Calls go through web-sys's typed bindings (none of them needs
//! `web_sys_unstable_apis`). The one `Reflect` left is [`require`]: a method
//! the browser lacks is looked up before it is called, so that it becomes an
//! error here rather than a `TypeError` thrown through wasm.

use crate::error::StorageError;
use js_sys::{IteratorNext, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    File, FileSystemDirectoryHandle, FileSystemFileHandle, FileSystemGetDirectoryOptions,
    FileSystemGetFileOptions, FileSystemRemoveOptions, FileSystemWritableFileStream,
    StorageEstimate, StorageManager, WorkerGlobalScope,
};

/// An OPFS directory handle.
#[derive(Clone)]
pub struct Dir(FileSystemDirectoryHandle);

/// Fails when `obj.method` is not a function in this browser.
///
/// The typed bindings call the method directly, and those without `catch`
/// (`getDirectory`, `keys`, `createWritable`) would throw a `TypeError`
/// through the wasm stack, unwinding it without running destructors. This
/// feature check is a plain property read, hence `Reflect`; web-sys has no
/// typed way to ask whether a method exists.
fn require(obj: &JsValue, method: &'static str) -> Result<(), StorageError> {
    let f = Reflect::get(obj, &JsValue::from_str(method)).map_err(StorageError::from_js)?;
    if f.is_function() {
        Ok(())
    } else {
        Err(StorageError::Unsupported { method })
    }
}

/// Awaits `promise`, its rejection as a [`StorageError`].
async fn settle(promise: Promise) -> Result<JsValue, StorageError> {
    JsFuture::from(promise).await.map_err(StorageError::from_js)
}

/// `navigator.storage`, when the browser has it.
fn storage() -> Result<StorageManager, StorageError> {
    let storage = js_sys::global()
        .unchecked_into::<WorkerGlobalScope>()
        .navigator()
        .storage();
    // The getter reads `undefined` where the attribute is not exposed.
    if storage.is_undefined() {
        return Err(StorageError::NoStorage);
    }
    Ok(storage)
}

/// The origin's private root directory.
pub async fn root() -> Result<Dir, StorageError> {
    let storage = storage()?;
    require(&storage, "getDirectory")?;
    let handle = settle(storage.get_directory()).await?;
    Ok(Dir(handle.unchecked_into()))
}

/// `(usage, quota)` from `navigator.storage.estimate()`.
pub async fn estimate() -> Result<(u64, u64), StorageError> {
    let storage = storage()?;
    require(&storage, "estimate")?;
    let e: StorageEstimate = settle(storage.estimate().map_err(StorageError::from_js)?)
        .await?
        .unchecked_into();
    let num = |v: Option<f64>| v.unwrap_or(0.0) as u64;
    Ok((num(e.get_usage()), num(e.get_quota())))
}

/// `storage.persisted()`.
async fn call_persisted(s: &StorageManager) -> Result<JsValue, StorageError> {
    require(s, "persisted")?;
    settle(s.persisted().map_err(StorageError::from_js)?).await
}

/// Asks the browser not to evict this origin's storage; whether it agreed.
/// (From a worker only `persisted()` may be answerable: `persist()` is a
/// window API in some browsers; the UI requests it from the page too.)
pub async fn persist() -> Result<bool, StorageError> {
    let s = storage()?;
    if call_persisted(&s).await?.as_bool() == Some(true) {
        return Ok(true);
    }
    require(&s, "persist")?;
    let granted = settle(s.persist().map_err(StorageError::from_js)?).await?;
    Ok(granted.as_bool().unwrap_or(false))
}

/// Whether the browser already agreed not to evict this origin's storage.
pub async fn persisted() -> bool {
    match storage() {
        Ok(s) => call_persisted(&s)
            .await
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        Err(_) => false,
    }
}

impl Dir {
    /// The sub-directory `name`, created when `create`; `None` when absent.
    pub async fn dir(&self, name: &str, create: bool) -> Result<Option<Dir>, StorageError> {
        let opts = FileSystemGetDirectoryOptions::new();
        opts.set_create(create);
        match settle(self.0.get_directory_handle_with_options(name, &opts)).await {
            Ok(h) => Ok(Some(Dir(h.unchecked_into()))),
            Err(StorageError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The handle of the file `name`, created when `create`.
    async fn file_handle(
        &self,
        name: &str,
        create: bool,
    ) -> Result<FileSystemFileHandle, StorageError> {
        let opts = FileSystemGetFileOptions::new();
        opts.set_create(create);
        let h = settle(self.0.get_file_handle_with_options(name, &opts)).await?;
        Ok(h.unchecked_into())
    }

    /// The file `name` as a `File` (a `Blob`), `None` when absent.
    async fn file(&self, name: &str) -> Result<Option<File>, StorageError> {
        let handle = match self.file_handle(name, false).await {
            Ok(h) => h,
            Err(StorageError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(settle(handle.get_file()).await?.unchecked_into()))
    }

    /// The whole file `name`, `None` when absent.
    pub async fn read(&self, name: &str) -> Result<Option<Vec<u8>>, StorageError> {
        let Some(file) = self.file(name).await? else {
            return Ok(None);
        };
        let buf = settle(file.array_buffer()).await?;
        Ok(Some(Uint8Array::new(&buf).to_vec()))
    }

    /// Size of the file `name` in bytes (0 when absent).
    pub async fn size(&self, name: &str) -> Result<u64, StorageError> {
        Ok(match self.file(name).await? {
            Some(file) => file.size() as u64,
            None => 0,
        })
    }

    /// Replaces the file `name` with `bytes`, atomically (see the module doc).
    /// With `crash_halfway` (a test hook) it writes half and returns without
    /// committing, as a crash would.
    pub async fn write(
        &self,
        name: &str,
        bytes: &[u8],
        crash_halfway: bool,
    ) -> Result<(), StorageError> {
        let handle = self.file_handle(name, true).await?;
        require(&handle, "createWritable")?;
        let stream: FileSystemWritableFileStream =
            settle(handle.create_writable()).await?.unchecked_into();
        let data = if crash_halfway {
            &bytes[..bytes.len() / 2]
        } else {
            bytes
        };
        // Chunks of 8 MiB keep the copy into JS memory small. A copy, not
        // `write_with_u8_array`: that passes a view of wasm memory, which
        // the browser may read after the call returns, and which a memory
        // growth while the write is pending would detach.
        for chunk in data.chunks(8 << 20) {
            let chunk = Uint8Array::from(chunk);
            let written = stream.write_with_js_u8_array(&chunk);
            settle(written.map_err(StorageError::from_js)?).await?;
        }
        if crash_halfway {
            return Ok(());
        }
        settle(stream.close()).await?;
        Ok(())
    }

    /// Removes the entry `name` (recursively); absent is fine.
    pub async fn remove(&self, name: &str) -> Result<(), StorageError> {
        let opts = FileSystemRemoveOptions::new();
        opts.set_recursive(true);
        match settle(self.0.remove_entry_with_options(name, &opts)).await {
            Ok(_) | Err(StorageError::NotFound(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Names of the entries, via the async iterator `keys()`.
    pub async fn names(&self) -> Result<Vec<String>, StorageError> {
        require(&self.0, "keys")?;
        let iter = self.0.keys();
        let mut out = Vec::new();
        loop {
            let next: IteratorNext = settle(iter.next().map_err(StorageError::from_js)?)
                .await?
                .unchecked_into();
            if next.done() {
                return Ok(out);
            }
            if let Some(name) = next.value().as_string() {
                out.push(name);
            }
        }
    }
}
