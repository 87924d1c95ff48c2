//! The rules of `http` jobs, the same as the local adapter's: 2xx succeeds;
//! 408, 429 and 5xx are transient; every other status is permanent,
//! redirects included (they are not followed: a scheduled POST must not
//! become a GET, nor carry its idempotency key to another host); a failed
//! connection or a timeout is transient. The request carries
//! `Idempotency-Key: <slot id>`, `Cronslot-Fence`, `Cronslot-Attempt` and
//! `Cronslot-Scheduled-At`. The Worker's `fetch` sends it (see `wasm`).

use std::collections::BTreeMap;

use cronslot_core::coord::{JobError, format_instant};

use crate::run::RunContext;

/// Bytes of a failed response's body kept for the error message.
pub const BODY_TAIL: usize = 300;

/// The manifest's headers, then cronslot's, which win on a clash (names
/// compare case-insensitively, as HTTP does).
pub fn request_headers(
    configured: &BTreeMap<String, String>,
    ctx: &RunContext,
) -> Vec<(String, String)> {
    let ours = [
        ("Idempotency-Key", ctx.idempotency_key()),
        ("Cronslot-Fence", ctx.fence().to_string()),
        ("Cronslot-Attempt", ctx.attempt().to_string()),
        ("Cronslot-Scheduled-At", format_instant(ctx.scheduled_at())),
    ];
    let mut headers: Vec<(String, String)> = configured
        .iter()
        .filter(|(name, _)| !ours.iter().any(|(o, _)| o.eq_ignore_ascii_case(name)))
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    headers.extend(ours.into_iter().map(|(n, v)| (n.to_string(), v)));
    headers
}

/// The run's outcome from the response status (and the tail of its body,
/// for the error message).
pub fn outcome(url: &str, status: u16, body: &str) -> Result<(), JobError> {
    if (200..300).contains(&status) {
        return Ok(());
    }
    let tail = tail(body);
    let message = if tail.is_empty() {
        format!("{url} answered {status}")
    } else {
        format!("{url} answered {status}: {tail}")
    };
    if status == 408 || status == 429 || (500..600).contains(&status) {
        Err(JobError::transient(message))
    } else {
        Err(JobError::permanent(message))
    }
}

/// The last [`BODY_TAIL`] bytes, cut on a character boundary, one line.
fn tail(body: &str) -> String {
    let trimmed = body.trim();
    let mut start = trimmed.len().saturating_sub(BODY_TAIL);
    while !trimmed.is_char_boundary(start) {
        start += 1;
    }
    trimmed[start..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_are_classified_like_the_local_adapter() {
        assert!(outcome("u", 200, "").is_ok());
        assert!(outcome("u", 204, "").is_ok());
        for transient in [408, 429, 500, 502, 503, 599] {
            let e = outcome("u", transient, "busy").unwrap_err();
            assert!(!e.permanent, "{transient}");
            assert!(e.message.contains("busy"));
        }
        for permanent in [301, 302, 400, 401, 404, 410, 422] {
            assert!(
                outcome("u", permanent, "").unwrap_err().permanent,
                "{permanent}"
            );
        }
    }

    #[test]
    fn long_bodies_are_cut_on_a_character_boundary() {
        let body = "é".repeat(400);
        let e = outcome("u", 500, &body).unwrap_err();
        assert!(e.message.len() < 400, "{}", e.message);
    }
}
