//! How a job's own code reports a failed run, the same for every adapter.

use std::fmt;

use super::context::EffectError;
use super::coordinator::CoordError;

/// Why a run failed: transient failures are retried on the same slot (with
/// backoff, up to `max_attempts`), permanent ones make the slot a dead
/// letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    /// Whether retrying is pointless: the slot then becomes a dead letter
    /// at once instead of being retried.
    pub permanent: bool,
    /// What went wrong: the error the run reports.
    pub message: String,
}

impl JobError {
    /// A failure worth retrying (a timeout, a busy upstream).
    pub fn transient(message: impl Into<String>) -> JobError {
        JobError {
            permanent: false,
            message: message.into(),
        }
    }

    /// A failure that retrying will not fix (bad input, a refused
    /// request).
    pub fn permanent(message: impl Into<String>) -> JobError {
        JobError {
            permanent: true,
            message: message.into(),
        }
    }
}

impl fmt::Display for JobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for JobError {}

impl From<EffectError> for JobError {
    /// An effect that could not run now (held by another run, a store
    /// hiccup, the effect's own failure) is worth another attempt; one too
    /// large to record will be too large next time as well.
    fn from(e: EffectError) -> Self {
        match e {
            EffectError::ResultTooLarge { .. } => JobError::permanent(e.to_string()),
            EffectError::Coordinator(ref c) if !c.is_transient() => {
                JobError::permanent(e.to_string())
            }
            _ => JobError::transient(e.to_string()),
        }
    }
}

impl From<CoordError> for JobError {
    fn from(e: CoordError) -> Self {
        if e.is_transient() {
            JobError::transient(e.to_string())
        } else {
            JobError::permanent(e.to_string())
        }
    }
}

/// What a job function returns.
pub type JobResult = Result<(), JobError>;
