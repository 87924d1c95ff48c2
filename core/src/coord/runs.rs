//! Enqueueing keyed runs and reading their status through a store
//! ([`Runs`]): the store's conditional write around the pure decisions of
//! [`decide::enqueue_run`] and [`decide::run_view`].
//!
//! An enqueue costs one read and at most one write: none when the key
//! already names the same run. The write is the store's compare-and-set
//! on a record that does not exist yet (or on the version read), so of
//! any number of concurrent enqueues of one key exactly one creates the
//! run; the others read what won and answer it (or refuse a different
//! request).
// The futures run on one thread, as every coordinator's (coordinator.rs).
#![allow(async_fn_in_trait)]

use std::fmt;

use jiff::Timestamp;

use super::coordinator::{CasCoordinator, CoordError};
use super::decide::{self, Enqueued, RunRefusal};
use super::store::{StateStore, StoreError};
use crate::manifest::JobTemplate;
use crate::schedules::{RunRequest, RunView, ScheduleKey, SpecProblem, record_name};

/// Why a keyed run's operation did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// The enqueue was refused; nothing was written.
    Refused(RunRefusal),
    /// The store failed, or other writers kept winning.
    Coord(CoordError),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Refused(RunRefusal::Differs { fields, existing }) => write!(
                f,
                "the key names the run {} enqueued with another {}",
                existing.run,
                fields.join(" and ")
            ),
            RunError::Refused(RunRefusal::Schedule { version }) => write!(
                f,
                "the key names a schedule of the job (version {version}), not a keyed run"
            ),
            RunError::Refused(RunRefusal::Spec(problem)) => write!(f, "{problem}"),
            RunError::Coord(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<CoordError> for RunError {
    fn from(e: CoordError) -> RunError {
        RunError::Coord(e)
    }
}

impl From<StoreError> for RunError {
    fn from(e: StoreError) -> RunError {
        RunError::Coord(CoordError::Store(e))
    }
}

/// Keyed runs of dynamic jobs, enqueued and read in a store.
pub trait Runs {
    /// Enqueues `request` as the run `key` of `template` at `now` (the
    /// store's clock where it has one), as [`decide::enqueue_run`] decides.
    async fn enqueue_run(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        request: &RunRequest,
        now: Timestamp,
    ) -> Result<Enqueued, RunError>;

    /// The run `key` of `template` as a client polls it, in one read;
    /// `None` when the key names no run (never enqueued, or forgotten: its
    /// retention after the run ended has passed by `now`).
    async fn run_status(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
    ) -> Result<Option<RunView>, RunError>;
}

impl<S: StateStore> Runs for CasCoordinator<S> {
    async fn enqueue_run(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        request: &RunRequest,
        now: Timestamp,
    ) -> Result<Enqueued, RunError> {
        self.write_keyed(
            template,
            key,
            now,
            |current, now, _rng| {
                decide::enqueue_run(template, key, current, request, now).map_err(RunError::Refused)
            },
            spec_refused,
        )
        .await
    }

    async fn run_status(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
    ) -> Result<Option<RunView>, RunError> {
        let name = record_name(&template.name, key);
        let (read, judged) = self.store().get_judged(&name, now).await?;
        let Some(stored) = read else {
            return Ok(None);
        };
        let state = stored.value;
        if state.schedule.as_ref().is_none_or(|d| d.run.is_none()) {
            // A schedule of the job, or a tombstone: no run.
            return Ok(None);
        }
        if decide::forget_at(&state).is_some_and(|t| t <= judged) {
            return Ok(None);
        }
        decide::run_view(&state).map(Some).map_err(spec_refused)
    }
}

fn spec_refused(problem: SpecProblem) -> RunError {
    RunError::Refused(RunRefusal::Spec(problem))
}
