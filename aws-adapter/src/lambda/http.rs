//! `http` jobs in the Lambda: one request per attempt, sent with the
//! connector the AWS SDK itself uses (hyper 1, rustls with aws-lc, the
//! system's root certificates), so webhooks add no second HTTP or TLS stack
//! to the bootstrap.
//!
//! 2xx succeeds; 408, 429 and 5xx are transient; every other status is
//! permanent, redirects included (they are not followed: a scheduled POST
//! that a 302 turns into a GET, or that carries its idempotency key to
//! another host, is not what the job said). Connection errors and timeouts
//! are transient. The request carries `Idempotency-Key: <slot id>`,
//! `Cronslot-Fence`, `Cronslot-Attempt` and `Cronslot-Scheduled-At`, like the
//! local runner's.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::time::Duration;

use aws_smithy_async::rt::sleep::{SharedAsyncSleep, TokioSleep};
use aws_smithy_runtime_api::client::http::{
    HttpConnector, HttpConnectorSettings, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::body::SdkBody;
use cronslot_core::coord::format_instant;
use cronslot_core::manifest::HttpMethod;
use http_body_util::BodyExt;
use jiff::Timestamp;

use super::jobs::JobError;

/// Bytes of a failed response's body kept for the error message.
const BODY_TAIL: usize = 300;

/// The longest a connection attempt may take (the whole request is bounded
/// by the job's timeout as well).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One request of one run.
#[derive(Debug, Clone)]
pub struct HttpCall<'a> {
    pub url: &'a str,
    pub method: HttpMethod,
    pub headers: &'a BTreeMap<String, String>,
    pub idempotency_key: String,
    pub fence: u64,
    pub attempt: u32,
    pub scheduled_at: Timestamp,
    /// Bounds the whole request, response body included.
    pub timeout: Duration,
}

/// The HTTP client of the function: built on first use (a function whose
/// jobs never call out never loads the root certificates), then reused for
/// its connection pool.
#[derive(Default)]
pub struct HttpRunner {
    connector: OnceCell<Option<SharedHttpConnector>>,
}

impl HttpRunner {
    pub fn new() -> HttpRunner {
        HttpRunner::default()
    }

    fn connector(&self) -> Result<&SharedHttpConnector, JobError> {
        self.connector
            .get_or_init(|| {
                let settings = HttpConnectorSettings::builder()
                    .connect_timeout(CONNECT_TIMEOUT)
                    .build();
                let sleep = SharedAsyncSleep::new(TokioSleep::new());
                aws_smithy_http_client::default_connector(&settings, Some(sleep))
            })
            .as_ref()
            .ok_or_else(|| {
                JobError::permanent("this build has no HTTPS connector (aws-smithy-http-client without rustls-aws-lc)")
            })
    }

    /// Sends the request; `Ok` carries a short result (`HTTP 204`).
    pub async fn send(&self, call: &HttpCall<'_>) -> Result<String, JobError> {
        let request = build_request(call).map_err(JobError::permanent)?;
        let connector = self.connector()?;
        let url = call.url;
        let exchange = async {
            let response = connector
                .call(request)
                .await
                .map_err(|e| classify(url, &e))?;
            let status = response.status().as_u16();
            if (200..300).contains(&status) {
                return Ok(format!("HTTP {status}"));
            }
            let body = body_tail(response.into_body()).await;
            let message = if body.is_empty() {
                format!("HTTP {status} from {url}")
            } else {
                format!("HTTP {status} from {url}: {body}")
            };
            Err(if transient_status(status) {
                JobError::transient(message)
            } else if (300..400).contains(&status) {
                JobError::permanent(format!(
                    "{message} (redirects are not followed: point the job at the final URL)"
                ))
            } else {
                JobError::permanent(message)
            })
        };
        match tokio::time::timeout(call.timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(JobError::transient(format!(
                "{} {url} timed out after {}",
                call.method,
                cronslot_core::manifest::format_duration(call.timeout)
            ))),
        }
    }
}

/// Checks that a job's request can be built (URL, method, header names and
/// values), so that a bad one is refused when the function starts.
pub fn validate(
    url: &str,
    method: HttpMethod,
    headers: &BTreeMap<String, String>,
) -> Result<(), String> {
    let call = HttpCall {
        url,
        method,
        headers,
        idempotency_key: "job@2026-01-01T00:00:00Z".to_string(),
        fence: 1,
        attempt: 1,
        scheduled_at: Timestamp::UNIX_EPOCH,
        timeout: Duration::from_secs(1),
    };
    build_request(&call).map(|_| ())
}

/// The manifest's headers, then cronslot's, which win on a clash.
fn build_request(call: &HttpCall<'_>) -> Result<HttpRequest, String> {
    let mut request = HttpRequest::new(SdkBody::empty());
    request
        .set_method(call.method.as_str())
        .map_err(|e| format!("method {}: {}", call.method, chain(&e)))?;
    request
        .set_uri(call.url)
        .map_err(|e| format!("url {:?}: {}", call.url, chain(&e)))?;
    let headers = request.headers_mut();
    for (name, value) in call.headers {
        headers
            .try_insert(name.clone(), value.clone())
            .map_err(|e| format!("header {name:?}: {}", chain(&e)))?;
    }
    let ours = [
        ("idempotency-key", call.idempotency_key.clone()),
        ("cronslot-fence", call.fence.to_string()),
        ("cronslot-attempt", call.attempt.to_string()),
        ("cronslot-scheduled-at", format_instant(call.scheduled_at)),
        (
            "user-agent",
            concat!("cronslot/", env!("CARGO_PKG_VERSION")).to_string(),
        ),
    ];
    for (name, value) in ours {
        headers
            .try_insert(name, value)
            .map_err(|e| format!("header {name}: {}", chain(&e)))?;
    }
    if matches!(
        call.method,
        HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch
    ) {
        // An empty body still needs its length, or some servers wait for one.
        headers
            .try_insert("content-length", "0")
            .map_err(|e| format!("header content-length: {}", chain(&e)))?;
    }
    Ok(request)
}

/// 408 Request Timeout, 429 Too Many Requests and every 5xx say "not now".
fn transient_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

fn classify(url: &str, e: &ConnectorError) -> JobError {
    let message = format!("request to {url} failed: {}", chain(e));
    if e.is_user() {
        // The request itself is unusable: the next attempt is no better.
        JobError::permanent(message)
    } else {
        JobError::transient(message)
    }
}

/// An error and its causes, `a: b: c`.
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The start of a failed response's body (enough to see the server's
/// reason), read no further than needed.
async fn body_tail(mut body: SdkBody) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < BODY_TAIL {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    bytes.extend_from_slice(&data);
                }
            }
            _ => break,
        }
    }
    bytes.truncate(BODY_TAIL);
    String::from_utf8_lossy(&bytes).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        for s in [408, 429, 500, 503, 599] {
            assert!(transient_status(s), "{s}");
        }
        for s in [400, 401, 404, 409, 422, 301] {
            assert!(!transient_status(s), "{s}");
        }
    }

    #[test]
    fn bad_requests_are_refused_up_front() {
        let none = BTreeMap::new();
        assert!(validate("https://example.com/hook", HttpMethod::Post, &none).is_ok());
        assert!(validate("not a url", HttpMethod::Post, &none).is_err());
        let bad = BTreeMap::from([("bad header".to_string(), "v".to_string())]);
        let e = validate("https://example.com/", HttpMethod::Get, &bad).unwrap_err();
        assert!(e.contains("bad header"), "{e}");
    }
}
