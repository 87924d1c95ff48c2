//! Runs a route against a coordinator.

use std::collections::BTreeMap;

use cronslot_core::coord::{
    CoordError, JobState, MissReason, Operator, SkipReason, SlotId, StoreErrorKind,
};
use cronslot_core::explain::{explain_cron, explain_dst};
use cronslot_core::health::{self, Health};
use cronslot_core::manifest::{Action, JobName, JobSpec, Manifest, format_duration};
use cronslot_core::schedule::SlotKind;
use jiff::Timestamp;

use super::metrics::prometheus_text;
use super::{
    AdminRoute, BackfillDoc, DlqDoc, DlqEntry, Due, ErrorDoc, ErrorKind, HealthDoc, HealthState,
    JobErrorDoc, JobPage, JobReport, NextDoc, NextSlot, PROMETHEUS, PauseDoc, RedriveDoc, Reply,
    StaleJob, StatusDoc, StatusFormat, UncheckedJob,
};

/// Runs every route but [`AdminRoute::Trigger`] (the Worker runs the job
/// itself: [`trigger_run`](super::trigger_run), then
/// [`trigger_reply`](super::trigger_reply)) and [`AdminRoute::Repair`]
/// (the Worker asks its objects: [`repair_page`](super::repair_page)) and
/// [`AdminRoute::OpenApi`] (the host's document, served by
/// [`dispatch`](super::dispatch)); given any of them, this answers 500 and touches nothing. `now` is the Worker's clock; every job of the
/// route must be in `manifest` (a route from [`route`](super::route) over
/// the same manifest always is; otherwise 404).
///
/// `recorded` in the status is inferred from what `status` returns: a job
/// without a record gets exactly the record a first tick at `now` would
/// create, so the coordinator's `status` must honour the `now` it is given.
pub async fn execute<C: Operator>(
    route: &AdminRoute,
    manifest: &Manifest,
    coord: &C,
    now: Timestamp,
) -> Reply {
    match run(route, manifest, coord, now).await {
        Ok(reply) | Err(reply) => reply,
    }
}

async fn run<C: Operator>(
    route: &AdminRoute,
    manifest: &Manifest,
    coord: &C,
    now: Timestamp,
) -> Result<Reply, Reply> {
    match route {
        AdminRoute::Health => Ok(health_reply(manifest, coord, now).await),
        AdminRoute::Status { job, format, page } => {
            let mut specs = select(manifest, job.as_ref())?;
            let (mut cursor, mut matched) = (None, None);
            if let (Some(page), None) = (page, job) {
                let (paged, next, count) = page_of(specs, page);
                (specs, cursor, matched) = (paged, next, Some(count));
            }
            let mut jobs = Vec::with_capacity(specs.len());
            for spec in specs {
                let state = status(coord, spec, now).await?;
                jobs.push(job_report(spec, state, None, now));
            }
            let doc = StatusDoc {
                now,
                store: None,
                jobs,
                dynamic_jobs: dynamic_jobs(manifest, job.is_none()),
                not_in_manifest: None,
                cursor,
                matched,
            };
            Ok(match format {
                StatusFormat::Json => Reply::json(200, &doc),
                StatusFormat::Prometheus => Reply {
                    status: 200,
                    content_type: PROMETHEUS,
                    headers: vec![("Cache-Control".to_string(), "no-store".to_string())],
                    body: prometheus_text(&doc),
                },
            })
        }
        AdminRoute::Dlq { job } => {
            let doc = dlq_doc(select(manifest, job.as_ref())?, coord, now).await?;
            Ok(Reply::json(200, &doc))
        }
        AdminRoute::Redrive { job, .. }
        | AdminRoute::Pause { job }
        | AdminRoute::Resume { job }
        | AdminRoute::Backfill { job, .. } => act(route, one(manifest, job)?, coord, now).await,
        AdminRoute::Next { job, count } => {
            let spec = one(manifest, job)?;
            Ok(Reply::json(200, &next_doc(spec, now, *count)))
        }
        AdminRoute::Dashboard(asset) => Ok(asset.reply()),
        AdminRoute::Trigger { job } => Err(Reply::error(
            500,
            ErrorKind::Internal,
            format!(
                "the trigger of job {:?} was not run: the Worker runs triggers itself \
                 (admin::trigger_run, then admin::trigger_reply)",
                job.as_str()
            ),
        )),
        AdminRoute::Repair { .. } => Err(Reply::error(
            500,
            ErrorKind::Internal,
            "the repair was not run: the Worker repairs its objects itself (admin::repair_page)",
        )),
        AdminRoute::OpenApi => Err(Reply::error(
            500,
            ErrorKind::Internal,
            "the OpenAPI document is the host's to serve (admin::dispatch, AdminHost::openapi)",
        )),
        #[cfg(feature = "schedules")]
        AdminRoute::PutSchedule { .. }
        | AdminRoute::PutSchedules { .. }
        | AdminRoute::GetSchedule { .. }
        | AdminRoute::DeleteSchedule { .. }
        | AdminRoute::ListSchedules { .. }
        | AdminRoute::OfSchedule { .. } => Err(Reply::error(
            500,
            ErrorKind::Internal,
            "a schedule's route runs over a coordinator that writes schedules \
             (admin::execute_schedule, through admin::dispatch)",
        )),
        #[cfg(feature = "schedules")]
        AdminRoute::EnqueueRun { .. } | AdminRoute::GetRun { .. } | AdminRoute::ListRuns { .. } => {
            Err(Reply::error(
                500,
                ErrorKind::Internal,
                "a keyed run's route runs over a coordinator that keeps keyed runs \
             (admin::execute_run, through admin::dispatch)",
            ))
        }
    }
}

/// Runs a job's operation (`redrive`, `pause`, `resume`, `backfill`) on
/// the record of `spec`: the job's, or one schedule's (`spec.key`, which
/// the answer names). Any other route answers 500 and touches nothing.
pub(crate) async fn act<C: Operator>(
    route: &AdminRoute,
    spec: &JobSpec,
    coord: &C,
    now: Timestamp,
) -> Result<Reply, Reply> {
    let job = spec.name.as_str().to_string();
    #[cfg(feature = "schedules")]
    let key = spec.key.as_ref().map(|k| k.as_str().to_string());
    match route {
        AdminRoute::Redrive { slot, .. } => {
            let redriven = coord
                .redrive(spec, *slot, now)
                .await
                .map_err(|e| coord_error(spec, "redriving", &e))?;
            Ok(Reply::json(
                200,
                &RedriveDoc {
                    job,
                    #[cfg(feature = "schedules")]
                    key,
                    redriven,
                },
            ))
        }
        AdminRoute::Pause { .. } | AdminRoute::Resume { .. } => {
            let pause = matches!(route, AdminRoute::Pause { .. });
            let before = status(coord, spec, now).await?;
            let changed = before.paused != pause;
            if changed {
                let done = if pause {
                    coord.pause(spec, now).await
                } else {
                    coord.resume(spec, now).await
                };
                done.map_err(|e| {
                    coord_error(spec, if pause { "pausing" } else { "resuming" }, &e)
                })?;
            }
            Ok(Reply::json(
                200,
                &PauseDoc {
                    job,
                    #[cfg(feature = "schedules")]
                    key,
                    paused: pause,
                    changed,
                },
            ))
        }
        AdminRoute::Backfill {
            from, to, dry_run, ..
        } => {
            let slots = coord
                .backfill(spec, *from, *to, now, *dry_run)
                .await
                .map_err(|e| coord_error(spec, "backfilling", &e))?;
            Ok(Reply::json(
                200,
                &BackfillDoc {
                    job,
                    #[cfg(feature = "schedules")]
                    key,
                    dry_run: *dry_run,
                    slots,
                },
            ))
        }
        _ => Err(Reply::error(
            500,
            ErrorKind::Internal,
            "not an operation on a job's record",
        )),
    }
}

/// The job's next `count` slots after `now` with their DST marks.
pub(crate) fn next_doc(spec: &JobSpec, now: Timestamp, count: usize) -> NextDoc {
    let zone = spec.schedule.zone();
    // A slot whose jittered start is still to come is listed too.
    let started = spec.due_until(now);
    let from = match spec.start_at {
        Some(start) if start > started => start
            .checked_sub(jiff::SignedDuration::from_nanos(1))
            .unwrap_or(start),
        _ => started,
    };
    let slots = spec
        .schedule
        .iter_after(from)
        .take_while(|o| spec.end_at.is_none_or(|end| o.instant < end))
        .take(count)
        .map(|o| {
            let c = o.local;
            NextSlot {
                slot: o.instant,
                starts: spec.start_of(o.instant),
                local: format!(
                    "{:04}-{:02}-{:02}T{:02}:{:02}",
                    c.year, c.month, c.day, c.hour, c.minute
                ),
                offset_seconds: zone.offset_at(o.instant.as_second()),
                kind: match o.kind {
                    SlotKind::Regular => "regular",
                    SlotKind::ShiftedFromGap => "shifted_from_gap",
                    SlotKind::SecondPass => "second_pass",
                }
                .to_string(),
            }
        })
        .collect();
    NextDoc {
        job: spec.name.as_str().to_string(),
        now,
        timezone: spec.timezone.clone(),
        dst: explain_dst(&spec.schedule),
        jitter: (!spec.jitter.is_zero()).then(|| format_duration(spec.jitter)),
        slots,
    }
}

impl DlqDoc {
    /// A list without letters yet, read at `now` from `store` (as
    /// [`StatusDoc::store`] names it).
    pub fn new(now: Timestamp, store: Option<String>) -> DlqDoc {
        DlqDoc {
            now,
            store,
            dead_letters: Vec::new(),
            dropped: BTreeMap::new(),
            more_dead_runs: BTreeMap::new(),
        }
    }

    /// Adds the dead letters of one job's record (as `Operator::status`
    /// returns it). [`sort`](DlqDoc::sort) once all are in.
    pub fn add_job(&mut self, spec: &JobSpec, state: JobState) {
        let name = spec.name.as_str();
        self.dead_letters
            .extend(state.dead.into_iter().map(|letter| DlqEntry {
                job: name.to_string(),
                slot_id: SlotId::new(spec, letter.slot).to_string(),
                key: None,
                letter,
            }));
        if state.counters.dead_dropped > 0 {
            self.dropped
                .insert(name.to_string(), state.counters.dead_dropped);
        }
    }

    /// Puts the letters in the document's order: by job, then slot (a
    /// dynamic job's keyed runs by key).
    pub fn sort(&mut self) {
        self.dead_letters
            .sort_by(|a, b| (&a.job, &a.key, a.letter.slot).cmp(&(&b.job, &b.key, b.letter.slot)));
    }
}

/// The summary of one job from its record (as `Operator::status` returns
/// it at `now`). `recorded` says whether the store holds a record of the
/// job; `None` infers it from `state` (see [`execute`]), for a caller that
/// cannot ask.
pub fn job_report(
    spec: &JobSpec,
    state: JobState,
    recorded: Option<bool>,
    now: Timestamp,
) -> JobReport {
    let verdict = health::assess(spec, &state, now);
    let c = &state.counters;
    // Slots that reached their start (jitter holds a slot back until it).
    let started = spec.due_until(now);
    let due = spec
        .schedule
        .next_after(state.cursor)
        .filter(|s| *s <= started && spec.in_window(*s) && !state.paused)
        .map(|oldest| Due {
            oldest,
            count: spec.schedule.count_between(state.cursor, started).max(1),
        });
    JobReport {
        job: spec.name.as_str().to_string(),
        schedule: spec.schedule_text.clone(),
        timezone: spec.timezone.clone(),
        explanation: match cronslot_core::explain::explain_jitter(spec) {
            Some(jitter) => format!("{}. {jitter}", explain_cron(spec.schedule.cron())),
            None => explain_cron(spec.schedule.cron()),
        },
        action: match spec.action {
            Action::Function => "function",
            Action::Command { .. } => "command",
            Action::Http { .. } => "http",
        }
        .to_string(),
        recorded: recorded.unwrap_or_else(|| inferred_recorded(spec, &state, now)),
        paused: state.paused,
        health: verdict.health,
        stale: verdict.is_stale(),
        stale_after_seconds: verdict.bound.map(|b| b.as_secs()),
        stale_at: verdict.stale_at,
        last_success: state.last_success.as_ref().map(|r| r.finished_at),
        last_success_slot: state.last_success.as_ref().map(|r| r.slot),
        next_slot: health::next_slot(spec, now),
        late_since: health::late_since(spec, &state, now),
        due,
        live_leases: state.leases.len(),
        fence: state.fence,
        pending: state.pending.len(),
        runs: c.runs,
        succeeded: c.succeeded,
        failed: c.failed,
        missed: by_reason(
            MissReason::ALL
                .iter()
                .map(|r| (r.as_str(), c.missed.get(r).copied().unwrap_or(0))),
        ),
        skipped: by_reason(
            [SkipReason::Paused, SkipReason::OutsideWindow]
                .iter()
                .map(|r| (r.as_str(), c.skipped.get(r).copied().unwrap_or(0))),
        ),
        dead_letters: state.dead.len(),
        record: state,
    }
}

/// Counts by reason name. (Inserted one by one: `collect` would sort the
/// pairs first, with a sort of its own per iterator type.)
fn by_reason<'a>(counts: impl Iterator<Item = (&'a str, u64)>) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for (reason, n) in counts {
        out.insert(reason.to_string(), n);
    }
    out
}

/// A job without a record gets, from `status`, exactly the record a first
/// tick at `now` would create; any stored record differs from it (it was
/// created before `now`, or has run, or moved its cursor).
fn inferred_recorded(spec: &JobSpec, state: &JobState, now: Timestamp) -> bool {
    *state != JobState::new(spec.name.as_str(), &spec.spec_hash(), now, spec.paused)
}

async fn health_reply<C: Operator>(manifest: &Manifest, coord: &C, now: Timestamp) -> Reply {
    let mut doc = HealthDoc {
        status: HealthState::Ok,
        now,
        checked: 0,
        stale: Vec::new(),
        unchecked: Vec::new(),
        errors: Vec::new(),
    };
    for spec in &manifest.jobs {
        let job = spec.name.as_str().to_string();
        let state = match coord.status(spec, now).await {
            Ok(state) => state,
            Err(e) => {
                doc.errors.push(JobErrorDoc {
                    job,
                    message: format!("cannot read the job's state: {e}"),
                });
                continue;
            }
        };
        if !inferred_recorded(spec, &state, now) {
            doc.unchecked.push(UncheckedJob {
                job,
                reason: "not_recorded".to_string(),
            });
            continue;
        }
        let verdict = health::assess(spec, &state, now);
        match verdict.health {
            Health::Paused | Health::NoBound => doc.unchecked.push(UncheckedJob {
                job,
                reason: verdict.health.as_str().to_string(),
            }),
            Health::Stale => {
                doc.checked += 1;
                doc.stale.push(StaleJob {
                    job,
                    last_success: state.last_success.as_ref().map(|r| r.finished_at),
                    stale_after_seconds: verdict.bound.map(|b| b.as_secs()),
                    stale_at: verdict.stale_at,
                });
            }
            Health::Ok | Health::NeverSucceeded => doc.checked += 1,
            // A verdict newer than this crate: not checked either, with its
            // name as the reason.
            _ => doc.unchecked.push(UncheckedJob {
                job,
                reason: verdict.health.as_str().to_string(),
            }),
        }
    }
    let status = if !doc.errors.is_empty() {
        doc.status = HealthState::Unknown;
        503
    } else if !doc.stale.is_empty() {
        doc.status = HealthState::Stale;
        503
    } else {
        200
    };
    Reply::json(status, &doc)
}

/// The dead-letter list of `specs` (manifest jobs), sorted.
pub(crate) async fn dlq_doc<C: Operator>(
    specs: Vec<&JobSpec>,
    coord: &C,
    now: Timestamp,
) -> Result<DlqDoc, Reply> {
    let mut doc = DlqDoc::new(now, None);
    for spec in specs {
        doc.add_job(spec, status(coord, spec, now).await?);
    }
    doc.sort();
    Ok(doc)
}

/// The jobs of `page` among `specs` (manifest order), the cursor of the
/// page after it (`None`: this is the last), and how many jobs the search
/// matches in all. Only the page's jobs are read afterwards.
fn page_of<'m>(
    specs: Vec<&'m JobSpec>,
    page: &JobPage,
) -> (Vec<&'m JobSpec>, Option<String>, usize) {
    // Job names are lowercase (`JobName`): only the search is lowered.
    let wanted = page.search.as_ref().map(|s| s.to_lowercase());
    let (mut matched, mut paged, mut more) = (0, Vec::new(), false);
    let mut past = page.after.is_none();
    // One pass: count the matches, keep the page's after the cursor.
    for spec in specs {
        let name = spec.name.as_str();
        if wanted.as_deref().is_none_or(|w| name.contains(w)) {
            matched += 1;
            if past {
                if paged.len() < page.limit {
                    paged.push(spec);
                } else {
                    more = true;
                }
            }
        }
        past = past || page.after.as_deref() == Some(name);
    }
    let cursor = more
        .then(|| paged.last().map(|s| s.name.as_str().to_string()))
        .flatten();
    (paged, cursor, matched)
}

fn select<'m>(manifest: &'m Manifest, job: Option<&JobName>) -> Result<Vec<&'m JobSpec>, Reply> {
    match job {
        Some(name) => Ok(vec![one(manifest, name)?]),
        None => Ok(manifest.jobs.iter().collect()),
    }
}

fn one<'m>(manifest: &'m Manifest, job: &JobName) -> Result<&'m JobSpec, Reply> {
    manifest.job(job.as_str()).ok_or_else(|| {
        Reply::error(
            404,
            ErrorKind::NotFound,
            format!("no job {:?} in the manifest", job.as_str()),
        )
    })
}

async fn status<C: Operator>(coord: &C, spec: &JobSpec, now: Timestamp) -> Result<JobState, Reply> {
    coord
        .status(spec, now)
        .await
        .map_err(|e| coord_error(spec, "reading", &e))
}

/// A coordinator error as a reply: the core's refusals of what was asked
/// are 400 (with the refusal for clients to rebuild), a refused write 409,
/// an unavailable or contended store 503, anything else 500.
pub(crate) fn coord_error(spec: &JobSpec, doing: &str, e: &CoordError) -> Reply {
    // A schedule's record is named `job/key`: the message says which.
    #[cfg(feature = "schedules")]
    let record = spec.record_name();
    #[cfg(feature = "schedules")]
    let name: &str = &record;
    #[cfg(not(feature = "schedules"))]
    let name = spec.name.as_str();
    coord_reply(format!("{doing} job {name:?}: {e}"), e)
}

/// [`coord_error`] with the message written by the caller (a schedule's
/// routes name the schedule, not a job).
pub(crate) fn coord_reply(message: String, e: &CoordError) -> Reply {
    let reply = Reply::error_doc(coord_error_doc(message, e));
    if reply.status == 503 {
        reply.with_header("Retry-After", "5")
    } else {
        reply
    }
}

/// The error document of [`coord_reply`].
pub(crate) fn coord_error_doc(message: String, e: &CoordError) -> ErrorDoc {
    match e {
        CoordError::Backfill(b) => {
            let mut doc = ErrorDoc::new(400, ErrorKind::Backfill, message);
            doc.backfill = Some(b.clone());
            doc
        }
        CoordError::Trigger(t) => {
            let mut doc = ErrorDoc::new(400, ErrorKind::Trigger, message);
            doc.trigger = Some(t.clone());
            doc
        }
        CoordError::Refused(_) => ErrorDoc::new(409, ErrorKind::Refused, message),
        CoordError::Contention { .. } => ErrorDoc::new(503, ErrorKind::Unavailable, message),
        #[cfg(feature = "schedules")]
        CoordError::NoSchedule { .. } => ErrorDoc::new(404, ErrorKind::NotFound, message),
        CoordError::Store(s) => match s.kind {
            StoreErrorKind::Unavailable | StoreErrorKind::Ambiguous => {
                ErrorDoc::new(503, ErrorKind::Unavailable, message)
            }
            StoreErrorKind::Corrupt | StoreErrorKind::Other => {
                ErrorDoc::new(500, ErrorKind::Internal, message)
            }
            // A kind newer than this crate: not known to be worth retrying.
            _ => ErrorDoc::new(500, ErrorKind::Internal, message),
        },
        // An error newer than this crate: its transience decides.
        _ if e.is_transient() => ErrorDoc::new(503, ErrorKind::Unavailable, message),
        _ => ErrorDoc::new(500, ErrorKind::Internal, message),
    }
}

/// The names of the manifest's dynamic jobs, for a status of every job
/// (`all`); none for a status of one job.
pub fn dynamic_jobs(manifest: &Manifest, all: bool) -> Vec<String> {
    if !all {
        return Vec::new();
    }
    manifest
        .templates
        .iter()
        .map(|t| t.name.as_str().to_string())
        .collect()
}
