//! Enqueueing keyed runs and reading their status through a store
//! ([`Runs`]): the store's conditional write around the pure decisions of
//! [`decide::enqueue_run`] and [`decide::run_view`].
//!
//! An enqueue costs one read and at most one write: none when the key
//! already names the same run. A listing ([`Runs::list_runs`]) pages
//! through the job's records in key order, as a schedules' listing does. The write is the store's compare-and-set
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
use super::schedules::job_records_page;
use super::state::JobState;
use super::store::{StateStore, StoreError};
use crate::manifest::JobTemplate;
use crate::schedules::{RunRequest, RunStatus, RunView, ScheduleKey, SpecProblem, record_name};

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

/// The most runs one page of a listing holds.
pub const MAX_RUN_PAGE: usize = 1000;

/// Which of a dynamic job's keyed runs a listing asks for, one page at a
/// time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunQuery {
    /// Only keys that start with this (`""`: every key).
    pub prefix: String,
    /// Only runs with this status.
    pub status: Option<RunStatus>,
    /// Only keys after this one: the cursor of the page before.
    pub after: Option<String>,
    /// At most this many runs (1 to [`MAX_RUN_PAGE`]; more is taken as
    /// the most).
    pub limit: usize,
}

impl Default for RunQuery {
    fn default() -> RunQuery {
        RunQuery {
            prefix: String::new(),
            status: None,
            after: None,
            limit: MAX_RUN_PAGE,
        }
    }
}

/// A page of a listing: keyed runs in key order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunPage {
    /// The runs of the page, as [`Runs::run_status`] answers each.
    pub runs: Vec<RunView>,
    /// Where the next page starts (its [`RunQuery::after`]); `None`: this
    /// is the last. A page may hold fewer than the limit, even none, and
    /// still have a cursor: the job's schedules share its keys' range, and
    /// a status filter that matches few runs reads a bounded part of the
    /// store per page.
    pub cursor: Option<String>,
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

    /// A page of the keyed runs of `template` that `query` asks for, in
    /// key order: the job's schedules, and runs whose key's retention has
    /// passed by `now` (the caller's clock: a listing reads no store
    /// clock), are left out. Each of the store's pages is one consistent
    /// read ([`StateStore::records_page`]), at most ten of them a call,
    /// and the cursor is the last key read: paging on meets every run
    /// that exists throughout exactly once, however many are enqueued
    /// meanwhile.
    async fn list_runs(
        &self,
        template: &JobTemplate,
        query: &RunQuery,
        now: Timestamp,
    ) -> Result<RunPage, RunError>;
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

    async fn list_runs(
        &self,
        template: &JobTemplate,
        query: &RunQuery,
        now: Timestamp,
    ) -> Result<RunPage, RunError> {
        let limit = query.limit.clamp(1, MAX_RUN_PAGE);
        // The status filter may skip many: then read the store's pages
        // whole.
        let filtered = query.status.is_some();
        let (runs, cursor) = job_records_page(
            self.store(),
            template,
            (&query.prefix, query.after.as_deref()),
            (limit, filtered.then_some(MAX_RUN_PAGE)),
            |name, _, record| listed(name, &record.value, query, now),
        )
        .await?;
        Ok(RunPage { runs, cursor })
    }
}

/// The record `name` as a listing of runs shows it: `None` for a
/// schedule, a tombstone, a run forgotten by `now`, or one the status
/// filter leaves out. A run whose record no longer reads is an error
/// naming the record.
fn listed(
    name: &str,
    state: &JobState,
    query: &RunQuery,
    now: Timestamp,
) -> Result<Option<RunView>, RunError> {
    if state.schedule.as_ref().is_none_or(|d| d.run.is_none()) {
        return Ok(None);
    }
    if decide::forget_at(state).is_some_and(|t| t <= now) {
        return Ok(None);
    }
    let view = decide::run_view(state).map_err(|p| {
        spec_refused(SpecProblem {
            field: p.field,
            message: format!(
                "the keyed run's record {name:?} does not read: {}",
                p.message
            ),
        })
    })?;
    Ok(query
        .status
        .is_none_or(|wanted| view.status == wanted)
        .then_some(view))
}

/// The cursor of a page whose last record read is `after`: its key.
fn spec_refused(problem: SpecProblem) -> RunError {
    RunError::Refused(RunRefusal::Spec(problem))
}
