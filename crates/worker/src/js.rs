//! What wgpu cannot see on the web, read from the JS objects directly:
//! `GPUAdapterInfo`, the `subgroups` feature, `navigator.ml`, the clock.

use crate::error::{FetchError, FetchFailure};
use js_sys::{Function, Promise, Reflect};
use tinygpt_protocol::AdapterDesc;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;

fn get(obj: &JsValue, key: &str) -> Option<JsValue> {
    Reflect::get(obj, &JsValue::from_str(key))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

fn get_string(obj: &JsValue, key: &str) -> String {
    get(obj, key)
        .and_then(|v| v.as_string())
        .unwrap_or_default()
}

/// `self.navigator`, in a worker.
fn navigator() -> Option<JsValue> {
    get(&js_sys::global(), "navigator")
}

/// `navigator.gpu` exists in this worker.
pub fn has_webgpu() -> bool {
    navigator().and_then(|n| get(&n, "gpu")).is_some()
}

/// What WebNN offers here: `None` without `navigator.ml`; else whether
/// `navigator.ml.createContext()` gave a context (`Ok`) or why not (`Err`,
/// the rejection's name and message). The API can exist with no backend
/// behind it (Chromium on Linux: `NotSupportedError`).
pub async fn webnn_context() -> Option<Result<(), String>> {
    let ml = navigator().and_then(|n| get(&n, "ml"))?;
    let Some(create) = get(&ml, "createContext").and_then(|f| f.dyn_into::<Function>().ok()) else {
        return Some(Err("navigator.ml has no createContext()".into()));
    };
    let promise = match create.call0(&ml) {
        Ok(p) => Promise::resolve(&p),
        Err(e) => return Some(Err(js_error_text(&e))),
    };
    Some(match JsFuture::from(promise).await {
        Ok(_) => Ok(()),
        Err(e) => Err(js_error_text(&e)),
    })
}

/// `Name: message` of a thrown JS error (or its string form).
fn js_error_text(e: &JsValue) -> String {
    match (get_string(e, "name"), get_string(e, "message")) {
        (n, m) if !n.is_empty() || !m.is_empty() => format!("{n}: {m}"),
        _ => e.as_string().unwrap_or_else(|| format!("{e:?}")),
    }
}

/// `navigator.userAgent` (empty when absent).
pub fn user_agent() -> String {
    navigator()
        .and_then(|n| get(&n, "userAgent"))
        .and_then(|s| s.as_string())
        .unwrap_or_default()
}

/// A parameter of the worker's own URL (the page passes its query on):
/// the test-only switches `fault=` and `test_hooks=1`.
pub fn query_param(name: &str) -> Option<String> {
    let search = get(&js_sys::global(), "location")
        .and_then(|l| get(&l, "search"))
        .and_then(|s| s.as_string())?;
    let prefix = format!("{name}=");
    search
        .trim_start_matches('?')
        .split('&')
        .find_map(|kv| kv.strip_prefix(prefix.as_str()).map(str::to_string))
}

/// The test-only `fault=` switch (`?fault=f16acc`).
pub fn fault_switch() -> Option<String> {
    query_param("fault")
}

/// Milliseconds from `performance.now()`.
pub fn now_ms() -> f64 {
    get(&js_sys::global(), "performance")
        .and_then(|p| {
            let now = get(&p, "now")?.dyn_into::<Function>().ok()?;
            now.call0(&p).ok()?.as_f64()
        })
        .unwrap_or_else(js_sys::Date::now)
}

/// What the JS adapter says about itself: `GPUAdapterInfo`, and whether it
/// offers `subgroups` and is a CPU implementation (`isFallbackAdapter`, or
/// a name [`AdapterDesc::names_cpu_implementation`] knows). `None` when no
/// adapter is granted.
pub async fn adapter_info() -> Result<Option<JsAdapter>, JsValue> {
    let Some(gpu) = navigator().and_then(|n| get(&n, "gpu")) else {
        return Ok(None);
    };
    let request = get(&gpu, "requestAdapter")
        .ok_or("navigator.gpu.requestAdapter is missing")?
        .dyn_into::<Function>()?;
    let adapter = JsFuture::from(request.call0(&gpu)?.dyn_into::<Promise>()?).await?;
    if adapter.is_null() || adapter.is_undefined() {
        return Ok(None);
    }
    let desc = match get(&adapter, "info") {
        Some(info) => AdapterDesc {
            vendor: get_string(&info, "vendor"),
            architecture: get_string(&info, "architecture"),
            device: get_string(&info, "device"),
            description: get_string(&info, "description"),
            backend: "browser_webgpu".into(),
        },
        None => AdapterDesc {
            backend: "browser_webgpu".into(),
            ..Default::default()
        },
    };
    let subgroups = get(&adapter, "features")
        .and_then(|f| {
            let has = get(&f, "has")?.dyn_into::<Function>().ok()?;
            has.call1(&f, &JsValue::from_str("subgroups"))
                .ok()?
                .as_bool()
        })
        .unwrap_or(false);
    let fallback = get(&adapter, "info")
        .and_then(|info| get(&info, "isFallbackAdapter"))
        .and_then(|f| f.as_bool())
        .unwrap_or(false);
    Ok(Some(JsAdapter {
        cpu_device: fallback || desc.names_cpu_implementation(),
        desc,
        subgroups,
    }))
}

/// [`adapter_info`]'s answer.
pub struct JsAdapter {
    pub desc: AdapterDesc,
    pub subgroups: bool,
    pub cpu_device: bool,
}

/// Where the worker finds the product corpus (copied into `dist/` by Trunk).
pub const BUNDLED_CORPUS: &str = "./shakespeare.txt";

/// Where the worker finds the bundled model (copied into `dist/` by Trunk).
pub const BUNDLED_MODEL: &str = "./shakespeare.safetensors";

/// The bundled model's card (`models/shakespeare.card.json`).
pub const BUNDLED_CARD: &str = "./shakespeare.card.json";

/// The model gallery's index (`models/gallery.json`); card and weight
/// files sit beside it.
pub const GALLERY_INDEX: &str = "./gallery.json";

/// `fetch(url)` → bytes, with the HTTP status in the error.
pub async fn fetch_bytes(url: &str) -> Result<Vec<u8>, FetchError> {
    let fail = |failure: FetchFailure| FetchError {
        url: url.to_string(),
        failure,
    };
    let api = |what| fail(FetchFailure::Api(what));
    let global = js_sys::global();
    let fetch = get(&global, "fetch")
        .ok_or_else(|| api("fetch is missing"))?
        .dyn_into::<Function>()
        .map_err(|_| api("fetch is not a function"))?;
    let promise = fetch
        .call1(&global, &JsValue::from_str(url))
        .map_err(|e| fail(FetchFailure::Threw(format!("{e:?}"))))?
        .dyn_into::<Promise>()
        .map_err(|_| api("fetch returned no promise"))?;
    let resp = JsFuture::from(promise)
        .await
        .map_err(|e| fail(FetchFailure::Rejected(format!("{e:?}"))))?;
    let ok = get(&resp, "ok").and_then(|v| v.as_bool()).unwrap_or(false);
    if !ok {
        let status = get(&resp, "status").and_then(|v| v.as_f64()).unwrap_or(0.0);
        return Err(fail(FetchFailure::Status(status)));
    }
    let array_buffer = get(&resp, "arrayBuffer")
        .ok_or_else(|| api("no arrayBuffer"))?
        .dyn_into::<Function>()
        .map_err(|_| api("arrayBuffer is not a function"))?;
    let buf_promise = array_buffer
        .call0(&resp)
        .map_err(|e| fail(FetchFailure::Threw(format!("{e:?}"))))?
        .dyn_into::<Promise>()
        .map_err(|_| api("arrayBuffer returned no promise"))?;
    let buf = JsFuture::from(buf_promise)
        .await
        .map_err(|e| fail(FetchFailure::Read(format!("{e:?}"))))?;
    Ok(js_sys::Uint8Array::new(&buf).to_vec())
}

/// Yields to the event loop (a `setTimeout(0)`), so queued messages run.
pub async fn yield_now() {
    let promise = Promise::new(&mut |resolve, _reject| {
        let global = js_sys::global();
        if let Some(set_timeout) =
            get(&global, "setTimeout").and_then(|f| f.dyn_into::<Function>().ok())
        {
            let _ = set_timeout.call2(&global, &resolve, &JsValue::from_f64(0.0));
        } else {
            let _ = resolve.call0(&JsValue::NULL);
        }
    });
    let _ = JsFuture::from(promise).await;
}

/// Local time as `HH:MM`, for default run names.
pub fn clock_label() -> String {
    let d = js_sys::Date::new_0();
    format!("{:02}:{:02}", d.get_hours(), d.get_minutes())
}
