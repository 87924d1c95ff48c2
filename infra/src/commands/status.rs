//! `cronslot status`: each job's health, last success, next slot, live
//! leases, fence, counts and newest dead letters, as text or JSON.
//!
//! Status only reads: it exits 0 whatever the jobs' health (scripts read
//! the JSON `stale` field); 1 when the store fails; 2 on bad input, such as
//! a store that does not exist yet.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use clap::Args;
use cronslot_core::coord::{
    CoordError, DeadLetter, JobState, Lease, MissReason, Operator, Origin, SkipReason,
};
use cronslot_core::health::{self, Health};
use cronslot_core::manifest::{Action, JobSpec, format_duration};
use jiff::Timestamp;
use serde::Serialize;

use super::dlq::{DeadView, dead_view};
use crate::cli::{Format, StoreArgs};
use crate::exit::{Failure, coord_failure};
use crate::format::{
    ERROR_CELL_CHARS, Ts, approx, instant_text, one_line, relative, slot_id, to_json, utc,
};
use crate::store::{Records, Session, wait, with_backend};

#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Only this job.
    #[arg(long, value_name = "NAME")]
    pub job: Option<String>,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// Dead letters `status` lists per job (newest first); `dlq list` shows all.
const STATUS_DEAD_LETTERS: usize = 3;

fn origin_str(origin: Origin) -> &'static str {
    match origin {
        Origin::Schedule => "schedule",
        Origin::Backfill => "backfill",
        Origin::Manual => "manual",
        Origin::Redrive => "redrive",
    }
}

fn action_str(action: &Action) -> &'static str {
    match action {
        Action::Function => "function",
        Action::Command { .. } => "command",
        Action::Http { .. } => "http",
    }
}

/// `cronslot status --format json` prints one object:
///
/// ```text
/// {
///   "now": "2026-03-08T07:00:42Z",        // the instant the status is computed at
///   "store": "sqlite:cronslot.db",
///   "jobs": [ {                            // manifest order (or the --job one)
///     "job": "heartbeat",
///     "schedule": "* * * * *", "timezone": "UTC",
///     "action": "command",                 // command | http | function
///     "recorded": true,                    // false: no record in the store yet ("no runs yet")
///     "paused": false,
///     "health": "ok",                      // ok | stale | never_succeeded | paused | no_bound
///     "stale": false,
///     "stale_after_seconds": 1020,         // the bound (stale_after, or derived); null: none
///     "stale_at": "2026-03-08T07:17:01Z",  // when it is (was) stale without a success; null: never
///     "last_success": null | { "slot", "slot_id", "attempt", "fence", "owner",
///                              "started_at", "finished_at", "age_seconds" },
///     "next_slot": "2026-03-08T07:01:00Z", // next slot after now (null: none left)
///     "due": null | { "oldest": "…Z", "count": 1 },  // due slots no runner has claimed yet
///     "late_since": null | "…Z",           // nothing has claimed a slot since this one came due
///                                          // (a minute and the skew margin ago): the dashboard's "late"
///     "fence": 12, "cursor": "…Z",
///     "created_at": "…Z" | null,           // null when not recorded
///     "leases":  [ { "owner", "slot", "slot_id", "fence", "attempt", "origin",
///                    "claimed_at", "expires_at" } ],
///     "pending": [ { "slot", "slot_id", "attempt", "not_before", "origin", "last_error" } ],
///     "counts": { "runs", "succeeded", "failed", "dead", "dead_dropped", "redriven", "backfilled",
///                 "missed":  { "catch_up", "clock_change", "downtime", "dst", "overlap" },
///                 "skipped": { "outside_window", "paused" } },
///     "dead_letters": { "count": 1, "dropped": 0,
///                       "newest": [ { "slot", "slot_id", "attempts", "fence", "died_at", "last_error" } ] },
///     "schedule_change": null | { "at", "from_hash", "to_hash" }
///   } ],
///   "not_in_manifest": [ "old-job" ]       // jobs with a record the manifest no longer has
/// }
/// ```
///
/// Field names are stable; instants are RFC 3339 UTC strings; `origin` is
/// `schedule | backfill | manual | redrive`; every reason key is always
/// present (0 when none).
#[derive(Serialize)]
struct StatusReport {
    now: Ts,
    store: String,
    jobs: Vec<JobStatus>,
    not_in_manifest: Vec<String>,
}

#[derive(Serialize)]
struct JobStatus {
    job: String,
    schedule: String,
    timezone: String,
    action: &'static str,
    recorded: bool,
    paused: bool,
    health: Health,
    stale: bool,
    stale_after_seconds: Option<u64>,
    stale_at: Option<Ts>,
    last_success: Option<SuccessView>,
    next_slot: Option<Ts>,
    due: Option<DueView>,
    late_since: Option<Ts>,
    fence: u64,
    cursor: Ts,
    created_at: Option<Ts>,
    leases: Vec<LeaseView>,
    pending: Vec<PendingView>,
    counts: CountsView,
    dead_letters: DeadSummary,
    schedule_change: Option<ChangeView>,
}

#[derive(Serialize)]
struct SuccessView {
    slot: Ts,
    slot_id: String,
    attempt: u32,
    fence: u64,
    owner: String,
    started_at: Ts,
    finished_at: Ts,
    age_seconds: i64,
}

#[derive(Serialize)]
struct DueView {
    oldest: Ts,
    count: u64,
}

#[derive(Serialize)]
struct LeaseView {
    owner: String,
    slot: Ts,
    slot_id: String,
    fence: u64,
    attempt: u32,
    origin: &'static str,
    claimed_at: Ts,
    expires_at: Ts,
}

#[derive(Serialize)]
struct PendingView {
    slot: Ts,
    slot_id: String,
    attempt: u32,
    not_before: Ts,
    origin: &'static str,
    last_error: Option<String>,
}

#[derive(Serialize)]
struct CountsView {
    runs: u64,
    succeeded: u64,
    failed: u64,
    dead: u64,
    dead_dropped: u64,
    redriven: u64,
    backfilled: u64,
    missed: BTreeMap<&'static str, u64>,
    skipped: BTreeMap<&'static str, u64>,
}

#[derive(Serialize)]
struct DeadSummary {
    /// Dead letters held now (redrive removes them).
    count: usize,
    /// Dropped from the capped list (still counted in `counts.dead`).
    dropped: u64,
    newest: Vec<DeadView>,
}

#[derive(Serialize)]
struct ChangeView {
    at: Ts,
    from_hash: String,
    to_hash: String,
}

fn lease_view(spec: &JobSpec, l: &Lease) -> LeaseView {
    LeaseView {
        owner: l.owner.clone(),
        slot: Ts(l.slot),
        slot_id: slot_id(spec, l.slot),
        fence: l.fence,
        attempt: l.attempt,
        origin: origin_str(l.origin),
        claimed_at: Ts(l.claimed_at),
        expires_at: Ts(l.expires_at),
    }
}

fn job_status(spec: &JobSpec, state: &JobState, recorded: bool, now: Timestamp) -> JobStatus {
    // The same rule as the Worker's health route and stale gauge.
    let verdict = health::assess(spec, state, now);
    let (health, bound, stale_at) = (verdict.health, verdict.bound, verdict.stale_at);
    let due = spec
        .schedule
        .next_after(state.cursor)
        .filter(|s| *s <= now && spec.in_window(*s) && !state.paused)
        .map(|oldest| DueView {
            oldest: Ts(oldest),
            count: spec.schedule.count_between(state.cursor, now).max(1),
        });
    let mut dead: Vec<&DeadLetter> = state.dead.iter().collect();
    dead.sort_by_key(|d| std::cmp::Reverse((d.died_at, d.slot)));
    let c = &state.counters;
    JobStatus {
        job: spec.name.as_str().to_string(),
        schedule: spec.schedule_text.clone(),
        timezone: spec.timezone.clone(),
        action: action_str(&spec.action),
        recorded,
        paused: state.paused,
        health,
        stale: health == Health::Stale,
        stale_after_seconds: bound.map(|b| b.as_secs()),
        stale_at: stale_at.map(Ts),
        last_success: state.last_success.as_ref().map(|r| SuccessView {
            slot: Ts(r.slot),
            slot_id: slot_id(spec, r.slot),
            attempt: r.attempt,
            fence: r.fence,
            owner: r.owner.clone(),
            started_at: Ts(r.started_at),
            finished_at: Ts(r.finished_at),
            age_seconds: now.duration_since(r.finished_at).as_secs(),
        }),
        next_slot: health::next_slot(spec, now).map(Ts),
        due,
        late_since: health::late_since(spec, state, now).map(Ts),
        fence: state.fence,
        cursor: Ts(state.cursor),
        created_at: recorded.then_some(Ts(state.created_at)),
        leases: state.leases.iter().map(|l| lease_view(spec, l)).collect(),
        pending: state
            .pending
            .iter()
            .map(|p| PendingView {
                slot: Ts(p.slot),
                slot_id: slot_id(spec, p.slot),
                attempt: p.attempt,
                not_before: Ts(p.not_before),
                origin: origin_str(p.origin),
                last_error: p.last_error.clone(),
            })
            .collect(),
        counts: CountsView {
            runs: c.runs,
            succeeded: c.succeeded,
            failed: c.failed,
            dead: c.dead,
            dead_dropped: c.dead_dropped,
            redriven: c.redriven,
            backfilled: c.backfilled,
            missed: MissReason::ALL
                .iter()
                .map(|r| (r.as_str(), c.missed.get(r).copied().unwrap_or(0)))
                .collect(),
            skipped: [SkipReason::Paused, SkipReason::OutsideWindow]
                .iter()
                .map(|r| (r.as_str(), c.skipped.get(r).copied().unwrap_or(0)))
                .collect(),
        },
        dead_letters: DeadSummary {
            count: state.dead.len(),
            dropped: c.dead_dropped,
            newest: dead
                .into_iter()
                .take(STATUS_DEAD_LETTERS)
                .map(|d| dead_view(spec, d))
                .collect(),
        },
        schedule_change: state.last_schedule_change.as_ref().map(|ch| ChangeView {
            at: Ts(ch.at),
            from_hash: ch.from_hash.clone(),
            to_hash: ch.to_hash.clone(),
        }),
    }
}

pub fn exec(args: StatusArgs) -> Result<(), Failure> {
    let session = Session::open(&args.store, args.job.as_deref())?;
    let specs = session.jobs(args.job.as_deref())?;
    let report = with_backend!(&session.backend, c => status_report(c, &session, &specs, args.job.is_none()))?;
    match args.format {
        Format::Json => println!("{}", to_json(&report)?),
        Format::Text => print!("{}", status_text(&report, &specs, session.now)),
    }
    Ok(())
}

fn status_report<C: Operator + Records>(
    c: &C,
    session: &Session,
    specs: &[&JobSpec],
    all: bool,
) -> Result<StatusReport, Failure> {
    let now = session.now;
    let mut jobs = Vec::with_capacity(specs.len());
    for spec in specs {
        let name = spec.name.as_str();
        let fail = |e: CoordError| coord_failure(&session.store, "reading", name, &e);
        let recorded = wait(c.record(name)).map_err(fail)?.is_some();
        let state = wait(c.status(spec, now)).map_err(fail)?;
        jobs.push(job_status(spec, &state, recorded, now));
    }
    let not_in_manifest = if all {
        wait(c.recorded_jobs())
            .map_err(|e| {
                Failure::problem(format!(
                    "error: listing jobs in store {}: {e}",
                    session.store
                ))
            })?
            .into_iter()
            .filter(|j| session.manifest.job(j).is_none())
            .collect()
    } else {
        Vec::new()
    };
    Ok(StatusReport {
        now: Ts(now),
        store: session.store.clone(),
        jobs,
        not_in_manifest,
    })
}

fn status_text(report: &StatusReport, specs: &[&JobSpec], now: Timestamp) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "store {}  at {}", report.store, utc(now));
    if report.jobs.is_empty() {
        let _ = writeln!(out, "\nthe manifest defines no jobs");
    }
    for (s, spec) in report.jobs.iter().zip(specs) {
        job_text(&mut out, s, spec, now);
    }
    if !report.not_in_manifest.is_empty() {
        let _ = writeln!(
            out,
            "\nrecords of jobs not in the manifest (left alone): {}",
            report.not_in_manifest.join(", ")
        );
    }
    out
}

/// Renders a count map as "downtime 2, catch_up 1", or "none".
fn reasons(map: &BTreeMap<&'static str, u64>) -> String {
    let parts: Vec<String> = map
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if parts.is_empty() {
        "none".to_string()
    } else {
        let total: u64 = map.values().sum();
        format!("{total} ({})", parts.join(", "))
    }
}

fn job_text(out: &mut String, s: &JobStatus, spec: &JobSpec, now: Timestamp) {
    let zone = spec.schedule.zone();
    let _ = writeln!(
        out,
        "\n{}  {} ({})  {} job{}",
        s.job,
        s.schedule,
        s.timezone,
        s.action,
        if s.paused { "  PAUSED" } else { "" }
    );
    let line = |out: &mut String, label: &str, text: &str| {
        let _ = writeln!(out, "  {label:<13} {text}");
    };
    let bound = s
        .stale_after_seconds
        .map(|b| format_duration(Duration::from_secs(b)))
        .unwrap_or_default();
    let stale_at = s.stale_at.map(|t| utc(t.0)).unwrap_or_default();
    let health = match s.health {
        Health::Ok => format!("ok (stale after {bound} without a success: at {stale_at})"),
        Health::Stale => match &s.last_success {
            Some(l) => format!(
                "STALE: no success for {} (bound {bound})",
                approx(now.duration_since(l.finished_at.0))
            ),
            None => format!(
                "STALE: never succeeded, and its first slot plus {bound} passed at {stale_at}"
            ),
        },
        Health::NeverSucceeded => {
            let what = if s.counts.runs == 0 {
                "never ran".to_string()
            } else {
                format!("never succeeded ({} runs failed)", s.counts.failed)
            };
            match s.stale_at {
                Some(at) => format!("{what} (stale at {} without a success)", utc(at.0)),
                None => what,
            }
        }
        Health::Paused => "paused (not checked for staleness)".to_string(),
        Health::NoBound => "no staleness bound: fewer than two slots remain".to_string(),
        // A verdict newer than this CLI: its name.
        other => other.as_str().to_string(),
    };
    line(out, "health", &health);
    match &s.last_success {
        Some(l) => line(
            out,
            "last success",
            &format!(
                "{} finished {} ({}), attempt {}, fence {}",
                l.slot_id,
                utc(l.finished_at.0),
                relative(now, l.finished_at.0),
                l.attempt,
                l.fence
            ),
        ),
        None if !s.recorded => line(
            out,
            "last success",
            "no runs yet (no record in this store: no runner has planned this job)",
        ),
        None if s.counts.runs == 0 => line(out, "last success", "no runs yet"),
        None => line(out, "last success", "none"),
    }
    let next = match s.next_slot {
        Some(t) => {
            let paused = if s.paused {
                " (paused: will be skipped)"
            } else {
                ""
            };
            format!(
                "{} ({}){paused}",
                instant_text(t.0, zone),
                relative(now, t.0)
            )
        }
        None => "none (the schedule has no slot left in its active window)".to_string(),
    };
    line(out, "next slot", &next);
    if let Some(d) = &s.due {
        let more = if d.count > 1 {
            format!(" and {} later", d.count - 1)
        } else {
            String::new()
        };
        line(
            out,
            "due",
            &format!(
                "{}{more}: not claimed yet (does a runner serve this store?)",
                slot_id(spec, d.oldest.0)
            ),
        );
    }
    if let Some(since) = &s.late_since {
        line(
            out,
            "late",
            &format!(
                "LATE: nothing has claimed a slot since {} came due ({})",
                slot_id(spec, since.0),
                relative(now, since.0)
            ),
        );
    }
    line(out, "fence", &s.fence.to_string());
    if s.leases.is_empty() {
        line(out, "live leases", "none");
    } else {
        line(out, "live leases", &s.leases.len().to_string());
        for l in &s.leases {
            let _ = writeln!(
                out,
                "    {}  owner {}  fence {}  attempt {}  expires {} ({})",
                l.slot_id,
                l.owner,
                l.fence,
                l.attempt,
                utc(l.expires_at.0),
                relative(now, l.expires_at.0)
            );
        }
    }
    if s.pending.is_empty() {
        line(out, "pending", "none");
    } else {
        line(
            out,
            "pending",
            &format!(
                "{} (retries, backfills and redrives waiting for a runner)",
                s.pending.len()
            ),
        );
        for p in &s.pending {
            let why = match p.origin {
                "schedule" | "manual" => "retry",
                other => other,
            };
            let error = p
                .last_error
                .as_deref()
                .map(|e| format!("  last error: {}", one_line(e, ERROR_CELL_CHARS)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    {}  {why}, attempt {}  not before {}{error}",
                p.slot_id,
                p.attempt,
                utc(p.not_before.0),
            );
        }
    }
    let k = &s.counts;
    line(
        out,
        "runs",
        &format!(
            "{} ({} succeeded, {} failed), {} dead, {} redriven, {} backfilled",
            k.runs, k.succeeded, k.failed, k.dead, k.redriven, k.backfilled
        ),
    );
    line(out, "missed", &reasons(&k.missed));
    line(out, "skipped", &reasons(&k.skipped));
    let dropped = if s.dead_letters.dropped > 0 {
        format!(
            " ({} older ones dropped from the list)",
            s.dead_letters.dropped
        )
    } else {
        String::new()
    };
    if s.dead_letters.count == 0 {
        line(out, "dead letters", &format!("none{dropped}"));
    } else {
        let shown = s.dead_letters.newest.len();
        let which = if shown < s.dead_letters.count {
            format!(", newest {shown} (all: cronslot dlq list --job {})", s.job)
        } else {
            String::new()
        };
        line(
            out,
            "dead letters",
            &format!("{}{which}{dropped}", s.dead_letters.count),
        );
        for d in &s.dead_letters.newest {
            let _ = writeln!(
                out,
                "    {}  attempts {}  fence {}  died {}  error: {}",
                d.slot_id,
                d.attempts,
                d.fence,
                utc(d.died_at.0),
                one_line(&d.last_error, ERROR_CELL_CHARS)
            );
        }
    }
    if let Some(ch) = &s.schedule_change {
        line(
            out,
            "schedule",
            &format!(
                "changed {} (spec {} -> {}); slots after the cursor follow the new one",
                utc(ch.at.0),
                short_hash(&ch.from_hash),
                short_hash(&ch.to_hash)
            ),
        );
    }
}

fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
