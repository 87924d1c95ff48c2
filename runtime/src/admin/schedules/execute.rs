//! Runs a schedule's route over a coordinator that writes schedules.

use cronslot_core::coord::decide::{self, Precondition, ScheduleRefusal, ScheduleWrite};
use cronslot_core::coord::{ScheduleError, SchedulePage, ScheduleRecord, Schedules, SplitMix64};
use cronslot_core::manifest::{JobName, JobSpec, JobTemplate, Manifest};
use cronslot_core::schedules::ScheduleKey;
use jiff::Timestamp;

use super::BulkEntry;
use super::docs::{
    ListedScheduleDoc, ScheduleBulkDoc, ScheduleBulkResult, ScheduleDeleteDoc, ScheduleDoc,
    SchedulePageDoc, ScheduleWriteDoc,
};
use super::etag;
use crate::admin::execute::{coord_error_doc, coord_reply, next_doc};
use crate::admin::{AdminRoute, DEFAULT_NEXT, ErrorDoc, ErrorKind, Reply, job_report};

/// Runs a schedule's route ([`AdminRoute::is_schedule`]) over `coord` at
/// `now` (the host's clock; a write is judged by the store's clock where
/// the store has one). Any other route answers 500 and touches nothing,
/// as does a job no longer in `manifest` (404).
pub async fn execute_schedule<C: Schedules>(
    route: &AdminRoute,
    manifest: &Manifest,
    coord: &C,
    now: Timestamp,
) -> Reply {
    match route {
        AdminRoute::PutSchedule {
            job,
            key,
            spec,
            precondition,
        } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            let written = coord
                .put_schedule(template, key, spec.clone(), *precondition, now)
                .await;
            let (status, version, changed) = match written {
                Ok(ScheduleWrite::Created { version }) => (201, version, true),
                Ok(ScheduleWrite::Changed { version }) => (200, version, true),
                Ok(ScheduleWrite::Unchanged { version }) => (200, version, false),
                Ok(ScheduleWrite::Deleted { .. }) => {
                    return Reply::error(
                        500,
                        ErrorKind::Internal,
                        format!("writing {}: the write answered a delete", name(job, key)),
                    );
                }
                Err(e) => return schedule_error(job, key, "writing", *precondition, &e),
            };
            let doc = ScheduleWriteDoc {
                job: job.as_str().to_string(),
                key: key.as_str().to_string(),
                version,
                changed,
            };
            Reply::json(status, &doc).with_header("ETag", etag(version))
        }
        AdminRoute::PutSchedules { job, entries } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            bulk(template, entries, coord, now).await
        }
        AdminRoute::DeleteSchedule {
            job,
            key,
            precondition,
        } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            match coord
                .delete_schedule(template, key, *precondition, now)
                .await
            {
                Ok(ScheduleWrite::Deleted { version }) => Reply::json(
                    200,
                    &ScheduleDeleteDoc {
                        job: job.as_str().to_string(),
                        key: key.as_str().to_string(),
                        version,
                    },
                ),
                Ok(other) => Reply::error(
                    500,
                    ErrorKind::Internal,
                    format!("deleting {}: the delete answered {other:?}", name(job, key)),
                ),
                Err(e) => schedule_error(job, key, "deleting", *precondition, &e),
            }
        }
        AdminRoute::GetSchedule { job, key } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            match coord.schedule(template, key).await {
                Ok(Some(read)) => schedule_doc(template, key, read, now),
                Ok(None) => not_found(job, key, None),
                Err(e) => schedule_error(job, key, "reading", Precondition::None, &e),
            }
        }
        AdminRoute::ListSchedules { job, query } => {
            let template = match template(manifest, job) {
                Ok(t) => t,
                Err(reply) => return reply,
            };
            match coord.list_schedules(template, query).await {
                Ok(page) => page_doc(template, page, now),
                Err(ScheduleError::Coord(c)) => coord_reply(
                    format!("listing the schedules of job {:?}: {c}", job.as_str()),
                    &c,
                ),
                // A stored spec that no longer reads here.
                Err(e) => Reply::error(
                    500,
                    ErrorKind::Internal,
                    format!("listing the schedules of job {:?}: {e}", job.as_str()),
                ),
            }
        }
        other => Reply::error(
            500,
            ErrorKind::Internal,
            format!(
                "{} {} is not a schedule's route (admin::execute serves it)",
                other.template().0,
                other.template().1
            ),
        ),
    }
}

/// A bulk write: the entries that are schedules go to the store in one
/// [`Schedules::put_schedules`]; every entry gets its result in order.
async fn bulk<C: Schedules>(
    template: &JobTemplate,
    entries: &[BulkEntry],
    coord: &C,
    now: Timestamp,
) -> Reply {
    let job = &template.name;
    let puts: Vec<_> = entries
        .iter()
        .filter_map(|e| e.put.as_ref().ok().cloned())
        .collect();
    let mut written = coord.put_schedules(template, puts, now).await.into_iter();
    let mut doc = ScheduleBulkDoc::new(job.as_str());
    for entry in entries {
        let result = match &entry.put {
            Err(refused) => Err(refused.clone()),
            Ok(put) => match written.next() {
                Some(Ok(write)) => Ok(write),
                Some(Err(e)) => Err(schedule_error_doc(
                    job,
                    &put.key,
                    "writing",
                    put.precondition,
                    &e,
                )),
                None => Err(ErrorDoc::new(
                    500,
                    ErrorKind::Internal,
                    format!("writing {}: no answer came back", name(job, &put.key)),
                )),
            },
        };
        let (status, version, changed, error) = match result {
            Ok(ScheduleWrite::Created { version }) => {
                doc.created += 1;
                (201, Some(version), Some(true), None)
            }
            Ok(ScheduleWrite::Changed { version }) => {
                doc.changed += 1;
                (200, Some(version), Some(true), None)
            }
            Ok(ScheduleWrite::Unchanged { version }) => {
                doc.unchanged += 1;
                (200, Some(version), Some(false), None)
            }
            Ok(ScheduleWrite::Deleted { .. }) => {
                doc.failed += 1;
                let e = ErrorDoc::new(500, ErrorKind::Internal, "the write answered a delete");
                (500, None, None, Some(e))
            }
            Err(e) => {
                doc.failed += 1;
                (e.status, None, None, Some(e))
            }
        };
        doc.results.push(ScheduleBulkResult {
            key: entry.key.clone(),
            status,
            version,
            changed,
            error,
        });
    }
    Reply::json(200, &doc)
}

/// The document of a schedule as read: a tombstone is 404.
fn schedule_doc(
    template: &JobTemplate,
    key: &ScheduleKey,
    read: ScheduleRecord,
    now: Timestamp,
) -> Reply {
    let ScheduleRecord { data, mut record } = read;
    let unreadable = |message: String| {
        Reply::error(
            500,
            ErrorKind::Internal,
            format!("reading {}: {message}", name(&template.name, key)),
        )
    };
    let (spec, job_spec) = match (data.spec(), data.job_spec(template, key)) {
        (Ok(Some(spec)), Ok(Some(job_spec))) => (spec, job_spec),
        (Ok(None), _) | (_, Ok(None)) => {
            return not_found(&template.name, key, Some(data.version));
        }
        (Err(problem), _) | (_, Err(problem)) => return unreadable(problem.to_string()),
    };
    // The record as a status shows it: brought up to `now` (expired
    // leases and late slots given their fates), not written. The seed only
    // draws retry jitter for a record that is never stored.
    decide::advance(&job_spec, &mut record, now, &mut SplitMix64::new(0), false);
    let next = if job_spec.paused || record.paused {
        Vec::new()
    } else {
        next_doc(&job_spec, now, DEFAULT_NEXT).slots
    };
    let last_claimed = record
        .leases
        .iter()
        .map(|l| l.slot)
        .chain(record.history.iter().map(|r| r.slot))
        .chain(record.last_success.iter().map(|r| r.slot))
        .chain(record.dead.iter().map(|d| d.slot))
        .max();
    let doc = ScheduleDoc {
        job: template.name.as_str().to_string(),
        key: key.as_str().to_string(),
        now,
        version: data.version,
        changed_at: data.changed_at,
        spec,
        next,
        last_claimed,
        status: job_report(&job_spec, record, Some(true), now),
    };
    Reply::json(200, &doc).with_header("ETag", etag(data.version))
}

/// The spec the slots of schedule `key` of the dynamic job `job` run with
/// now, read from `coord`'s store, for a job's operation on the schedule
/// ([`AdminRoute::OfSchedule`]): 404 when there is no such schedule, or
/// only its tombstone (nothing of it runs any more); 500 for a stored spec
/// this server cannot read.
pub async fn schedule_job_spec<C: Schedules>(
    coord: &C,
    manifest: &Manifest,
    job: &JobName,
    key: &ScheduleKey,
) -> Result<JobSpec, Reply> {
    let template = template(manifest, job)?;
    let read = coord
        .schedule(template, key)
        .await
        .map_err(|e| schedule_error(job, key, "reading", Precondition::None, &e))?;
    let Some(read) = read else {
        return Err(not_found(job, key, None));
    };
    match read.data.job_spec(template, key) {
        Ok(Some(spec)) => Ok(spec),
        Ok(None) => Err(not_found(job, key, Some(read.data.version))),
        Err(problem) => Err(Reply::error(
            500,
            ErrorKind::Internal,
            format!("reading {}: {problem}", name(job, key)),
        )),
    }
}

/// A page as its document: each schedule with its next slot.
fn page_doc(template: &JobTemplate, page: SchedulePage, now: Timestamp) -> Reply {
    let mut schedules = Vec::with_capacity(page.schedules.len());
    for (key, ScheduleRecord { data, .. }) in page.schedules {
        let read = data.spec().and_then(|spec| {
            let job_spec = spec
                .as_ref()
                .map(|spec| template.for_schedule(&key, spec))
                .transpose()?;
            Ok(spec.zip(job_spec))
        });
        let (spec, job_spec) = match read {
            Ok(Some(both)) => both,
            // The listing leaves tombstones out; one here is skipped.
            Ok(None) => continue,
            Err(problem) => {
                return Reply::error(
                    500,
                    ErrorKind::Internal,
                    format!("listing: reading {}: {problem}", name(&template.name, &key)),
                );
            }
        };
        let next = if job_spec.paused {
            None
        } else {
            next_doc(&job_spec, now, 1).slots.first().map(|s| s.slot)
        };
        schedules.push(ListedScheduleDoc {
            key: key.as_str().to_string(),
            version: data.version,
            changed_at: data.changed_at,
            spec,
            next,
        });
    }
    Reply::json(
        200,
        &SchedulePageDoc {
            job: template.name.as_str().to_string(),
            now,
            schedules,
            cursor: page.cursor,
        },
    )
}

/// The job's template; 404 when the manifest no longer has it (a route
/// from [`route`](crate::admin::route) over the same manifest always has).
fn template<'m>(manifest: &'m Manifest, job: &JobName) -> Result<&'m JobTemplate, Reply> {
    manifest.template(job.as_str()).ok_or_else(|| {
        Reply::error(
            404,
            ErrorKind::NotFound,
            format!("no dynamic job {:?} in the manifest", job.as_str()),
        )
    })
}

fn name(job: &JobName, key: &ScheduleKey) -> String {
    format!("schedule {:?} of job {:?}", key.as_str(), job.as_str())
}

/// 404 for a schedule that is not there; `tombstone`: it was deleted, and
/// this is its tombstone's version.
fn not_found(job: &JobName, key: &ScheduleKey, tombstone: Option<u64>) -> Reply {
    let message = match tombstone {
        None => format!("no {}", name(job, key)),
        Some(v) => format!(
            "{} was deleted (its tombstone is version {v}); a PUT re-creates it at version {}",
            name(job, key),
            v.saturating_add(1)
        ),
    };
    let mut doc = ErrorDoc::new(404, ErrorKind::NotFound, message);
    doc.version = tombstone;
    Reply::error_doc(doc)
}

/// A refused or failed schedule operation as a reply: 412 and 409 with
/// the version the schedule has, 404 when there is none, 400 for a spec
/// this server cannot run, the store's failures as every route maps them.
fn schedule_error(
    job: &JobName,
    key: &ScheduleKey,
    doing: &str,
    precondition: Precondition,
    e: &ScheduleError,
) -> Reply {
    let refusal = match e {
        ScheduleError::Coord(c) => {
            return coord_reply(format!("{doing} {}: {c}", name(job, key)), c);
        }
        ScheduleError::Refused(r) => r,
    };
    let reply = Reply::error_doc(schedule_error_doc(job, key, doing, precondition, e));
    match refusal {
        ScheduleRefusal::VersionMismatch { current: Some(v) }
        | ScheduleRefusal::Exists { version: v } => reply.with_header("ETag", etag(*v)),
        _ => reply,
    }
}

/// The error document of [`schedule_error`], without its headers: a bulk
/// write's entry carries it.
fn schedule_error_doc(
    job: &JobName,
    key: &ScheduleKey,
    doing: &str,
    precondition: Precondition,
    e: &ScheduleError,
) -> ErrorDoc {
    let what = name(job, key);
    let refusal = match e {
        ScheduleError::Coord(c) => return coord_error_doc(format!("{doing} {what}: {c}"), c),
        ScheduleError::Refused(r) => r,
    };
    match refusal {
        ScheduleRefusal::VersionMismatch { current } => {
            let named = match precondition {
                Precondition::Version(v) => format!("If-Match names version {v}"),
                _ => "the write names another version".to_string(),
            };
            let now = match current {
                Some(v) => format!("{what} is at version {v}"),
                None => format!("there is no live {what}"),
            };
            let mut doc = ErrorDoc::new(
                412,
                ErrorKind::PreconditionFailed,
                format!("{doing} {what}: {named}, and {now}; nothing was written"),
            );
            doc.version = *current;
            doc
        }
        ScheduleRefusal::Exists { version } => {
            let mut doc = ErrorDoc::new(
                409,
                ErrorKind::Exists,
                format!(
                    "{doing} {what}: it exists (version {version}) and If-None-Match: * \
                     creates only; nothing was written"
                ),
            );
            doc.version = Some(*version);
            doc
        }
        ScheduleRefusal::NotFound => ErrorDoc::new(
            404,
            ErrorKind::NotFound,
            format!("{doing} {what}: there is no such schedule"),
        ),
        // The stored spec no longer reads here (`spec_json`, the record's
        // field): the store holds what this server cannot run, not the
        // client's fault.
        ScheduleRefusal::Spec(problem) if problem.field == "spec_json" => ErrorDoc::new(
            500,
            ErrorKind::Internal,
            format!("{doing} {what}: {problem}"),
        ),
        ScheduleRefusal::Spec(problem) => {
            let mut doc = ErrorDoc::new(
                400,
                ErrorKind::Spec,
                format!("{doing} {what}: the spec cannot run here: {problem}"),
            );
            doc.problems = Some(vec![problem.clone()]);
            doc
        }
    }
}
