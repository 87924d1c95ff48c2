//! `http` jobs: one request per attempt, with rules written once.
//!
//! The runtime plans the request (method, URL, the manifest's headers and
//! cronslot's), bounds it by the job's timeout, and judges the answer; the
//! platform only sends it ([`Platform::send_http`](crate::Platform::send_http)):
//! reqwest in the local runner, the AWS SDK's connector in Lambda, `fetch`
//! in a Worker.
//!
//! 2xx succeeds; 408, 429 and 5xx are transient; every other status is
//! permanent, redirects included: they are not followed, because a
//! scheduled POST that a 302 turns into a GET, or that carries its
//! idempotency key to another host, is not what the job said. A failed
//! connection and a timeout are transient. The request carries
//! `Idempotency-Key: <slot id>`, `Cronslot-Fence`, `Cronslot-Attempt` and
//! `Cronslot-Scheduled-At`, so the receiver can drop a retry of work it
//! already did and refuse a superseded run, and `User-Agent:
//! cronslot/<version>`. An empty POST, PUT or PATCH says `Content-Length:
//! 0`, or some servers wait for a body. A slot of a dynamic job's schedule
//! also carries `Cronslot-Key: <key>` and a JSON body with the payload of
//! the schedule's version ([`schedule_body`]), whatever the method.

use std::time::Duration;

use cronslot_core::coord::{SlotId, format_instant};
use cronslot_core::manifest::{Action, HttpMethod, JobSpec, format_duration};
use jiff::Timestamp;

use crate::{JobError, RunContext};

/// Bytes of a failed response's body kept for the error message: its
/// start, where servers put the reason.
pub const BODY_EXCERPT: usize = 300;

/// The `User-Agent` of every request.
pub const USER_AGENT: &str = concat!("cronslot/", env!("CARGO_PKG_VERSION"));

/// The headers cronslot sets, which the manifest's cannot override.
pub const CRONSLOT_HEADERS: [&str; 6] = [
    "Idempotency-Key",
    "Cronslot-Fence",
    "Cronslot-Attempt",
    "Cronslot-Scheduled-At",
    "User-Agent",
    "Cronslot-Key",
];

/// One request of one run, ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// The method.
    pub method: HttpMethod,
    /// The URL, as the manifest gives it.
    pub url: String,
    /// The manifest's headers, then cronslot's (which win on a clash: names
    /// compare case-insensitively).
    pub headers: Vec<(String, String)>,
    /// Bounds the whole exchange, response body included.
    pub timeout: Duration,
    /// The body: for a run of a dynamic job's schedule, the JSON document
    /// [`schedule_body`] (`Content-Type: application/json`); none for a
    /// job the manifest schedules.
    pub body: Option<String>,
}

/// What came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The start of the body of a failed response (at most
    /// [`BODY_EXCERPT`] bytes are used); empty for a success.
    pub body: Vec<u8>,
}

/// Why no response came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpFailure {
    /// The request itself is unusable (a bad URL or header value): the
    /// next attempt would fail the same way.
    pub permanent: bool,
    /// What the platform's client said, causes included.
    pub message: String,
}

/// The request of `spec`'s `http` action for the run in `ctx`; `None` if
/// the job is not an http job.
pub fn plan(spec: &JobSpec, ctx: &RunContext) -> Option<HttpRequest> {
    #[cfg_attr(not(feature = "schedules"), allow(unused_mut))]
    let mut request = plan_for(
        spec,
        &ctx.idempotency_key(),
        ctx.fence(),
        ctx.attempt(),
        ctx.scheduled_at(),
    )?;
    // Only where schedules are served (the Worker serves none yet).
    #[cfg(feature = "schedules")]
    if let Some(key) = ctx.key() {
        let body = schedule_body(ctx.job(), key, &ctx.idempotency_key(), ctx.payload());
        with_schedule(&mut request, key, body);
    }
    Some(request)
}

/// The body of a request for a slot of a dynamic job's schedule:
/// `{"job": …, "key": …, "slot": …, "payload": …}`, the payload as the
/// schedule's write sent it (`null` without one).
pub fn schedule_body(job: &str, key: &str, slot: &str, payload: Option<&str>) -> String {
    let text = |s: &str| serde_json::Value::from(s).to_string();
    format!(
        "{{\"job\":{},\"key\":{},\"slot\":{},\"payload\":{}}}",
        text(job),
        text(key),
        text(slot),
        payload.unwrap_or("null")
    )
}

/// Adds the schedule's key header and JSON body to a planned request,
/// replacing a manifest's `Content-Type` and `Content-Length`: the body is
/// cronslot's.
#[cfg(feature = "schedules")]
fn with_schedule(request: &mut HttpRequest, key: &str, body: String) {
    request.headers.retain(|(name, _)| {
        !["content-type", "content-length", "cronslot-key"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
    });
    request
        .headers
        .push(("Cronslot-Key".to_string(), key.to_string()));
    request
        .headers
        .push(("Content-Type".to_string(), "application/json".to_string()));
    request
        .headers
        .push(("Content-Length".to_string(), body.len().to_string()));
    request.body = Some(body);
}

/// The request a run of `spec` would send, with a sample identity (fence
/// 1, attempt 1, a slot at the Unix epoch): for checking at start-up that
/// a platform's client can build it (URL, header names and values).
pub fn plan_sample(spec: &JobSpec) -> Option<HttpRequest> {
    let slot = Timestamp::UNIX_EPOCH;
    let key = SlotId::new(spec, slot).to_string();
    plan_for(spec, &key, 1, 1, slot)
}

fn plan_for(
    spec: &JobSpec,
    idempotency_key: &str,
    fence: u64,
    attempt: u32,
    scheduled_at: Timestamp,
) -> Option<HttpRequest> {
    let Action::Http {
        url,
        method,
        headers,
        timeout,
    } = &spec.action
    else {
        return None;
    };
    let ours = [
        ("Idempotency-Key", idempotency_key.to_string()),
        ("Cronslot-Fence", fence.to_string()),
        ("Cronslot-Attempt", attempt.to_string()),
        ("Cronslot-Scheduled-At", format_instant(scheduled_at)),
        ("User-Agent", USER_AGENT.to_string()),
    ];
    let mut all: Vec<(String, String)> = headers
        .iter()
        .filter(|(name, _)| !ours.iter().any(|(o, _)| o.eq_ignore_ascii_case(name)))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    all.extend(ours.into_iter().map(|(n, v)| (n.to_string(), v)));
    let has_length = all
        .iter()
        .any(|(n, _)| n.eq_ignore_ascii_case("content-length"));
    if matches!(
        method,
        HttpMethod::Post | HttpMethod::Put | HttpMethod::Patch
    ) && !has_length
    {
        all.push(("Content-Length".to_string(), "0".to_string()));
    }
    Some(HttpRequest {
        method: *method,
        url: url.clone(),
        headers: all,
        timeout: *timeout,
        body: None,
    })
}

/// The run's result from what the platform's client brought back: `Ok`
/// carries a short result for the job's history (`HTTP 204`).
pub fn judge(
    request: &HttpRequest,
    answer: Result<HttpResponse, HttpFailure>,
) -> Result<String, JobError> {
    let url = &request.url;
    let response = match answer {
        Ok(response) => response,
        Err(failure) => {
            let message = format!("request to {url} failed: {}", failure.message);
            return Err(if failure.permanent {
                JobError::permanent(message)
            } else {
                JobError::transient(message)
            });
        }
    };
    let status = response.status;
    if (200..300).contains(&status) {
        return Ok(format!("HTTP {status}"));
    }
    let body = body_excerpt(&response.body);
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
}

/// The error of a request (`method url`) that outlived its `timeout`.
pub fn timed_out(method: HttpMethod, url: &str, timeout: Duration) -> JobError {
    JobError::transient(format!(
        "{method} {url} timed out after {}",
        format_duration(timeout)
    ))
}

/// 408 Request Timeout, 429 Too Many Requests and every 5xx say "not now".
pub fn transient_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

/// The first [`BODY_EXCERPT`] bytes of a body as one line of text (cut on
/// a character boundary, runs of white space folded).
pub fn body_excerpt(body: &[u8]) -> String {
    let mut end = body.len().min(BODY_EXCERPT);
    // Cut before a partial UTF-8 sequence rather than show a replacement
    // character for it.
    while end > 0 && end < body.len() && (body[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    String::from_utf8_lossy(&body[..end])
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> HttpRequest {
        HttpRequest {
            method: HttpMethod::Post,
            url: "https://example.com/hook".into(),
            headers: Vec::new(),
            timeout: Duration::from_secs(30),
            body: None,
        }
    }

    fn status(code: u16, body: &str) -> Result<String, JobError> {
        judge(
            &request(),
            Ok(HttpResponse {
                status: code,
                body: body.as_bytes().to_vec(),
            }),
        )
    }

    #[test]
    fn statuses_are_classified() {
        assert_eq!(status(200, "").unwrap(), "HTTP 200");
        assert_eq!(status(204, "").unwrap(), "HTTP 204");
        for transient in [408, 429, 500, 502, 503, 599] {
            let e = status(transient, "busy").unwrap_err();
            assert!(!e.is_permanent(), "{transient}");
            assert_eq!(
                e.message(),
                format!("HTTP {transient} from https://example.com/hook: busy")
            );
        }
        for permanent in [301, 302, 400, 401, 404, 410, 422] {
            assert!(
                status(permanent, "").unwrap_err().is_permanent(),
                "{permanent}"
            );
        }
        assert!(
            status(302, "")
                .unwrap_err()
                .message()
                .contains("redirects are not followed")
        );
    }

    #[test]
    fn the_body_excerpt_is_the_start_cut_on_a_character_boundary() {
        let body = format!("{}{}", "é".repeat(200), "TAIL");
        let e = status(500, &body).unwrap_err();
        let excerpt = e.message().split(": ").nth(1).unwrap().to_string();
        assert!(excerpt.len() <= BODY_EXCERPT, "{}", excerpt.len());
        assert!(excerpt.chars().all(|c| c == 'é'), "{excerpt}");
        assert_eq!(
            body_excerpt(b"  line one\n\n line   two "),
            "line one line two"
        );
    }

    #[test]
    fn failures_to_send_keep_their_class() {
        let transient = judge(
            &request(),
            Err(HttpFailure {
                permanent: false,
                message: "connection refused".into(),
            }),
        )
        .unwrap_err();
        assert!(!transient.is_permanent());
        assert_eq!(
            transient.message(),
            "request to https://example.com/hook failed: connection refused"
        );
        let permanent = judge(
            &request(),
            Err(HttpFailure {
                permanent: true,
                message: "bad header".into(),
            }),
        )
        .unwrap_err();
        assert!(permanent.is_permanent());
        assert_eq!(
            timed_out(
                HttpMethod::Post,
                "https://example.com/hook",
                Duration::from_secs(30)
            )
            .message(),
            "POST https://example.com/hook timed out after 30s"
        );
    }
}
