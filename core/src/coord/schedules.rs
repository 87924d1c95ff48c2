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

use super::store::{PutResult, RecordWrite, StateStore, StoreError, StoreErrorKind, Versioned};
use crate::manifest::{JobSpec, JobTemplate};
use crate::schedules::{ScheduleKey, ScheduleSpec, SpecProblem, record_name};

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

/// The most schedules one page of a listing holds.
pub const MAX_SCHEDULE_PAGE: usize = 1000;

/// How many of the store's pages one listing call reads at most while
/// skipping schedules its filter leaves out (and tombstones): a rare label
/// answers a short page (or an empty one) with a cursor to go on from,
/// rather than one call reading the whole store.
pub(super) const MAX_STORE_PAGES: usize = 10;

/// Which of a dynamic job's schedules a listing asks for, one page at a
/// time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleQuery {
    /// Only keys that start with this (`""`: every key).
    pub prefix: String,
    /// Only schedules with a label that reads `NAME:VALUE` as this does:
    /// matched as the whole text, so a name or a value holding `:` needs
    /// no escape.
    pub label: Option<String>,
    /// Only keys after this one: the cursor of the page before.
    pub after: Option<String>,
    /// At most this many schedules (1 to [`MAX_SCHEDULE_PAGE`]; more is
    /// taken as the most).
    pub limit: usize,
}

impl Default for ScheduleQuery {
    fn default() -> ScheduleQuery {
        ScheduleQuery {
            prefix: String::new(),
            label: None,
            after: None,
            limit: MAX_SCHEDULE_PAGE,
        }
    }
}

/// A page of a listing: live schedules in key order.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulePage {
    /// The schedules of the page, each with its key.
    pub schedules: Vec<(ScheduleKey, ScheduleRecord)>,
    /// Where the next page starts (its [`ScheduleQuery::after`]); `None`:
    /// this is the last. A page may hold fewer than the limit, even none,
    /// and still have a cursor: a filter that matches few schedules reads
    /// a bounded part of the store per page.
    pub cursor: Option<String>,
}

/// The most schedules one bulk write carries
/// ([`Schedules::put_schedules`], the admin route, `cronslot schedule put
/// --from`): a bigger one is taken in parts of this many.
pub const MAX_SCHEDULE_BATCH: usize = 1000;

/// One schedule of a bulk write: its key, its spec and the condition the
/// write is made under, as one `PUT` would send them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulePut {
    /// The schedule's key.
    pub key: ScheduleKey,
    /// Its whole spec (a full replace).
    pub spec: ScheduleSpec,
    /// `If-Match` or `If-None-Match: *`, or none.
    pub precondition: Precondition,
}

/// The schedules of dynamic jobs, written and read in a store.
pub trait Schedules {
    /// Writes many schedules of `template` at `now`, each as
    /// [`put_schedule`](Schedules::put_schedule) would, with its own answer
    /// in the order given: one refused or failed leaves the others as
    /// they are. A key given twice is written twice, in order. The
    /// default writes them one by one; a [`CasCoordinator`] reads every
    /// record of a part ([`MAX_SCHEDULE_BATCH`]) at once and writes the
    /// changed ones at once ([`StateStore::get_many_judged`],
    /// [`StateStore::put_many`]), so a thousand schedules cost the store
    /// what one costs where it takes many in a request.
    async fn put_schedules(
        &self,
        template: &JobTemplate,
        puts: Vec<SchedulePut>,
        now: Timestamp,
    ) -> Vec<Result<ScheduleWrite, ScheduleError>> {
        let mut answers = Vec::with_capacity(puts.len());
        for put in puts {
            answers.push(
                self.put_schedule(template, &put.key, put.spec, put.precondition, now)
                    .await,
            );
        }
        answers
    }

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

    /// A page of the live schedules of `template` (no tombstones) that
    /// `query` asks for, in key order. Each of the store's pages is one
    /// consistent read ([`StateStore::records_page`]), and the cursor is
    /// the last key read: paging on meets every schedule that exists
    /// throughout exactly once, however many are written meanwhile.
    async fn list_schedules(
        &self,
        template: &JobTemplate,
        query: &ScheduleQuery,
    ) -> Result<SchedulePage, ScheduleError>;
}

impl<S: StateStore> CasCoordinator<S> {
    /// [`Schedules::schedule_for_claim`] from a read already made: `read`,
    /// the schedule's record as the store returned it with a tick's index
    /// read ([`TickStart::records`](super::TickStart::records)), judged at
    /// `judged`; `now`, the caller's instant. The claim that follows starts
    /// from it, so a woken schedule's run costs the tick no read of its
    /// own.
    pub async fn schedule_for_claim_from(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        read: Option<&Versioned<JobState>>,
        judged: Timestamp,
        now: Timestamp,
    ) -> Result<Option<JobSpec>, ScheduleError> {
        let name = record_name(&template.name, key);
        if let Some(stored) = read
            && decide::forget_at(&stored.value).is_some_and(|t| t <= judged)
        {
            // A keyed run past its key's retention: its wake was this, and
            // forgetting it is what the tick owes it (one delete, which a
            // write since the read makes a no-op).
            self.store().delete(&name, stored.version).await?;
            self.remember(&name, None);
            return Ok(None);
        }
        // Remembered for the claim that follows: the one copy of the record.
        self.remember(&name, read);
        let Some(data) = read.and_then(|v| v.value.schedule.as_ref()) else {
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

    /// Reads the record of `template`'s schedule (or keyed run) `key`, lets
    /// `decide` make the next one, and writes it conditionally, reading and
    /// deciding again when another writer won. `refused` turns a spec the
    /// written record holds that cannot run here into the caller's error.
    pub(super) async fn write_keyed<T, E>(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
        mut decide: impl FnMut(
            Option<JobState>,
            Timestamp,
            &mut dyn super::rng::RandomSource,
        ) -> Result<(T, Option<JobState>), E>,
        refused: impl Fn(SpecProblem) -> E,
    ) -> Result<T, E>
    where
        E: From<CoordError> + From<super::store::StoreError>,
    {
        let name = record_name(&template.name, key);
        let (mut current, now) = self.store().get_judged(&name, now).await?;
        for _ in 0..MAX_CAS_ATTEMPTS {
            let expected = current.as_ref().map(|v| v.version);
            let mut rng = self.random();
            let (write, next) = decide(current.as_ref().map(|v| v.value.clone()), now, &mut rng)?;
            let Some(mut next) = next else {
                return Ok(write);
            };
            decide::seal_keyed(template, key, &mut next, now).map_err(&refused)?;
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
        Err(CoordError::Contention {
            attempts: MAX_CAS_ATTEMPTS,
        }
        .into())
    }
}

impl<S: StateStore> CasCoordinator<S> {
    /// One part of [`Schedules::put_schedules`] (at most
    /// [`MAX_SCHEDULE_BATCH`]): one read of every record, the decisions,
    /// one write of the changed ones. A key met again in the part, a write
    /// that lost to another writer, and one whose answer was lost are
    /// written again one by one, which reads and decides again.
    async fn put_schedule_part(
        &self,
        template: &JobTemplate,
        puts: Vec<SchedulePut>,
        now: Timestamp,
    ) -> Vec<Result<ScheduleWrite, ScheduleError>> {
        let mut answers: Vec<Option<Result<ScheduleWrite, ScheduleError>>> =
            puts.iter().map(|_| None).collect();
        // The first of each key goes in the bulk; the others after it.
        let mut seen = std::collections::HashSet::new();
        let (bulk, again): (Vec<usize>, Vec<usize>) =
            (0..puts.len()).partition(|&i| seen.insert(puts[i].key.as_str()));
        let names: Vec<String> = bulk
            .iter()
            .map(|&i| record_name(&template.name, &puts[i].key))
            .collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let (reads, judged) = match self.store().get_many_judged(&refs, now).await {
            Ok(read) => read,
            Err(e) => {
                return puts.iter().map(|_| Err(e.clone().into())).collect();
            }
        };
        // Decided: (index in `puts`, record name, the write's answer, the
        // record to write, the version it must be at).
        let mut decided = Vec::new();
        for ((&i, name), read) in bulk.iter().zip(&names).zip(reads) {
            let put = &puts[i];
            let expected = read.as_ref().map(|v| v.version);
            // The bulk path remembers no record: a writer of many
            // schedules is seldom the process that runs them.
            self.remember(name, None);
            let mut rng = self.random();
            let decision = decide::put_schedule(
                template,
                &put.key,
                read.map(|v| v.value),
                put.spec.clone(),
                put.precondition,
                judged,
                &mut rng,
            );
            match decision {
                Err(refusal) => answers[i] = Some(Err(ScheduleError::Refused(refusal))),
                Ok((write, None)) => answers[i] = Some(Ok(write)),
                Ok((write, Some(mut next))) => {
                    match decide::seal_keyed(template, &put.key, &mut next, judged) {
                        Ok(()) => decided.push((i, name.as_str(), write, next, expected)),
                        Err(problem) => answers[i] = Some(Err(spec_refused(problem))),
                    }
                }
            }
        }
        let writes: Vec<RecordWrite<'_>> = decided
            .iter()
            .map(|(_, name, _, next, expected)| RecordWrite {
                job: name,
                state: next,
                expected: *expected,
            })
            .collect();
        let written = self.store().put_many(&writes).await;
        let mut retry = Vec::new();
        for ((i, name, write, next, _), answer) in decided.iter().zip(written) {
            match answer {
                Ok(PutResult::Written(_)) => answers[*i] = Some(Ok(*write)),
                Ok(PutResult::Conflict(_)) => {
                    self.count_conflict();
                    retry.push(*i);
                }
                Err(e) if e.kind == StoreErrorKind::Ambiguous => {
                    // Written or not: the record says. Ours, as decided, is
                    // the answer; anything else is decided again.
                    match self.store().get(name).await {
                        Ok(Some(stored)) if &stored.value == next => {
                            answers[*i] = Some(Ok(*write));
                        }
                        Ok(_) => retry.push(*i),
                        Err(e) => answers[*i] = Some(Err(e.into())),
                    }
                }
                Err(e) => answers[*i] = Some(Err(e.into())),
            }
        }
        retry.extend(again);
        retry.sort_unstable();
        for i in retry {
            let put = &puts[i];
            answers[i] = Some(
                self.put_schedule(template, &put.key, put.spec.clone(), put.precondition, now)
                    .await,
            );
        }
        bulk_answers(answers)
    }
}

impl<S: StateStore> Schedules for CasCoordinator<S> {
    async fn put_schedules(
        &self,
        template: &JobTemplate,
        mut puts: Vec<SchedulePut>,
        now: Timestamp,
    ) -> Vec<Result<ScheduleWrite, ScheduleError>> {
        let mut answers = Vec::with_capacity(puts.len());
        while !puts.is_empty() {
            let rest = puts.split_off(puts.len().min(MAX_SCHEDULE_BATCH));
            answers.extend(self.put_schedule_part(template, puts, now).await);
            puts = rest;
        }
        answers
    }

    async fn put_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        spec: ScheduleSpec,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError> {
        self.write_keyed(
            template,
            key,
            now,
            |current, now, rng| {
                decide::put_schedule(template, key, current, spec.clone(), precondition, now, rng)
                    .map_err(ScheduleError::Refused)
            },
            spec_refused,
        )
        .await
    }

    async fn delete_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError> {
        self.write_keyed(
            template,
            key,
            now,
            |current, now, rng| {
                decide::delete_schedule(template, key, current, precondition, now, rng)
                    .map(|(write, state)| (write, Some(state)))
                    .map_err(ScheduleError::Refused)
            },
            spec_refused,
        )
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
        self.schedule_for_claim_from(template, key, read.as_ref(), judged, now)
            .await
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

    async fn list_schedules(
        &self,
        template: &JobTemplate,
        query: &ScheduleQuery,
    ) -> Result<SchedulePage, ScheduleError> {
        let limit = query.limit.clamp(1, MAX_SCHEDULE_PAGE);
        // A filter may skip many: then read the store's pages whole.
        let filtered = query.label.is_some();
        let (schedules, cursor) = job_records_page(
            self.store(),
            template,
            (&query.prefix, query.after.as_deref()),
            (limit, filtered.then_some(MAX_SCHEDULE_PAGE)),
            |_, key, record| listed(key, record.value, query),
        )
        .await?;
        Ok(SchedulePage { schedules, cursor })
    }
}

/// A bulk write's answers, each filled in its place as the writes came
/// back ([`Schedules::put_schedules`]): a place left empty would be a bug
/// of the writer, and is that schedule's error rather than a panic.
pub fn bulk_answers(
    answers: Vec<Option<Result<ScheduleWrite, ScheduleError>>>,
) -> Vec<Result<ScheduleWrite, ScheduleError>> {
    answers
        .into_iter()
        .map(|a| {
            a.unwrap_or_else(|| {
                Err(ScheduleError::Coord(CoordError::Store(StoreError::other(
                    "a bulk write left a schedule without an answer: this is a bug",
                ))))
            })
        })
        .collect()
}

fn spec_refused(problem: SpecProblem) -> ScheduleError {
    ScheduleError::Refused(ScheduleRefusal::Spec(problem))
}

/// The record as a listing shows it: `None` for a tombstone, a record
/// that is not a schedule's, or one the label filter leaves out.
fn listed(
    key: ScheduleKey,
    record: JobState,
    query: &ScheduleQuery,
) -> Result<Option<(ScheduleKey, ScheduleRecord)>, ScheduleError> {
    // A keyed run is a one-off schedule in its record, but not one the
    // application wrote as a schedule: its route is the runs'.
    let Some(data) = record.schedule.clone().filter(|d| d.run.is_none()) else {
        return Ok(None);
    };
    let Some(spec) = data
        .spec()
        .map_err(|p| ScheduleError::Refused(ScheduleRefusal::Spec(p)))?
    else {
        return Ok(None);
    };
    let labelled = match &query.label {
        Some(wanted) => spec.labels.iter().any(|(name, value)| {
            wanted.len() == name.len() + 1 + value.len()
                && wanted.starts_with(name.as_str())
                && wanted[name.len()..].starts_with(':')
                && wanted.ends_with(value.as_str())
        }),
        None => true,
    };
    if !labelled {
        return Ok(None);
    }
    Ok(Some((key, ScheduleRecord { data, record })))
}

/// The cursor of a page whose last record read is `after`: its key.
/// One page of a dynamic job's records, as a listing shows them: reads
/// the store's pages of `job/prefix…` after `after` (a key), `batch` at a
/// time (`limit` unless a filter may skip many), and keeps what `keep`
/// makes of each record named by a key (given its name, key and record) (a static job's record, whose name
/// has no `/`, is not the job's), until `limit` are kept, the records end
/// (no cursor), or [`MAX_STORE_PAGES`] pages were read (a short page, with
/// the cursor to go on from). Schedules and keyed runs are listed by it.
pub(super) async fn job_records_page<S, T, E>(
    store: &S,
    template: &JobTemplate,
    (prefix, after): (&str, Option<&str>),
    (limit, batch): (usize, Option<usize>),
    mut keep: impl FnMut(&str, ScheduleKey, Versioned<JobState>) -> Result<Option<T>, E>,
) -> Result<(Vec<T>, Option<String>), E>
where
    S: StateStore,
    E: From<super::store::StoreError>,
{
    let batch = batch.unwrap_or(limit);
    let job_prefix = format!("{}/", template.name.as_str());
    let prefix = format!("{job_prefix}{prefix}");
    let cursor = |after: Option<String>| {
        after.and_then(|name| name.strip_prefix(&job_prefix).map(str::to_string))
    };
    let mut after = after.map(|a| format!("{job_prefix}{a}"));
    let mut kept = Vec::new();
    for _ in 0..MAX_STORE_PAGES {
        let page = store.records_page(&prefix, after.as_deref(), batch).await?;
        let last_page = page.len() < batch;
        for (name, record) in page {
            let key = name
                .strip_prefix(&job_prefix)
                .and_then(|k| ScheduleKey::new(k).ok());
            let item = match key {
                Some(key) => keep(&name, key, record)?,
                None => None,
            };
            after = Some(name);
            if let Some(item) = item {
                kept.push(item);
                if kept.len() == limit {
                    return Ok((kept, cursor(after)));
                }
            }
        }
        if last_page {
            return Ok((kept, None));
        }
    }
    Ok((kept, cursor(after)))
}
