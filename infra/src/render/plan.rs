//! What each platform gets for each job: a dedicated trigger with its exact
//! translation, or the tick; the retry bound of a dedicated trigger; the
//! staleness alarm's window. `render` writes these, `check` compares a
//! template with them.

use std::time::Duration;

use cronslot_core::manifest::{JobSpec, Manifest, format_duration};
use cronslot_core::schedule::Schedule;
use cronslot_core::translate::{Platform, dedicated};
use jiff::Timestamp;

/// 2026-01-01T00:00:00Z: where rendering measures schedules (gaps, the
/// staleness window), so the same manifest renders the same bytes on any
/// day. Cron patterns repeat with the calendar: any year shows the same
/// gaps, up to DST details.
pub const REFERENCE_SECOND: i64 = 1_767_225_600;

/// EventBridge Scheduler's bounds on a target's retry policy.
pub const MIN_EVENT_AGE: u64 = 60;
pub const MAX_EVENT_AGE: u64 = 86_400;
pub const MAX_RETRY_ATTEMPTS: u32 = 185;

/// CloudWatch: a period of an hour or more may span up to seven days of
/// evaluation, a shorter one up to a day.
pub const MAX_ALARM_WINDOW: u64 = 7 * 86_400;

/// The tick's expression on each platform.
pub const EVENTBRIDGE_TICK: &str = "rate(1 minute)";
pub const CLOUDFLARE_TICK: &str = "* * * * *";

const YEAR: i64 = 365 * 86_400;

/// The instant a job's schedule is measured from: 2026-01-01, or its
/// `start_at` when later.
pub fn reference(spec: &JobSpec) -> Timestamp {
    let base = Timestamp::from_second(REFERENCE_SECOND).unwrap_or(Timestamp::UNIX_EPOCH);
    match spec.start_at {
        Some(start) if start > base => start,
        _ => base,
    }
}

/// The shortest gap between consecutive slots over a year from `from` (at
/// least one gap, however far apart the slots are). `None` with fewer than
/// two slots.
pub fn shortest_gap(schedule: &Schedule, from: Timestamp) -> Option<Duration> {
    let limit = from.as_second().saturating_add(YEAR);
    let mut previous = schedule.next_after(from)?;
    let mut shortest: Option<i64> = None;
    while let Some(next) = schedule.next_after(previous) {
        let gap = next.as_second() - previous.as_second();
        shortest = Some(shortest.map_or(gap, |s| s.min(gap)));
        // Minute granularity: nothing is shorter than a minute.
        if gap <= 60 || next.as_second() > limit {
            break;
        }
        previous = next;
    }
    shortest.map(|s| Duration::from_secs(s.unsigned_abs()))
}

/// The retry policy of a dedicated job's Scheduler target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerRetry {
    /// `MaximumEventAgeInSeconds`.
    pub max_event_age: u64,
    /// `MaximumRetryAttempts`.
    pub max_attempts: u32,
    /// The shortest gap between slots, when it bounds retries (it does
    /// unless the job sets `retry.past_next_slot`).
    pub next_slot_bound: Option<u64>,
    /// Why the age is what it is, for the template's comments.
    pub reason: String,
}

/// The longest a delivery of a slot may be retried: never past the next
/// slot (unless the job allows retries past it), never past the starting
/// deadline (a later delivery finds the slot missed), within Scheduler's
/// 60 s to 24 h.
pub fn scheduler_retry(spec: &JobSpec) -> SchedulerRetry {
    let gap = shortest_gap(&spec.schedule, reference(spec)).map(|d| d.as_secs());
    let next_slot_bound = gap.filter(|_| !spec.retry.past_next_slot);
    let deadline = spec.starting_deadline.as_secs();
    let mut age = deadline.min(MAX_EVENT_AGE);
    let mut reason = format!(
        "the starting deadline ({})",
        format_duration(spec.starting_deadline)
    );
    if let Some(gap) = next_slot_bound.filter(|gap| *gap < age) {
        age = gap;
        reason = format!(
            "the next slot (slots are {} apart at the closest)",
            format_duration(Duration::from_secs(gap))
        );
    }
    if deadline > MAX_EVENT_AGE && age == MAX_EVENT_AGE {
        reason = "EventBridge Scheduler's maximum (24h)".to_string();
    }
    if age < MIN_EVENT_AGE {
        age = MIN_EVENT_AGE;
        reason = "EventBridge Scheduler's minimum (60 s)".to_string();
    }
    SchedulerRetry {
        max_event_age: age,
        max_attempts: MAX_RETRY_ATTEMPTS,
        next_slot_bound,
        reason,
    }
}

/// How a job is triggered on a platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Its own platform trigger.
    Dedicated {
        /// The platform's expression (`cron(...)` or five fields).
        expression: String,
        /// The zone to declare (always `UTC` on Cloudflare).
        timezone: String,
    },
    /// Served by the tick; `note` says why a dedicated job is here.
    Tick { note: Option<String> },
}

impl Plan {
    pub fn is_dedicated(&self) -> bool {
        matches!(self, Plan::Dedicated { .. })
    }
}

/// The job's trigger on `platform`: dedicated when the manifest asks for
/// it and the translation is exact, else the tick (with the reasons).
pub fn plan(spec: &JobSpec, platform: Platform) -> Plan {
    match dedicated(spec, platform) {
        None => Plan::Tick { note: None },
        Some(Ok(t)) => Plan::Dedicated {
            expression: t.expression,
            timezone: t.timezone,
        },
        Some(Err(reasons)) => {
            let reasons: Vec<String> = reasons.iter().map(ToString::to_string).collect();
            Plan::Tick {
                note: Some(format!(
                    "job {:?} is dedicated in the manifest but runs on the tick: {:?} in {} has no exact {} translation: {}",
                    spec.name.as_str(),
                    spec.schedule_text,
                    spec.timezone,
                    platform.name(),
                    reasons.join("; ")
                )),
            }
        }
    }
}

/// A job's staleness alarm: no success within `window`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlarmPlan {
    Alarm {
        /// The window, rounded up to whole minutes (CloudWatch periods are
        /// multiples of 60 s).
        period: u64,
    },
    /// No alarm can express the window; `reason` says why.
    None { reason: String },
}

/// The staleness window of a job and the alarm that watches it.
pub fn alarm_plan(spec: &JobSpec) -> AlarmPlan {
    let Some(window) = spec.stale_after_at(reference(spec)) else {
        return AlarmPlan::None {
            reason: format!(
                "job {:?} has fewer than two slots after {}: no staleness window",
                spec.name.as_str(),
                reference(spec)
            ),
        };
    };
    let period = window.as_secs().div_ceil(60).max(1) * 60;
    if period > MAX_ALARM_WINDOW {
        return AlarmPlan::None {
            reason: format!(
                "job {:?}: its staleness window ({}) is longer than a CloudWatch alarm can watch (7 days), so it has no alarm; watch it with `cronslot status` (the STALE health)",
                spec.name.as_str(),
                format_duration(window)
            ),
        };
    }
    AlarmPlan::Alarm { period }
}

/// The Lambda function's timeout: every job's lease must cover an
/// invocation plus its skew margin (the adapter refuses a job whose lease
/// does not), and Lambda allows at most 15 minutes.
pub fn function_timeout(manifest: &Manifest) -> u64 {
    // A dynamic job's schedules run in the same function, on its lease.
    let leases = manifest.jobs.iter().map(|j| (j.lease, j.skew_margin));
    let templates = manifest.templates.iter().map(|t| (t.lease, t.skew_margin));
    leases
        .chain(templates)
        .map(|(lease, skew)| lease.saturating_sub(skew).as_secs())
        .min()
        .unwrap_or(900)
        .clamp(1, 900)
}

/// The wrangler cron list: the tick first, then each dedicated job's exact
/// Cloudflare cron, deduplicated, while the list stays within `limit`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloudflareCrons {
    /// `(cron, jobs it serves)`, the tick first (serving no job by name).
    pub crons: Vec<(String, Vec<String>)>,
    /// Jobs on the tick, with why a dedicated one is there.
    pub notes: Vec<String>,
}

pub fn cloudflare_crons(manifest: &Manifest, limit: u32) -> CloudflareCrons {
    let mut crons: Vec<(String, Vec<String>)> = vec![(CLOUDFLARE_TICK.to_string(), Vec::new())];
    let mut notes = Vec::new();
    for spec in &manifest.jobs {
        let name = spec.name.as_str().to_string();
        match plan(spec, Platform::Cloudflare) {
            Plan::Tick { note } => notes.extend(note),
            Plan::Dedicated { expression, .. } => {
                if let Some((_, jobs)) = crons.iter_mut().find(|(c, _)| *c == expression) {
                    jobs.push(name);
                } else if crons.len() < limit as usize {
                    crons.push((expression, vec![name]));
                } else {
                    notes.push(format!(
                        "job {name:?} runs on the tick: the account's cron trigger limit ({limit}, counting the tick) is reached; raise --cron-limit on the Paid plan (250)"
                    ));
                }
            }
        }
    }
    CloudflareCrons { crons, notes }
}

/// FNV-1a, 64 bits, of the manifest's bytes, as 16 lowercase hex digits:
/// which manifest a template was rendered from.
pub fn manifest_hash(text: &str) -> String {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let hash = text
        .bytes()
        .fold(OFFSET, |h, b| (h ^ u64::from(b)).wrapping_mul(PRIME));
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::manifest::parse_manifest;

    fn manifest(text: &str) -> Manifest {
        parse_manifest(text, "test.toml").expect("valid manifest")
    }

    #[test]
    fn fnv_reference_vectors() {
        assert_eq!(manifest_hash(""), "cbf29ce484222325");
        assert_eq!(manifest_hash("foobar"), "85944171f73967e8");
    }

    #[test]
    fn retry_age_is_bounded_by_the_next_slot_and_the_deadline() {
        let m = manifest(
            r#"
            [[job]]
            name = "every-5"
            schedule = "*/5 * * * *"
            trigger = "dedicated"
            [[job]]
            name = "daily"
            schedule = "0 2 * * *"
            trigger = "dedicated"
            [[job]]
            name = "minutely"
            schedule = "* * * * *"
            starting_deadline = "30s"
            "#,
        );
        let r = scheduler_retry(&m.jobs[0]);
        assert_eq!(r.max_event_age, 300);
        assert_eq!(r.next_slot_bound, Some(300));
        let r = scheduler_retry(&m.jobs[1]);
        assert_eq!(r.max_event_age, 600, "starting deadline 10m");
        let r = scheduler_retry(&m.jobs[2]);
        assert_eq!(r.max_event_age, 60);
    }

    #[test]
    fn dst_days_count_in_the_shortest_gap() {
        let m = manifest(
            r#"
            [[job]]
            name = "berlin"
            schedule = "0 2 * * *"
            timezone = "Europe/Berlin"
            "#,
        );
        let gap = shortest_gap(&m.jobs[0].schedule, reference(&m.jobs[0]));
        assert_eq!(gap, Some(Duration::from_secs(23 * 3600)));
    }

    #[test]
    fn cloudflare_crons_dedupe_and_respect_the_limit() {
        let m = manifest(
            r#"
            [defaults]
            trigger = "dedicated"
            [[job]]
            name = "a"
            schedule = "0 9 * * MON-FRI"
            [[job]]
            name = "b"
            schedule = "0 9 * * 1-5"
            [[job]]
            name = "c"
            schedule = "30 * * * *"
            [[job]]
            name = "d"
            schedule = "15 * * * *"
            [[job]]
            name = "berlin"
            schedule = "0 9 * * *"
            timezone = "Europe/Berlin"
            "#,
        );
        let plan = cloudflare_crons(&m, 3);
        let crons: Vec<&str> = plan.crons.iter().map(|(c, _)| c.as_str()).collect();
        assert_eq!(crons, ["* * * * *", "0 9 * * 2-6", "30 * * * *"]);
        assert_eq!(plan.crons[1].1, ["a", "b"]);
        assert_eq!(plan.notes.len(), 2, "{:?}", plan.notes);
        assert!(plan.notes[0].contains("\"d\""), "{:?}", plan.notes);
        assert!(plan.notes[1].contains("UTC"), "{:?}", plan.notes);
    }

    #[test]
    fn alarm_windows() {
        let m = manifest(
            r#"
            [[job]]
            name = "daily"
            schedule = "0 2 * * *"
            [[job]]
            name = "monthly"
            schedule = "0 2 1 * *"
            "#,
        );
        // A day + the 15m lease + the 10m starting deadline.
        assert_eq!(
            alarm_plan(&m.jobs[0]),
            AlarmPlan::Alarm {
                period: 86_400 + 25 * 60
            }
        );
        assert!(matches!(alarm_plan(&m.jobs[1]), AlarmPlan::None { .. }));
    }
}
