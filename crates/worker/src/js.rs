//! What wgpu cannot see on the web, read from the JS objects directly:
//! `GPUAdapterInfo`, the `subgroups` feature, `navigator.ml`, the clock.

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

/// `navigator.ml` exists (WebNN).
pub fn has_webnn() -> bool {
    navigator().and_then(|n| get(&n, "ml")).is_some()
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

/// What the JS adapter says about itself: `GPUAdapterInfo` and whether it
/// offers `subgroups`. `None` when no adapter is granted.
pub async fn adapter_info() -> Result<Option<(AdapterDesc, bool)>, JsValue> {
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
    Ok(Some((desc, subgroups)))
}
