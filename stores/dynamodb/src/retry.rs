//! Sending one DynamoDB request with retries: which failures are worth
//! another attempt, which leave a write's outcome unknown, and how long to
//! keep trying.
//!
//! The store disables the SDK's own retries and does them here because only
//! the store knows what a request was: the SDK retries a timed-out write
//! like any other transient failure, and a second conditional write after a
//! first one that did land reports a conflict with our own record. Here a
//! write whose request may have reached DynamoDB is either reported as
//! [`StoreErrorKind::Ambiguous`] (the coordinator reads back) or, for a
//! write that is safe to repeat, retried.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_types::error::display::DisplayErrorContext;
use cronslot_core::coord::{RandomSource, SplitMix64, StoreError, StoreErrorKind};

/// The first backoff's upper bound; each retry doubles it.
const BASE_BACKOFF: Duration = Duration::from_millis(25);
/// The largest backoff between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// How long one read may go unanswered before it is sent again.
const READ_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(3);
/// Less time than this left before the limit is not worth another attempt
/// (a DynamoDB round trip is milliseconds; an answer must also come back).
const LAST_TRY_WINDOW: Duration = Duration::from_millis(50);

/// Error codes of DynamoDB that mean "not now": nothing was written, and
/// the same request may succeed later.
const TRANSIENT_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "Throttling",
    "RequestLimitExceeded",
    "TransactionConflictException",
    "TransactionInProgressException",
    "ReplicatedWriteConflictException",
    "LimitExceededException",
    "InternalServerError",
    "InternalFailure",
    "ServiceUnavailable",
];

/// What a request does, which decides what an unknown outcome means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Reading twice is harmless: every failure short of a refusal retries.
    Read,
    /// A conditional write: if it may have been applied, say so
    /// ([`StoreErrorKind::Ambiguous`]) rather than guess. A 5xx is still
    /// retried: DynamoDB may have applied it, but the retry's condition
    /// then fails with our own record as ALL_OLD, which the caller
    /// recognises as its write.
    Write,
    /// A write that may be repeated (a transaction with a client request
    /// token, which the caller also recognises by its ALL_OLD): retry even
    /// when the earlier attempt may have landed.
    IdempotentWrite,
}

/// Why a request did not succeed.
#[derive(Debug)]
pub(crate) enum CallError<E> {
    /// DynamoDB refused it for good (a failed condition, a validation
    /// error): the caller decides what it means. `message` describes it.
    /// `maybe_applied`: an earlier attempt of this same request may have
    /// been applied (it got a 5xx, or a timeout that was retried), so a
    /// failed condition may be failing on our own write; only then may the
    /// caller recognise its own record in ALL_OLD.
    Service {
        err: E,
        message: String,
        maybe_applied: bool,
    },
    /// Retries are exhausted, the outcome is unknown, or the request could
    /// not be made at all.
    Store(StoreError),
}

/// How to treat one failed attempt.
enum Class {
    /// Try again; `true` if this attempt may have been applied.
    Retry(bool),
    Service,
    Ambiguous,
    Fatal,
}

/// How long one operation (all its attempts) may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget {
    pub per_operation: Duration,
    /// An absolute limit, such as the Lambda's deadline minus a margin.
    pub deadline: Option<Instant>,
}

impl Budget {
    fn limit(&self, started: Instant) -> Instant {
        let own = started.checked_add(self.per_operation).unwrap_or(started);
        match self.deadline {
            Some(d) if d < own => d,
            _ => own,
        }
    }
}

/// Sends a request built by `send` until it succeeds, DynamoDB refuses it,
/// or the budget runs out. `retryable` marks service errors that are
/// transient for this operation beyond the common ones (a transaction
/// cancelled only by conflicts). `what` names the operation in messages,
/// with the table.
pub(crate) async fn call<T, E, F, Fut>(
    budget: Budget,
    what: &str,
    kind: Kind,
    retryable: fn(&E) -> bool,
    mut send: F,
) -> Result<T, CallError<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, SdkError<E, HttpResponse>>>,
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let started = Instant::now();
    let limit = budget.limit(started);
    let mut rng = SplitMix64::new(jitter_seed());
    let mut attempt: u32 = 0;
    let mut maybe_applied = false;
    loop {
        attempt += 1;
        let remaining = limit.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            // Nothing was sent in this attempt; earlier ones (if any)
            // failed in ways that were safe to retry.
            return Err(CallError::Store(StoreError::unavailable(format!(
                "{what}: no time left to send the request (budget {:?})",
                started.elapsed()
            ))));
        }
        // A read that hangs is abandoned and sent again while time
        // remains; a write gets all the time left, since abandoning it
        // leaves its outcome unknown.
        let window = match kind {
            Kind::Read => remaining.min(READ_ATTEMPT_TIMEOUT),
            Kind::Write | Kind::IdempotentWrite => remaining,
        };
        let last = match tokio::time::timeout(window, send()).await {
            Err(_) if window < remaining => {
                format!("{what}: no answer within {window:?} (attempt {attempt})")
            }
            Err(_) => {
                // Our own limit cut the attempt short: the request may be
                // with DynamoDB already.
                let message = format!(
                    "{what}: no answer within the remaining time ({remaining:?}) after {attempt} attempt(s)"
                );
                return Err(CallError::Store(match kind {
                    Kind::Read => StoreError::unavailable(message),
                    Kind::Write | Kind::IdempotentWrite => StoreError::new(
                        StoreErrorKind::Ambiguous,
                        format!("{message}; the write may or may not have been applied"),
                    ),
                }));
            }
            Ok(Ok(out)) => return Ok(out),
            Ok(Err(err)) => {
                let message = format!("{what}: {}", describe(&err));
                match classify(&err, kind, retryable) {
                    Class::Retry(applied) => {
                        maybe_applied |= applied;
                        message
                    }
                    Class::Service => {
                        return match err {
                            SdkError::ServiceError(ctx) => Err(CallError::Service {
                                err: ctx.into_err(),
                                message,
                                maybe_applied,
                            }),
                            _ => Err(CallError::Store(StoreError::other(message))),
                        };
                    }
                    Class::Ambiguous => {
                        return Err(CallError::Store(StoreError::new(
                            StoreErrorKind::Ambiguous,
                            format!(
                                "{message} (the request may have reached DynamoDB: the write may or may not have been applied)"
                            ),
                        )));
                    }
                    Class::Fatal => return Err(CallError::Store(StoreError::other(message))),
                }
            }
        };
        let remaining = limit.saturating_duration_since(Instant::now());
        let pause = match backoff(attempt, &mut rng) {
            pause if pause < remaining => pause,
            // The backoff would end past the limit: use half of what is
            // left for a last try, unless too little is left for an
            // answer to come back.
            _ if remaining > LAST_TRY_WINDOW => remaining / 2,
            _ => {
                return Err(CallError::Store(StoreError::unavailable(format!(
                    "still failing after {attempt} attempt(s) in {:?}, giving up at the time limit; last error: {last}",
                    started.elapsed()
                ))));
            }
        };
        tracing::debug!(attempt, ?pause, error = %last, "retrying a DynamoDB request");
        tokio::time::sleep(pause).await;
    }
}

/// A service error as its code, HTTP status, message and request id (the
/// SDK's own rendering repeats the raw response); anything else with its
/// whole chain of causes.
fn describe<E: ProvideErrorMetadata + std::error::Error + 'static>(
    err: &SdkError<E, HttpResponse>,
) -> String {
    match err {
        SdkError::ServiceError(ctx) => {
            let e = ctx.err();
            let mut text = format!(
                "{} (HTTP {})",
                e.code().unwrap_or("unknown error"),
                ctx.raw().status().as_u16()
            );
            match e.message() {
                Some(m) => {
                    text.push_str(": ");
                    text.push_str(m);
                }
                None => {
                    text.push_str(": ");
                    text.push_str(&DisplayErrorContext(e).to_string());
                }
            }
            if let Some(id) = e.meta().extra("aws_request_id") {
                text.push_str(&format!(" [request id {id}]"));
            }
            text
        }
        other => DisplayErrorContext(other).to_string(),
    }
}

/// Full jitter: a uniform pause in `0..=min(MAX, BASE * 2^(attempt-1))`.
fn backoff(attempt: u32, rng: &mut SplitMix64) -> Duration {
    let cap = BASE_BACKOFF
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    let cap_ms = u64::try_from(cap.as_millis()).unwrap_or(u64::MAX);
    Duration::from_millis(rng.below_or_equal(cap_ms))
}

/// Distinct seeds for concurrent operations, so their retries spread out.
fn jitter_seed() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// A fresh random token (32 hex digits) for `ClientRequestToken`.
pub(crate) fn request_token() -> String {
    let mut rng = SplitMix64::new(jitter_seed());
    format!("{:016x}{:016x}", rng.next_u64(), rng.next_u64())
}

fn classify<E: ProvideErrorMetadata>(
    err: &SdkError<E, HttpResponse>,
    kind: Kind,
    retryable: fn(&E) -> bool,
) -> Class {
    let maybe_sent = match kind {
        Kind::Read | Kind::IdempotentWrite => Class::Retry(true),
        Kind::Write => Class::Ambiguous,
    };
    match err {
        SdkError::ServiceError(ctx) => {
            let e = ctx.err();
            let code = e.code().unwrap_or_default();
            // DynamoDB documents that a 500 may come after the request
            // was carried out; a transaction still in progress (same
            // token) may yet commit. Throttling and conflicts are refusals.
            if ctx.raw().status().is_server_error()
                || matches!(
                    code,
                    "InternalServerError" | "InternalFailure" | "ServiceUnavailable"
                )
                || code == "TransactionInProgressException"
            {
                Class::Retry(true)
            } else if TRANSIENT_CODES.contains(&code) || retryable(e) {
                Class::Retry(false)
            } else {
                Class::Service
            }
        }
        SdkError::ConstructionFailure(_) => Class::Fatal,
        SdkError::DispatchFailure(failure) => match failure.as_connector_error() {
            Some(c) if c.is_user() => Class::Fatal,
            Some(c) if never_sent(c) => Class::Retry(false),
            _ => maybe_sent,
        },
        // A timeout or an unreadable response: the request left, so a
        // write may have been applied.
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => maybe_sent,
        _ => maybe_sent,
    }
}

/// A failure to connect (refused, DNS, connect timeout): the request never
/// left, so even a write is safe to retry. Anything after the connection
/// was made may have delivered the request.
fn never_sent(err: &ConnectorError) -> bool {
    let text = DisplayErrorContext(err).to_string();
    if text.contains("client error (Connect)")
        || text.contains("HTTP connect")
        || text.contains("dns error")
    {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::AddrNotAvailable
            ) {
                return true;
            }
        }
        source = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_capped() {
        let mut rng = SplitMix64::new(1);
        for attempt in 1..40 {
            let cap = BASE_BACKOFF
                .saturating_mul(1u32 << (attempt - 1).min(16))
                .min(MAX_BACKOFF);
            for _ in 0..50 {
                assert!(backoff(attempt, &mut rng) <= cap);
            }
        }
    }

    #[test]
    fn the_earlier_limit_wins() {
        let now = Instant::now();
        let budget = Budget {
            per_operation: Duration::from_secs(10),
            deadline: Some(now + Duration::from_secs(1)),
        };
        assert_eq!(budget.limit(now), now + Duration::from_secs(1));
        let budget = Budget {
            per_operation: Duration::from_secs(1),
            deadline: Some(now + Duration::from_secs(10)),
        };
        assert_eq!(budget.limit(now), now + Duration::from_secs(1));
    }

    #[test]
    fn tokens_are_distinct_hex() {
        let a = request_token();
        let b = request_token();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
