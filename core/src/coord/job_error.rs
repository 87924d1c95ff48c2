//! How a job's own code reports a failed run, the same for every adapter.

use std::fmt;

use super::context::EffectError;
use super::coordinator::CoordError;

/// Why a run failed: transient failures are retried on the same slot (with
/// backoff, up to `max_attempts`), permanent ones make the slot a dead
/// letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    pub permanent: bool,
    pub message: String,
}

impl JobError {
    pub fn transient(message: impl Into<String>) -> JobError {
        JobError {
            permanent: false,
            message: message.into(),
        }
    }

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
