//! A dynamic job: a `[[job]]` with `dynamic = true` and no `schedule`. It
//! is a template for its schedules, which are data ([`crate::schedules`]):
//! the manifest gives what runs and every policy, each schedule gives
//! when.

use std::time::Duration;

use jiff::Timestamp;

use super::{
    Action, CatchUp, Delivery, HistoryLimits, JobName, JobSpec, Overlap, RetryPolicy, Trigger,
};
use crate::cron::CronExpr;
use crate::schedule::{DstPolicy, Schedule, Zone};
use crate::schedules::{ScheduleKey, ScheduleSpec, SpecProblem, When};

/// A dynamic job, resolved against `[defaults]`. Each field has the meaning
/// of the [`JobSpec`] field of the same name; what a `JobSpec` has beyond
/// them (the schedule, its zone and text, the key) comes from a schedule
/// ([`JobTemplate::for_schedule`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobTemplate {
    /// The job's name: the `job` of its schedules' `job/key`.
    pub name: JobName,
    /// How the schedules' slots reach the job.
    pub trigger: Trigger,
    /// `lease`.
    pub lease: Duration,
    /// `starting_deadline`.
    pub starting_deadline: Duration,
    /// `catch_up`.
    pub catch_up: CatchUp,
    /// `max_catch_up`.
    pub max_catch_up: u32,
    /// `overlap` with `max_concurrency`.
    pub overlap: Overlap,
    /// The `retry` table.
    pub retry: RetryPolicy,
    /// `delivery`.
    pub delivery: Delivery,
    /// How every schedule's expression behaves at DST transitions.
    pub dst: DstPolicy,
    /// `skew_margin`.
    pub skew_margin: Duration,
    /// `jitter`: every schedule's, unless the schedule gives its own.
    pub jitter: Duration,
    /// Every schedule starts paused (its record is created paused).
    pub paused: bool,
    /// The window of every schedule: a schedule's own `start` and `end`
    /// narrow it, never widen it.
    pub start_at: Option<Timestamp>,
    /// See `start_at`.
    pub end_at: Option<Timestamp>,
    /// `stale_after`, for each schedule.
    pub stale_after: Option<Duration>,
    /// The `history` table, for each schedule's record.
    pub history: HistoryLimits,
    /// What runs for a slot of any of its schedules.
    pub action: Action,
    /// `key_retention`: how long a keyed run's key is remembered after the
    /// run ends (at least [`MIN_KEY_RETENTION`](super::MIN_KEY_RETENTION)).
    pub key_retention: std::time::Duration,
    /// Zones a schedule's `timezone` may name beyond the build's tz
    /// database: those a precompiled manifest carries as TZif data. A
    /// Worker links no tz database (core's feature `tzdb`), so these are
    /// the zones its schedules can use; empty where the database is
    /// linked, which knows every zone.
    pub zones: Vec<Zone>,
}

/// How long the window of a one-off (`at`) is: one minute, so that the
/// yearly expression of its minute has exactly one slot in it.
const ONE_OFF_WINDOW: Duration = Duration::from_secs(60);

impl JobTemplate {
    /// The spec a schedule of this job runs with: the template's action
    /// and policies, the schedule's slots in its zone, the window both
    /// allow, paused when either says so, and the key
    /// ([`JobSpec::record_name`] is then `job/key`).
    ///
    /// A one-off (`at`) is the expression of its minute in UTC with a
    /// window of that minute, so it has exactly one slot, at `at`.
    /// Refused (naming the field) when the zone is not known here: a spec
    /// checked on one machine can meet a tz database without its zone on
    /// another.
    pub fn for_schedule(
        &self,
        key: &ScheduleKey,
        spec: &ScheduleSpec,
    ) -> Result<JobSpec, SpecProblem> {
        let problem = |field: &str, message: String| SpecProblem {
            field: field.to_string(),
            message,
        };
        let (schedule, schedule_text, timezone, start, end) = match &spec.when {
            When::Cron(text) => {
                let zone = self
                    .zone(&spec.timezone)
                    .map_err(|message| problem("timezone", message))?;
                let cron = CronExpr::parse(text).map_err(|e| {
                    problem("cron", format!("invalid cron expression {text:?}: {e}"))
                })?;
                (
                    Schedule::new(cron, zone, self.dst),
                    text.clone(),
                    spec.timezone.clone(),
                    spec.start,
                    spec.end,
                )
            }
            When::At(at) => {
                let text = one_off_expression(*at);
                let cron = CronExpr::parse(&text)
                    .map_err(|e| problem("at", format!("cannot plan at {at}: {e}")))?;
                let end = add(*at, ONE_OFF_WINDOW);
                (
                    Schedule::new(cron, Zone::utc(), self.dst),
                    text,
                    "UTC".to_string(),
                    latest(spec.start, Some(*at)),
                    earliest(spec.end, Some(end)),
                )
            }
        };
        let jitter = spec.jitter.unwrap_or(self.jitter);
        if let Some(message) = super::rules::jitter_problem(jitter)
            .or_else(|| super::rules::jitter_deadline_problem(jitter, self.starting_deadline))
        {
            return Err(problem("jitter", message));
        }
        Ok(self.clone().into_spec(Timing {
            schedule,
            schedule_text,
            timezone,
            start_at: latest(self.start_at, start),
            end_at: earliest(self.end_at, end),
            paused: self.paused || spec.paused,
            jitter,
            key: Some(key.clone()),
            #[cfg(feature = "schedules")]
            payload: spec.payload.as_ref().map(|p| std::sync::Arc::from(p.get())),
        }))
    }

    /// The zone `name`: one this template carries ([`JobTemplate::zones`]),
    /// else the tz database's. Refused with what this build knows.
    fn zone(&self, name: &str) -> Result<Zone, String> {
        if let Some(zone) = self.zones.iter().find(|z| z.name() == name) {
            return Ok(zone.clone());
        }
        match Zone::get(name) {
            Ok(zone) => Ok(zone),
            Err(_) if !self.zones.is_empty() || !cfg!(feature = "tzdb") => {
                let mut known: Vec<&str> = self.zones.iter().map(Zone::name).collect();
                known.push("UTC");
                Err(format!(
                    "{name:?} is not a zone this build knows: it carries no tz database, only \
                     the zones of its precompiled manifest ({}); its build script adds \
                     zones with cronslot_core::build_script::precompile_manifest_with_zones",
                    known.join(", ")
                ))
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// The spec of a job with these policies and `timing` (the template's
    /// own window and pause are not looked at: `timing` has the final ones).
    pub(super) fn into_spec(self, timing: Timing) -> JobSpec {
        JobSpec {
            name: self.name,
            schedule: timing.schedule,
            schedule_text: timing.schedule_text,
            timezone: timing.timezone,
            trigger: self.trigger,
            lease: self.lease,
            starting_deadline: self.starting_deadline,
            catch_up: self.catch_up,
            max_catch_up: self.max_catch_up,
            overlap: self.overlap,
            retry: self.retry,
            delivery: self.delivery,
            skew_margin: self.skew_margin,
            jitter: timing.jitter,
            paused: timing.paused,
            start_at: timing.start_at,
            end_at: timing.end_at,
            stale_after: self.stale_after,
            history: self.history,
            action: self.action,
            key: timing.key,
            #[cfg(feature = "schedules")]
            schedule_version: None,
            #[cfg(feature = "schedules")]
            payload: timing.payload,
            #[cfg(feature = "schedules")]
            earlier_payloads: Vec::new(),
        }
    }
}

/// What a [`JobSpec`] has beyond its template's policies: when its slots
/// are, and which schedule it is of.
pub(super) struct Timing {
    pub schedule: Schedule,
    pub schedule_text: String,
    pub timezone: String,
    pub start_at: Option<Timestamp>,
    pub end_at: Option<Timestamp>,
    pub paused: bool,
    pub jitter: Duration,
    pub key: Option<ScheduleKey>,
    #[cfg(feature = "schedules")]
    pub payload: Option<std::sync::Arc<str>>,
}

/// `M H D MON *` of `at` in UTC: every year at that minute (the window
/// keeps the one of `at`'s year).
fn one_off_expression(at: Timestamp) -> String {
    let (civil, _) = Zone::utc().civil_at(at.as_second());
    format!(
        "{} {} {} {} *",
        civil.minute, civil.hour, civil.day, civil.month
    )
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(d)
        .ok()
        .and_then(|d| t.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// The later of two optional lower bounds.
fn latest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The earlier of two optional upper bounds.
fn earliest(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Timestamp> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
