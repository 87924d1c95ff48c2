//! The Worker's side of a dynamic job's schedules and keyed runs:
//! [`Schedules`] and [`Runs`] over the job's schedule objects. A
//! schedule's (or keyed run's) requests go to the object its key hashes to
//! ([`schedule_object`]), one request per operation; a listing reads every
//! one of the job's objects and merges their pages in key order.

use std::collections::BTreeMap;

use cronslot_core::coord::decide::{Enqueued, Precondition, ScheduleWrite};
use cronslot_core::coord::exec::join_all;
use cronslot_core::coord::{
    CoordError, JobState, MAX_RUN_PAGE, MAX_SCHEDULE_PAGE, RunError, RunPage, RunQuery, Runs,
    ScheduleError, SchedulePage, SchedulePut, ScheduleQuery, ScheduleRecord, Schedules, StoreError,
    Versioned, bulk_answers,
};
use cronslot_core::manifest::{JobSpec, JobTemplate};
use cronslot_core::schedules::{RunRequest, RunView, ScheduleKey, ScheduleSpec};
use jiff::Timestamp;
use serde::Serialize;
use serde_json::value::RawValue;

use super::{ObjectClient, Target, Transport, send_request, unexpected};
use crate::protocol::{Answer, Op, ScheduleAt, WireError, schedule_object};
use crate::spec_text::encode_template;

fn schedule_error(e: WireError) -> ScheduleError {
    match e {
        WireError::Schedule(refusal) => ScheduleError::Refused(refusal),
        other => ScheduleError::Coord(CoordError::from(other)),
    }
}

fn run_error(e: WireError) -> RunError {
    match e {
        WireError::Run(refusal) => RunError::Refused(refusal),
        other => RunError::Coord(CoordError::from(other)),
    }
}

/// A run request as the JSON body of an enqueue, the form
/// [`RunRequest::from_json`] reads (the object reads it so, checking it
/// again).
#[derive(Serialize)]
struct RunBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(with = "cronslot_core::instant::text::option")]
    at: Option<Timestamp>,
}

fn run_body(request: &RunRequest) -> Result<String, RunError> {
    let body = RunBody {
        payload: request.payload.as_deref(),
        at: request.at,
    };
    serde_json::to_string(&body).map_err(|e| {
        RunError::Coord(CoordError::Store(StoreError::other(format!(
            "encoding a run request: {e}"
        ))))
    })
}

impl<T: Transport> ObjectClient<T> {
    /// Where the schedule operations on `key` (or, without one, on the
    /// object `shard`'s schedules) of `template` go.
    fn schedule_target(
        &self,
        template: &JobTemplate,
        key: Option<&ScheduleKey>,
        shard: u32,
    ) -> Target {
        let job = template.name.as_str();
        Target {
            object: match key {
                Some(key) => schedule_object(job, key.as_str(), self.schedule_objects),
                None => format!("{job}#{shard}"),
            },
            spec: encode_template(template),
            schedule: Some(ScheduleAt {
                objects: self.schedule_objects,
                key: key.map(|k| k.as_str().to_string()),
                version: None,
            }),
        }
    }

    async fn schedule_op(
        &self,
        template: &JobTemplate,
        key: Option<&ScheduleKey>,
        shard: u32,
        op: Op,
    ) -> Result<Answer, ScheduleError> {
        let target = self.schedule_target(template, key, shard);
        send_request(&self.transport, &target.request(op))
            .await?
            .map_err(schedule_error)
    }

    async fn written(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        op: Op,
    ) -> Result<ScheduleWrite, ScheduleError> {
        match self.schedule_op(template, Some(key), 0, op).await? {
            Answer::Written(write) => Ok(write),
            other => Err(unexpected("a schedule's write", &other).into()),
        }
    }

    /// A keyed run's operation, sent to the object its key names.
    async fn run_op(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        op: Op,
    ) -> Result<Answer, RunError> {
        let target = self.schedule_target(template, Some(key), 0);
        send_request(&self.transport, &target.request(op))
            .await?
            .map_err(run_error)
    }

    /// The schedule's record as stored.
    async fn read_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
    ) -> Result<Option<JobState>, ScheduleError> {
        match self
            .schedule_op(template, Some(key), 0, Op::ReadSchedule)
            .await?
        {
            Answer::Record(read) => Ok(read.map(|b| *b)),
            other => Err(unexpected("read_schedule", &other).into()),
        }
    }
}

impl<T: Transport> Schedules for ObjectClient<T> {
    /// One request per object that holds some of the keys (at most the
    /// job's count of objects, all at once), not one per schedule: a
    /// thousand schedules cost a Worker sixteen subrequests. Each object
    /// writes its part as the core's coordinator writes a bulk write.
    async fn put_schedules(
        &self,
        template: &JobTemplate,
        puts: Vec<SchedulePut>,
        now: Timestamp,
    ) -> Vec<Result<ScheduleWrite, ScheduleError>> {
        let objects = self.schedule_objects;
        // Per object: its shard, and each of its puts with its place.
        let mut parts: BTreeMap<u32, Vec<(usize, SchedulePut)>> = BTreeMap::new();
        let total = puts.len();
        for (i, put) in puts.into_iter().enumerate() {
            let shard = crate::protocol::schedule_shard(put.key.as_str(), objects);
            parts.entry(shard).or_default().push((i, put));
        }
        let sends = parts.into_iter().map(|(shard, part)| async move {
            let places: Vec<usize> = part.iter().map(|(i, _)| *i).collect();
            let op = Op::PutSchedules {
                puts: part
                    .into_iter()
                    .map(|(_, p)| (p.key.as_str().to_string(), p.spec.to_json(), p.precondition))
                    .collect(),
                now,
            };
            let answer = self.schedule_op(template, None, shard, op).await;
            (places, answer)
        });
        let mut answers: Vec<Option<Result<ScheduleWrite, ScheduleError>>> =
            (0..total).map(|_| None).collect();
        for (places, answer) in join_all(sends.collect()).await {
            match answer {
                Ok(Answer::WrittenEach(each)) if each.len() == places.len() => {
                    for (place, one) in places.into_iter().zip(each) {
                        answers[place] = Some(one.map_err(schedule_error));
                    }
                }
                Ok(other) => {
                    let e = ScheduleError::from(unexpected("put_schedules", &other));
                    for place in places {
                        answers[place] = Some(Err(e.clone()));
                    }
                }
                Err(e) => {
                    for place in places {
                        answers[place] = Some(Err(e.clone()));
                    }
                }
            }
        }
        bulk_answers(answers)
    }

    async fn put_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        spec: ScheduleSpec,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError> {
        let op = Op::PutSchedule {
            spec: spec.to_json(),
            precondition,
            now,
        };
        self.written(template, key, op).await
    }

    async fn delete_schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        precondition: Precondition,
        now: Timestamp,
    ) -> Result<ScheduleWrite, ScheduleError> {
        let op = Op::DeleteSchedule { precondition, now };
        self.written(template, key, op).await
    }

    /// One request: the record, read from the schedule's object for the
    /// claim (which forgets a keyed run past its key's retention, as every
    /// store's read for a claim does); the spec is the record's, planned
    /// here (with the zones the template carries).
    async fn schedule_for_claim(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
    ) -> Result<Option<JobSpec>, ScheduleError> {
        let op = Op::ReadScheduleForClaim { now };
        let record = match self.schedule_op(template, Some(key), 0, op).await? {
            Answer::Record(read) => read.map(|b| *b),
            other => return Err(unexpected("schedule_for_claim", &other).into()),
        };
        let Some(record) = record else {
            return Ok(None);
        };
        let Some(data) = record.schedule.as_ref() else {
            return Ok(None);
        };
        data.job_spec(template, key).map_err(|p| {
            ScheduleError::Refused(cronslot_core::coord::decide::ScheduleRefusal::Spec(p))
        })
    }

    async fn schedule(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
    ) -> Result<Option<ScheduleRecord>, ScheduleError> {
        let read = self.read_schedule(template, key).await?;
        Ok(read.and_then(|record| {
            let data = record.schedule.clone()?;
            Some(ScheduleRecord { data, record })
        }))
    }

    /// Reads a page from each of the job's objects at once, each asked
    /// for about its share of the limit (keys spread evenly), and merges
    /// them. The page ends where the first object that has more stopped
    /// (its cursor): up to there every object's schedules were read, so
    /// the next page, after that key, misses none and repeats none.
    async fn list_schedules(
        &self,
        template: &JobTemplate,
        query: &ScheduleQuery,
    ) -> Result<SchedulePage, ScheduleError> {
        let limit = query.limit.clamp(1, MAX_SCHEDULE_PAGE);
        let pages = self
            .every_object(template, limit, |per_object| Op::ListSchedules {
                prefix: query.prefix.clone(),
                label: query.label.clone(),
                after: query.after.clone(),
                limit: per_object,
            })
            .await?;
        let mut listed = Vec::new();
        for page in pages {
            match page {
                Answer::Page { schedules, cursor } => listed.push((schedules, cursor)),
                other => return Err(unexpected("list_schedules", &other).into()),
            }
        }
        let (records, cursor) = merge_pages(listed, limit);
        let mut schedules = Vec::with_capacity(records.len());
        for (key, record) in records {
            let Some(data) = record.schedule.clone() else {
                continue;
            };
            let key = listed_key(key)?;
            schedules.push((
                key,
                ScheduleRecord {
                    data,
                    record: *record,
                },
            ));
        }
        Ok(SchedulePage { schedules, cursor })
    }
}

impl<T: Transport> ObjectClient<T> {
    /// Sends the op `make(per_object)` to every schedule object of
    /// `template` at once (a page costs one round trip, not N), asking
    /// each for about twice its share of `limit`, and answers their pages.
    async fn every_object(
        &self,
        template: &JobTemplate,
        limit: usize,
        make: impl Fn(usize) -> Op,
    ) -> Result<Vec<Answer>, CoordError> {
        let objects = self.schedule_objects;
        let share = usize::try_from(objects).unwrap_or(1).max(1);
        let per_object = (limit.div_ceil(share) * 2).clamp(1, limit);
        let pages = join_all(
            (0..objects)
                .map(|shard| self.schedule_op(template, None, shard, make(per_object)))
                .collect(),
        )
        .await;
        pages
            .into_iter()
            .map(|page| {
                page.map_err(|e| match e {
                    ScheduleError::Coord(c) => c,
                    ScheduleError::Refused(r) => CoordError::Store(StoreError::other(format!(
                        "a schedule object refused a listing: {r:?}"
                    ))),
                })
            })
            .collect()
    }
}

/// One object's page of a listing (or the merged page): the items by key,
/// in key order, and where the next page starts.
type ObjectPage<V> = (Vec<(String, V)>, Option<String>);

/// Merges the pages of a job's schedule objects, each in key order with
/// the cursor where that object's next page starts, into one page of at
/// most `limit` in key order: nothing past the smallest cursor an object
/// answered (that object may hold keys before it that it has not sent),
/// and a cursor that meets every item exactly once when paged on.
fn merge_pages<V>(pages: Vec<ObjectPage<V>>, limit: usize) -> ObjectPage<V> {
    let mut merged = BTreeMap::new();
    let mut bound: Option<String> = None;
    for (items, cursor) in pages {
        merged.extend(items);
        if let Some(cursor) = cursor
            && bound.as_ref().is_none_or(|b| cursor < *b)
        {
            bound = Some(cursor);
        }
    }
    let mut page = Vec::new();
    let mut truncated = false;
    for (key, item) in merged {
        if bound.as_ref().is_some_and(|b| key > *b) {
            break;
        }
        if page.len() == limit {
            truncated = true;
            break;
        }
        page.push((key, item));
    }
    let cursor = match (truncated, page.last(), bound) {
        (true, Some((last, _)), _) => Some(last.clone()),
        (false, _, Some(bound)) => Some(bound),
        _ => None,
    };
    (page, cursor)
}

/// A key an object listed, checked.
fn listed_key(key: String) -> Result<ScheduleKey, CoordError> {
    ScheduleKey::new(key.clone()).map_err(|e| {
        CoordError::Store(StoreError::new(
            cronslot_core::coord::StoreErrorKind::Corrupt,
            format!("a schedule object listed a record with a bad key {key:?}: {e}"),
        ))
    })
}

/// A keyed run's requests go to the object its key names, as a schedule's,
/// one request per enqueue and per status read; the object decides with
/// the core ([`CasCoordinator`](cronslot_core::coord::CasCoordinator)'s
/// [`Runs`]) and writes the record as a schedule's write does.
impl<T: Transport> Runs for ObjectClient<T> {
    async fn enqueue_run(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        request: &RunRequest,
        now: Timestamp,
    ) -> Result<Enqueued, RunError> {
        let op = Op::EnqueueRun {
            request: run_body(request)?,
            now,
        };
        match self.run_op(template, key, op).await? {
            Answer::Enqueued(enqueued) => Ok(enqueued),
            other => Err(unexpected("enqueue_run", &other).into()),
        }
    }

    async fn run_status(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        now: Timestamp,
    ) -> Result<Option<RunView>, RunError> {
        match self.run_op(template, key, Op::RunStatus { now }).await? {
            Answer::Run(view) => Ok(view.map(|b| *b)),
            other => Err(unexpected("run_status", &other).into()),
        }
    }

    /// Every object's page at once, merged in key order, as
    /// [`Schedules::list_schedules`] merges the schedules.
    async fn list_runs(
        &self,
        template: &JobTemplate,
        query: &RunQuery,
        now: Timestamp,
    ) -> Result<RunPage, RunError> {
        let limit = query.limit.clamp(1, MAX_RUN_PAGE);
        let pages = self
            .every_object(template, limit, |per_object| Op::ListRuns {
                prefix: query.prefix.clone(),
                status: query.status,
                after: query.after.clone(),
                limit: per_object,
                now,
            })
            .await?;
        let mut listed = Vec::new();
        for page in pages {
            match page {
                Answer::Runs { runs, cursor } => listed.push((
                    runs.into_iter().map(|r| (r.key.clone(), r)).collect(),
                    cursor,
                )),
                other => return Err(unexpected("list_runs", &other).into()),
            }
        }
        let (runs, cursor) = merge_pages(listed, limit);
        Ok(RunPage {
            runs: runs.into_iter().map(|(_, run)| run).collect(),
            cursor,
        })
    }
}

impl<T: Transport> cronslot_runtime::ScheduleSource for ObjectClient<T> {
    /// The object's tick returns no records with its index read: it
    /// reads the schedule's.
    async fn schedule_spec(
        &self,
        template: &JobTemplate,
        key: &ScheduleKey,
        _read: Option<(&Versioned<JobState>, Timestamp)>,
        now: Timestamp,
    ) -> Result<Option<JobSpec>, String> {
        self.schedule_for_claim(template, key, now)
            .await
            .map_err(|e| format!("{}/{key}: {e}", template.name))
    }
}
