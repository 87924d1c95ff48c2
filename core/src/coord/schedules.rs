//! Writing and reading a dynamic job's schedules through a store
//! ([`Schedules`]): the store's conditional write around the pure
//! decisions of [`decide::put_schedule`] and [`decide::delete_schedule`].
//!
//! Each write costs one read and at most one write (none for an unchanged
//! spec): the schedule, its version and the slots it decides about are one
//! record. A write that loses the compare-and-set to another writer reads
//! again and decides again, so concurrent upserts of one spec end at one
//! version, whoever wins.
// The futures run on one thread, as every coordinator's (coordinator.rs).
#![allow(async_fn_in_trait)]

use std::fmt;

use jiff::Timestamp;

use super::coordinator::{CasCoordinator, CoordError, MAX_CAS_ATTEMPTS};
use super::decide::{self, Precondition, ScheduleRefusal, ScheduleWrite};
use super::state::{JobState, ScheduleData};

use super::store::{PutResult, StateStore, Versioned};
use crate::manifest::{JobSpec, JobTemplate};
use crate::schedules::{ScheduleKey, ScheduleSpec, record_name};

/// Why a schedule operation did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum ScheduleError {
    /// The write was refused (a precondition, no such schedule, a spec this
    /// machine cannot run); nothing was written.
    Refused(ScheduleRefusal),
    /// The store failed, or other writers kept winning.
    Coord(CoordError),
}

impl fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduleError::Refused(ScheduleRefusal::VersionMismatch { current: Some(v) }) => {
                write!(
                    f,
                    "the schedule is at version {v}, not the one the write names"
                )
            }
            ScheduleError::Refused(ScheduleRefusal::VersionMismatch { current: None }) => {
                f.write_str("the write names a version, and the schedule does not exist")
            }
            ScheduleError::Refused(ScheduleRefusal::Exists { version }) => {
                write!(f, "the schedule exists (version {version})")
            }
            ScheduleError::Refused(ScheduleRefusal::NotFound) => f.write_str("no such schedule"),
            ScheduleError::Refused(ScheduleRefusal::Spec(problem)) => write!(f, "{problem}"),
            ScheduleError::Coord(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for ScheduleError {}

impl From<CoordError> for ScheduleError {
    fn from(e: CoordError) -> ScheduleError {
        ScheduleError::Coord(e)
    }
}

impl From<super::store::StoreError> for ScheduleError {
    fn from(e: super::store::StoreError) -> ScheduleError {
        ScheduleError::Coord(CoordError::Store(e))
    }
}

/// A schedule as read: its data and the record it lives in.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleRecord {
    /// The version, the spec (`None`: deleted), the pinned payloads.
    pub data: ScheduleData,
    /// The whole record (leases, counters, history, dead letters).
    pub record: JobState,
}

/// The schedules of dynamic jobs, written and read in a store.
pub trait Schedules {
    /// Writes `spec` as the schedule `key` of `template` at `now` (the
    /// store's clock where it has one), as [`decide::put_schedule`] decides.
    async fn put_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        spec: ScheduleSpec,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError>;

    /// Deletes the schedule, leaving a tombstone ([`decide::delete_schedule`]).
    async fn delete_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError>;

    /// The spec the schedule's slots run with now
    /// ([`ScheduleData::job_spec`]), read for the claim that follows: that
    /// claim of the schedule starts from this read, so a tick's run of a
    /// schedule costs one read and two writes, as a static job's does.
    /// `None`: no such schedule, or a tombstone.
    async fn schedule_for_claim(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
    ) -> Result<Option<JobSpec>, ScheduleError>;

    /// The schedule's record as stored (a tombstone included), or `None`.
    async fn schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
    ) -> Result<Option<ScheduleRecord>, ScheduleError>;
}

impl<S: StateStore> CasCoordinator<S> {
    /// Reads the record, lets `decide` make the next one, and writes it
    /// conditionally, reading and deciding again when another writer won.
    async fn write_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
        mut decide: impl FnMut(
            Option<JobState>,
            Timestamp,
            &mut dyn super::rng::RandomSource,
        ) -> Result<(ScheduleWrite, Option<JobState>), ScheduleRefusal>,
    ) -> Result<ScheduleWrite, ScheduleError> {
        let name = record_name(&template.name, key);
        let (mut current, now) = self.store().get_judged(&name, now).await?;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let expected = current.as_ref().map(|v| v.version);
            let mut rng = self.random();
            let (write, next) = decide(current.as_ref().map(|v| v.value.clone()), now, &mut rng)
                .map_err(ScheduleError::Refused)?;
            let Some(mut next) = next else {
                return Ok(write);
            };
            decide::fit_record(&mut next);
            let in_force = match &next.schedule {
                Some(data) => data
                    .spec()
                    .map_err(|p| ScheduleError::Refused(ScheduleRefusal::Spec(p)))?,
                None => None,
            };
            next.wake_at = match in_force {
                Some(spec) => {
                    let in_force = template
                        .for_schedule(key, &spec)
                        .map_err(|p| ScheduleError::Refused(ScheduleRefusal::Spec(p)))?;
                    decide::next_wake(&in_force, &next, now)
                }
                // A tombstone starts nothing: no tick needs to look at it.
                None => None,
            };
            match self.put_resolving_ambiguity(&name, &next, expected).await? {
                PutResult::Written(version) => {
                    self.remember(
                        &name,
                        Some(&Versioned {
                            value: next,
                            version,
                        }),
                    );
                    return Ok(write);
                }
                PutResult::Conflict(stored) => {
                    self.count_conflict();
                    current = stored.map(|b| *b);
                    self.remember(&name, current.as_ref());
                }
            }
        }
        Err(ScheduleError::Coord(CoordError::Contention {
            attempts: MAX_CAS_ATTEMPTS,
        }))
    }
}

impl<S: StateStore> Schedules for CasCoordinator<S> {
    async fn put_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        spec: ScheduleSpec,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError> {
        self.write_schedule(template, key, now, |current, now, rng| {
            decide::put_schedule(template, key, current, spec.clone(), precondition, now, rng)
        })
        .await
    }

    async fn delete_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError> {
        self.write_schedule(template, key, now, |current, now, rng| {
            decide::delete_schedule(template, key, current, precondition, now, rng)
                .map(|(write, state)| (write, Some(state)))
        })
        .await
    }

    async fn schedule_for_claim(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
    ) -> Result<Option<JobSpec>, ScheduleError> {
        let name = record_name(&template.name, key);
        let (read, judged) = self.store().get_judged(&name, now).await?;
        self.remember(&name, read.as_ref());
        let Some(data) = read.as_ref().and_then(|v| v.value.schedule.as_ref()) else {
            return Ok(None);
        };
        let spec = data
            .job_spec(template, key)
            .map_err(|p| ScheduleError::Refused(ScheduleRefusal::Spec(p)))?;
        if spec.is_some() {
            self.prime(&name, judged, now);
        }
        Ok(spec)
    }

    async fn schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
    ) -> Result<Option<ScheduleRecord>, ScheduleError> {
        let name = record_name(&template.name, key);
        let read = self.store().get(&name).await?;
        Ok(read.and_then(|v| {
            let data = v.value.schedule.clone()?;
            Some(ScheduleRecord {
                data,
                record: v.value,
            })
        }))
    }
}
