//! `http` jobs: one request per attempt.
//!
//! 2xx succeeds; 408, 429 and 5xx are transient; every other status is
//! permanent, redirects included: they are not followed, because a
//! scheduled POST that a 302 turns into a GET, or that carries its
//! idempotency key to another host, is not what the job said. Connection
//! errors are transient. The request carries `Idempotency-Key: <slot id>`
//! and `Cronslot-Fence: <fence>`, so the receiver can drop a retry of work
//! it already did and refuse a superseded run.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::error::Error as _;

use cronslot_core::coord::format_instant;
use cronslot_core::manifest::HttpMethod;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Client, Method, StatusCode};

use crate::jobs::{JobCtx, JobError};

/// Bytes of a failed response's body kept for the error message.
const BODY_TAIL: usize = 300;

/// One worker's HTTP client, built on first use (a worker with no http job
/// never loads the TLS roots) and then reused for its connection pool.
#[derive(Default)]
pub struct HttpClient {
    client: OnceCell<Result<Client, String>>,
}

impl HttpClient {
    pub fn new() -> HttpClient {
        HttpClient::default()
    }

    fn client(&self) -> Result<&Client, JobError> {
        self.client
            .get_or_init(|| {
                Client::builder()
                    .user_agent(concat!("cronslot/", env!("CARGO_PKG_VERSION")))
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("the HTTP client could not start: {}", chain(&e)))
            })
            .as_ref()
            .map_err(|e| JobError::permanent(e.clone()))
    }

    pub(crate) async fn send(
        &self,
        url: &str,
        method: HttpMethod,
        headers: &BTreeMap<String, String>,
        ctx: &JobCtx,
    ) -> Result<Option<String>, JobError> {
        let client = self.client()?;
        let method = Method::from_bytes(method.as_str().as_bytes())
            .map_err(|e| JobError::permanent(format!("method {method}: {e}")))?;
        let headers = request_headers(headers, ctx)?;
        let response = client
            .request(method, url)
            .headers(headers)
            .send()
            .await
            .map_err(|e| classify(url, &e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(Some(format!("HTTP {}", status.as_u16())));
        }
        let body = body_tail(response).await;
        let message = if body.is_empty() {
            format!("HTTP {status} from {url}")
        } else {
            format!("HTTP {status} from {url}: {body}")
        };
        if transient_status(status) {
            Err(JobError::transient(message))
        } else if status.is_redirection() {
            Err(JobError::permanent(format!(
                "{message} (redirects are not followed: point the job at the final URL)"
            )))
        } else {
            Err(JobError::permanent(message))
        }
    }
}

/// 408 Request Timeout, 429 Too Many Requests and every 5xx say "not now".
fn transient_status(status: StatusCode) -> bool {
    status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
}

/// The manifest's headers, then cronslot's, which win on a clash.
fn request_headers(
    configured: &BTreeMap<String, String>,
    ctx: &JobCtx,
) -> Result<HeaderMap, JobError> {
    let mut headers = HeaderMap::new();
    for (name, value) in configured {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| JobError::permanent(format!("header name {name:?}: {e}")))?;
        let value = HeaderValue::from_str(value)
            .map_err(|e| JobError::permanent(format!("value of header {name:?}: {e}")))?;
        headers.insert(header, value);
    }
    let ours = [
        ("idempotency-key", ctx.idempotency_key()),
        ("cronslot-fence", ctx.fence().to_string()),
        ("cronslot-attempt", ctx.attempt().to_string()),
        ("cronslot-scheduled-at", format_instant(ctx.scheduled_at())),
    ];
    for (name, value) in ours {
        // Job names and RFC 3339 instants are ASCII, so these always parse;
        // a failure would be a bug worth a clear error, not a panic.
        let value = HeaderValue::from_str(&value)
            .map_err(|e| JobError::permanent(format!("header {name}: {e}")))?;
        headers.insert(HeaderName::from_static(name), value);
    }
    Ok(headers)
}

fn classify(url: &str, e: &reqwest::Error) -> JobError {
    let message = format!("request to {url} failed: {}", chain(e));
    if e.is_builder() {
        // The URL or a header is unusable: the next attempt is no better.
        JobError::permanent(message)
    } else {
        JobError::transient(message)
    }
}

/// An error and its causes, `a: b: c` (reqwest's own message is terse).
fn chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The start of a failed response's body (enough to see the server's
/// reason), read no further than needed.
async fn body_tail(mut response: reqwest::Response) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < BODY_TAIL {
        match response.chunk().await {
            Ok(Some(chunk)) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    bytes.truncate(BODY_TAIL);
    String::from_utf8_lossy(&bytes).trim().to_string()
}
