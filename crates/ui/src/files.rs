//! Files in and out of the page: reading a chosen file into bytes, and
//! handing bytes to the browser as a download.

use leptos::prelude::set_timeout;
use std::time::Duration;
use wasm_bindgen::prelude::*;
use web_sys::{Blob, BlobPropertyBag, File, FileReader, HtmlAnchorElement, HtmlInputElement, Url};

/// How long an object URL outlives its download click.
const REVOKE_AFTER: Duration = Duration::from_secs(30);

/// The first file chosen in an `<input type="file">`, if any.
pub fn chosen_file(input: &HtmlInputElement) -> Option<File> {
    input.files().and_then(|list| list.get(0))
}

/// Reads `file` and calls `done` once with its bytes or a description of
/// why it could not be read.
pub fn read_bytes(file: &File, done: impl FnOnce(Result<Vec<u8>, String>) + 'static) {
    let reader = match FileReader::new() {
        Ok(r) => r,
        Err(e) => return done(Err(format!("the browser cannot read files: {e:?}"))),
    };
    let name = file.name();
    let r = reader.clone();
    // `loadend` fires once, after success or failure alike.
    let on_end = Closure::once_into_js(move |_: web_sys::ProgressEvent| {
        if let Some(err) = r.error() {
            return done(Err(format!("reading {name} failed: {}", err.message())));
        }
        match r.result() {
            Ok(buf) => done(Ok(js_sys::Uint8Array::new(&buf).to_vec())),
            Err(e) => done(Err(format!("reading {name} failed: {e:?}"))),
        }
    });
    reader.set_onloadend(Some(on_end.unchecked_ref()));
    if let Err(e) = reader.read_as_array_buffer(file) {
        web_sys::console::error_2(&"reading a file could not start".into(), &e);
    }
}

/// Offers `bytes` to the user as a file called `name`.
pub fn download(name: &str, bytes: &[u8]) -> Result<(), String> {
    let fail = |what: &str, e: JsValue| format!("{what}: {e:?}");
    let parts = js_sys::Array::of1(&js_sys::Uint8Array::from(bytes));
    let options = BlobPropertyBag::new();
    options.set_type("application/octet-stream");
    let blob = Blob::new_with_u8_array_sequence_and_options(&parts, &options)
        .map_err(|e| fail("creating the file", e))?;
    let url = Url::create_object_url_with_blob(&blob).map_err(|e| fail("creating a link", e))?;
    let document = web_sys::window()
        .and_then(|w| w.document())
        .ok_or("there is no document")?;
    let anchor: HtmlAnchorElement = document
        .create_element("a")
        .map_err(|e| fail("creating a link", e))?
        .unchecked_into();
    anchor.set_href(&url);
    anchor.set_download(name);
    anchor.set_attribute("hidden", "").ok();
    let body = document.body().ok_or("there is no body")?;
    body.append_child(&anchor)
        .map_err(|e| fail("adding the link", e))?;
    anchor.click();
    anchor.remove();
    set_timeout(
        move || {
            Url::revoke_object_url(&url).ok();
        },
        REVOKE_AFTER,
    );
    Ok(())
}
