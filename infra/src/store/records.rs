//! [`Records`], and its implementation for the stores under a
//! [`CasCoordinator`] (SQLite, DynamoDB); the Worker's admin store
//! implements it in [`super::admin`].

use cronslot_core::coord::{CasCoordinator, CoordError, JobState, StateStore};

/// What the commands need from a store besides the
/// [`Coordinator`](cronslot_core::coord::Coordinator): the records as
/// stored (not brought up to now).
pub trait Records {
    /// The job's record as stored; `None` when it has none yet.
    async fn record(&self, job: &str) -> Result<Option<JobState>, CoordError>;
    /// Every job with a record, sorted.
    async fn recorded_jobs(&self) -> Result<Vec<String>, CoordError>;
}

impl<S: StateStore> Records for CasCoordinator<S> {
    async fn record(&self, job: &str) -> Result<Option<JobState>, CoordError> {
        Ok(self.store().get(job).await?.map(|v| v.value))
    }

    async fn recorded_jobs(&self) -> Result<Vec<String>, CoordError> {
        Ok(self.store().jobs().await?)
    }
}
