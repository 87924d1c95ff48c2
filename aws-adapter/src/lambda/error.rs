//! What an invocation returns when it does not succeed.
//!
//! Every failure is returned to Lambda as an error (a silent success would
//! hide it). EventBridge Scheduler and Rules invoke the function
//! asynchronously, and Lambda's asynchronous queue retries every function
//! error the same way (twice by default), whatever the error says: a
//! function cannot mark one error as final. So the error type carries the
//! distinction instead: `errorType` is `cronslot.InvalidEvent` or
//! `cronslot.Misconfigured` for errors that no retry can fix, with
//! `retryable: false` in the log line and an `InvalidEvent` metric. Those
//! are refused before the store is touched, so Lambda's re-deliveries of
//! them cost a millisecond and no request, and after the last one the event
//! lands in the function's on-failure destination with that `errorType`.

use std::fmt;

#[cfg(feature = "lambda")]
use lambda_runtime::Diagnostic;

/// The kinds of failure, each with its Lambda `errorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Malformed payload, unknown job, bad time, a time that is not a slot.
    InvalidEvent,
    /// The deployment contradicts the manifest (a lease shorter than the
    /// function's timeout, no time left to run).
    Misconfigured,
    /// The run failed and its retry is scheduled.
    RunFailed,
    /// The run failed for good: the slot is a dead letter.
    SlotDead,
    /// A re-delivery came before the retry's backoff ended.
    RetryLater,
    /// The slot cannot start yet (not due, or another run holds the job).
    NotReady,
    /// The run's lease was superseded: its outcome was not recorded.
    LeaseLost,
    /// The store could not be reached (throttled, timed out).
    StoreUnavailable,
    /// The store refused or returned something unreadable.
    StoreFailed,
}

impl ErrorKind {
    /// The `errorType` Lambda reports (and the on-failure destination keeps).
    pub fn error_type(self) -> &'static str {
        match self {
            ErrorKind::InvalidEvent => "cronslot.InvalidEvent",
            ErrorKind::Misconfigured => "cronslot.Misconfigured",
            ErrorKind::RunFailed => "cronslot.RunFailed",
            ErrorKind::SlotDead => "cronslot.SlotDead",
            ErrorKind::RetryLater => "cronslot.RetryLater",
            ErrorKind::NotReady => "cronslot.NotReady",
            ErrorKind::LeaseLost => "cronslot.LeaseLost",
            ErrorKind::StoreUnavailable => "cronslot.StoreUnavailable",
            ErrorKind::StoreFailed => "cronslot.StoreFailed",
        }
    }

    /// Can a re-delivery of the same event do better?
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::RunFailed
                | ErrorKind::RetryLater
                | ErrorKind::NotReady
                | ErrorKind::StoreUnavailable
        )
    }

    /// Which kind names an invocation whose jobs failed in several ways:
    /// the one an operator must act on first.
    fn rank(self) -> u8 {
        match self {
            ErrorKind::InvalidEvent => 0,
            ErrorKind::Misconfigured => 1,
            ErrorKind::StoreFailed => 2,
            ErrorKind::SlotDead => 3,
            ErrorKind::LeaseLost => 4,
            ErrorKind::RunFailed => 5,
            ErrorKind::StoreUnavailable => 6,
            ErrorKind::RetryLater => 7,
            ErrorKind::NotReady => 8,
        }
    }
}

/// A failed invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerError {
    /// What kind of failure, which names its `errorType`.
    pub kind: ErrorKind,
    /// What happened, for a person.
    pub message: String,
}

impl HandlerError {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> HandlerError {
        HandlerError {
            kind,
            message: message.into(),
        }
    }

    /// One error for several (a tick whose jobs failed in different ways):
    /// the most pressing kind, every message.
    pub fn combine(errors: Vec<HandlerError>) -> Option<HandlerError> {
        let kind = errors.iter().map(|e| e.kind).min_by_key(|k| k.rank())?;
        if errors.len() == 1 {
            return errors.into_iter().next();
        }
        let message = errors
            .iter()
            .map(|e| format!("[{}] {}", e.kind.error_type(), e.message))
            .collect::<Vec<_>>()
            .join("; ");
        Some(HandlerError::new(kind, message))
    }
}

impl fmt::Display for HandlerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hint = match self.kind {
            ErrorKind::InvalidEvent | ErrorKind::Misconfigured => {
                " (not retryable: a re-delivery of this event fails the same way)"
            }
            _ => "",
        };
        write!(f, "{}{hint}", self.message)
    }
}

impl std::error::Error for HandlerError {}

#[cfg(feature = "lambda")]
impl From<HandlerError> for Diagnostic {
    fn from(e: HandlerError) -> Diagnostic {
        Diagnostic {
            error_type: e.kind.error_type().to_string(),
            error_message: e.to_string(),
        }
    }
}
