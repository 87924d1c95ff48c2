//! How a job's own code reports a failed run, the same for every adapter.

use std::fmt;

use super::context::EffectError;
use super::coordinator::CoordError;

/// Why a run failed: transient failures are retried on the same slot (with
/// backoff, up to `max_attempts`), permanent ones make the slot a dead
/// letter.
///
/// Build one with [`JobError::transient`] or [`JobError::permanent`], or
/// with `?` from an [`EffectError`] or a [`CoordError`] (which choose by
/// their kind).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    permanent: bool,
    message: String,
}

impl JobError {
    /// A failure worth another attempt of the same slot (a timeout, a
    /// busy destination), retried with backoff up to `max_attempts`.
    pub fn transient(message: impl Into<String>) -> JobError {
        JobError {
            permanent: false,
            message: message.into(),
        }
    }

    /// A failure no retry can fix (bad input, a refused request): the slot
    /// becomes a dead letter at once.
    pub fn permanent(message: impl Into<String>) -> JobError {
        JobError {
            permanent: true,
            message: message.into(),
        }
    }

    /// Whether the slot is dead at once rather than retried.
    pub fn is_permanent(&self) -> bool {
        self.permanent
    }

    /// What went wrong, as recorded with the attempt (and in the dead
    /// letter).
    pub fn message(&self) -> &str {
        &self.message
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
