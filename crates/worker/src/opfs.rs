//! The Origin Private File System, from the worker: directories, whole-file
//! reads, and atomic whole-file writes.
//!
//! A write goes through `createWritable()`, which writes a swap file and
//! replaces the target only on `close()`: a crash before `close()` leaves the
//! previous contents intact. The save layout (`saves.rs`) adds a second
//! guarantee on top: checkpoints alternate between two slots and the small
//! manifest naming the current slot is written last.

use js_sys::{Array, Function, Object, Promise, Reflect, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

/// An OPFS directory handle.
#[derive(Clone)]
pub struct Dir(JsValue);

fn get(obj: &JsValue, key: &str) -> Result<JsValue, String> {
    Reflect::get(obj, &JsValue::from_str(key)).map_err(describe)
}

/// `obj.method(...args)`, awaited when it returns a promise.
async fn call(obj: &JsValue, method: &str, args: &[JsValue]) -> Result<JsValue, String> {
    let f = get(obj, method)?
        .dyn_into::<Function>()
        .map_err(|_| format!("{method} is not available in this browser"))?;
    let out = f
        .apply(obj, &args.iter().collect::<Array>())
        .map_err(describe)?;
    match out.dyn_into::<Promise>() {
        Ok(p) => JsFuture::from(p).await.map_err(describe),
        Err(v) => Ok(v),
    }
}

/// A JS error as one line (`NotFoundError: …`).
pub fn describe(e: JsValue) -> String {
    let name = Reflect::get(&e, &"name".into())
        .ok()
        .and_then(|v| v.as_string());
    let message = Reflect::get(&e, &"message".into())
        .ok()
        .and_then(|v| v.as_string());
    match (name, message) {
        (Some(n), Some(m)) => format!("{n}: {m}"),
        _ => e.as_string().unwrap_or_else(|| format!("{e:?}")),
    }
}

fn is_not_found(e: &str) -> bool {
    e.starts_with("NotFoundError")
}

fn create_opt(create: bool) -> JsValue {
    let o = Object::new();
    let _ = Reflect::set(&o, &"create".into(), &JsValue::from_bool(create));
    o.into()
}

/// `navigator.storage`, when the browser has it.
fn storage() -> Result<JsValue, String> {
    let nav = get(&js_sys::global(), "navigator")?;
    let storage = get(&nav, "storage")?;
    if storage.is_undefined() {
        return Err("navigator.storage is missing (private storage needs a secure context)".into());
    }
    Ok(storage)
}

/// The origin's private root directory.
pub async fn root() -> Result<Dir, String> {
    Ok(Dir(call(&storage()?, "getDirectory", &[]).await?))
}

/// `(usage, quota)` from `navigator.storage.estimate()`.
pub async fn estimate() -> Result<(u64, u64), String> {
    let e = call(&storage()?, "estimate", &[]).await?;
    let num = |k: &str| get(&e, k).ok().and_then(|v| v.as_f64()).unwrap_or(0.0) as u64;
    Ok((num("usage"), num("quota")))
}

/// Asks the browser not to evict this origin's storage; whether it agreed.
/// (From a worker only `persisted()` may be answerable: `persist()` is a
/// window API in some browsers; the UI requests it from the page too.)
pub async fn persist() -> Result<bool, String> {
    let s = storage()?;
    if call(&s, "persisted", &[]).await?.as_bool() == Some(true) {
        return Ok(true);
    }
    Ok(call(&s, "persist", &[]).await?.as_bool().unwrap_or(false))
}

/// Whether the browser already agreed not to evict this origin's storage.
pub async fn persisted() -> bool {
    match storage() {
        Ok(s) => call(&s, "persisted", &[])
            .await
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false),
        Err(_) => false,
    }
}

impl Dir {
    /// The sub-directory `name`, created when `create`; `None` when absent.
    pub async fn dir(&self, name: &str, create: bool) -> Result<Option<Dir>, String> {
        match call(
            &self.0,
            "getDirectoryHandle",
            &[name.into(), create_opt(create)],
        )
        .await
        {
            Ok(h) => Ok(Some(Dir(h))),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The whole file `name`, `None` when absent.
    pub async fn read(&self, name: &str) -> Result<Option<Vec<u8>>, String> {
        let handle = match call(&self.0, "getFileHandle", &[name.into(), create_opt(false)]).await {
            Ok(h) => h,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let file = call(&handle, "getFile", &[]).await?;
        let buf = call(&file, "arrayBuffer", &[]).await?;
        Ok(Some(Uint8Array::new(&buf).to_vec()))
    }

    /// Size of the file `name` in bytes (0 when absent).
    pub async fn size(&self, name: &str) -> Result<u64, String> {
        let handle = match call(&self.0, "getFileHandle", &[name.into(), create_opt(false)]).await {
            Ok(h) => h,
            Err(e) if is_not_found(&e) => return Ok(0),
            Err(e) => return Err(e),
        };
        let file = call(&handle, "getFile", &[]).await?;
        Ok(get(&file, "size")?.as_f64().unwrap_or(0.0) as u64)
    }

    /// Replaces the file `name` with `bytes`, atomically (see the module doc).
    /// With `crash_halfway` (a test hook) it writes half and returns without
    /// committing, as a crash would.
    pub async fn write(&self, name: &str, bytes: &[u8], crash_halfway: bool) -> Result<(), String> {
        let handle = call(&self.0, "getFileHandle", &[name.into(), create_opt(true)]).await?;
        let stream = call(&handle, "createWritable", &[]).await?;
        let data = if crash_halfway {
            &bytes[..bytes.len() / 2]
        } else {
            bytes
        };
        // Chunks of 8 MiB keep the copy into JS memory small.
        for chunk in data.chunks(8 << 20) {
            call(&stream, "write", &[Uint8Array::from(chunk).into()]).await?;
        }
        if crash_halfway {
            return Ok(());
        }
        call(&stream, "close", &[]).await?;
        Ok(())
    }

    /// Removes the entry `name` (recursively); absent is fine.
    pub async fn remove(&self, name: &str) -> Result<(), String> {
        let opts = Object::new();
        let _ = Reflect::set(&opts, &"recursive".into(), &JsValue::TRUE);
        match call(&self.0, "removeEntry", &[name.into(), opts.into()]).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Names of the entries, via the async iterator `keys()`.
    pub async fn names(&self) -> Result<Vec<String>, String> {
        let iter = call(&self.0, "keys", &[]).await?;
        let mut out = Vec::new();
        loop {
            let next = call(&iter, "next", &[]).await?;
            if get(&next, "done")?.as_bool() == Some(true) {
                return Ok(out);
            }
            if let Some(name) = get(&next, "value")?.as_string() {
                out.push(name);
            }
        }
    }
}
