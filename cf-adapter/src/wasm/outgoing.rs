//! Outgoing requests built on `web_sys::RequestInit` directly.
//!
//! `worker::RequestInit` converts its `cf` properties (image resizing and
//! the rest) through serde at every request, which links their serializers
//! into the module whether or not a request sets any; cronslot's requests
//! set none, so building the JavaScript `RequestInit` here keeps that code
//! out of the Worker (docs/performance.md, the Worker's size).

use worker::web_sys;
use worker::{Headers, Request};

/// A request to `url` with `method`, `headers` and `body`; redirects are
/// returned, not followed, when `manual_redirect` is set.
pub fn request(
    url: &str,
    method: &str,
    headers: Option<&Headers>,
    body: Option<&str>,
    manual_redirect: bool,
) -> worker::Result<Request> {
    let init = web_sys::RequestInit::new();
    init.set_method(method);
    if let Some(headers) = headers {
        init.set_headers(&headers.0);
    }
    if let Some(body) = body {
        init.set_body(&worker::wasm_bindgen::JsValue::from_str(body));
    }
    if manual_redirect {
        init.set_redirect(web_sys::RequestRedirect::Manual);
    }
    let request = web_sys::Request::new_with_str_and_init(url, &init).map_err(|e| {
        worker::Error::JsError(
            e.as_string()
                .unwrap_or_else(|| "invalid URL or options for Request".to_string()),
        )
    })?;
    Ok(Request::from(request))
}
