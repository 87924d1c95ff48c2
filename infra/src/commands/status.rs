//! `cronslot status`: each job's health, last success, next slot, live
//! leases, fence, counts and newest dead letters, as text or JSON.
//!
//! The JSON is the status document of the admin routes and the dashboard
//! ([`StatusDoc`]), with the store's name and the records the manifest no
//! longer has: one schema wherever the status is read.
//!
//! Status only reads: it exits 0 whatever the jobs' health (scripts read
//! the JSON `stale` field); 1 when the store fails; 2 on bad input, such as
//! a store that does not exist yet.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use clap::Args;
use cronslot_core::coord::{CoordError, DeadLetter, Operator, Origin};
use cronslot_core::health::Health;
use cronslot_core::manifest::{JobSpec, format_duration};
use cronslot_runtime::admin::{JobReport, StatusDoc, job_report};
use jiff::Timestamp;

use crate::cli::{Format, StoreArgs};
use crate::exit::{Failure, coord_failure};
use crate::format::{
    ERROR_CELL_CHARS, approx, instant_text, one_line, relative, slot_id, to_json, utc,
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

pub fn exec(args: StatusArgs) -> Result<(), Failure> {
    let session = Session::open(&args.store, args.job.as_deref())?;
    let specs = session.jobs(args.job.as_deref())?;
    let doc =
        with_backend!(&session.backend, c => status_doc(c, &session, &specs, args.job.is_none()))?;
    match args.format {
        Format::Json => println!("{}", to_json(&doc)?),
        Format::Text => print!("{}", status_text(&doc, &session.store, &specs)),
    }
    Ok(())
}

fn status_doc<C: Operator + Records>(
    c: &C,
    session: &Session,
    specs: &[&JobSpec],
    all: bool,
) -> Result<StatusDoc, Failure> {
    let now = session.now;
    let mut jobs = Vec::with_capacity(specs.len());
    for spec in specs {
        let name = spec.name.as_str();
        let fail = |e: CoordError| coord_failure(&session.store, "reading", name, &e);
        let recorded = wait(c.record(name)).map_err(fail)?.is_some();
        let state = wait(c.status(spec, now)).map_err(fail)?;
        jobs.push(job_report(spec, state, Some(recorded), now));
    }
    let not_in_manifest = if all {
        let listed = wait(c.recorded_jobs())
            .map_err(|e| {
                Failure::problem(format!(
                    "error: listing jobs in store {}: {e}",
                    session.store
                ))
            })?
            .into_iter()
            .filter(|j| session.manifest.job(j).is_none())
            // A schedule's record (`job/key`) of a dynamic job the manifest
            // has is the manifest's: its schedules are data.
            .filter(|j| {
                cronslot_core::schedules::split_record_name(j)
                    .is_none_or(|(job, _)| session.manifest.template(job.as_str()).is_none())
            })
            .collect();
        Some(listed)
    } else {
        None
    };
    Ok(StatusDoc {
        now,
        store: Some(session.store.clone()),
        jobs,
        dynamic_jobs: cronslot_runtime::admin::dynamic_jobs(&session.manifest, all),
        not_in_manifest,
        cursor: None,
        matched: None,
    })
}

fn status_text(doc: &StatusDoc, store: &str, specs: &[&JobSpec]) -> String {
    let now = doc.now;
    let mut out = String::new();
    let _ = writeln!(out, "store {store}  at {}", utc(now));
    if doc.jobs.is_empty() {
        let _ = writeln!(out, "\nthe manifest defines no jobs");
    }
    for (s, spec) in doc.jobs.iter().zip(specs) {
        job_text(&mut out, s, spec, now);
    }
    if let Some(gone) = doc.not_in_manifest.as_ref().filter(|g| !g.is_empty()) {
        let _ = writeln!(
            out,
            "\nrecords of jobs not in the manifest (left alone): {}",
            gone.join(", ")
        );
    }
    out
}

/// Renders a count map as "downtime 2, catch_up 1", or "none".
fn reasons(map: &BTreeMap<String, u64>) -> String {
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

fn job_text(out: &mut String, s: &JobReport, spec: &JobSpec, now: Timestamp) {
    let zone = spec.schedule.zone();
    let r = &s.record;
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
    let stale_at = s.stale_at.map(utc).unwrap_or_default();
    let health = match s.health {
        Health::Ok => format!("ok (stale after {bound} without a success: at {stale_at})"),
        Health::Stale => match s.last_success {
            Some(finished) => format!(
                "STALE: no success for {} (bound {bound})",
                approx(now.duration_since(finished))
            ),
            None => format!(
                "STALE: never succeeded, and its first slot plus {bound} passed at {stale_at}"
            ),
        },
        Health::NeverSucceeded => {
            let what = if s.runs == 0 {
                "never ran".to_string()
            } else {
                format!("never succeeded ({} runs failed)", s.failed)
            };
            match s.stale_at {
                Some(at) => format!("{what} (stale at {} without a success)", utc(at)),
                None => what,
            }
        }
        Health::Paused => "paused (not checked for staleness)".to_string(),
        Health::NoBound => "no staleness bound: fewer than two slots remain".to_string(),
        // A verdict newer than this CLI: its name.
        other => other.as_str().to_string(),
    };
    line(out, "health", &health);
    match &r.last_success {
        Some(l) => line(
            out,
            "last success",
            &format!(
                "{} finished {} ({}), attempt {}, fence {}",
                slot_id(spec, l.slot),
                utc(l.finished_at),
                relative(now, l.finished_at),
                l.attempt,
                l.fence
            ),
        ),
        None if !s.recorded => line(
            out,
            "last success",
            "no runs yet (no record in this store: no runner has planned this job)",
        ),
        None if s.runs == 0 => line(out, "last success", "no runs yet"),
        None => line(out, "last success", "none"),
    }
    let next = match s.next_slot {
        Some(t) => {
            let paused = if s.paused {
                " (paused: will be skipped)"
            } else {
                ""
            };
            format!("{} ({}){paused}", instant_text(t, zone), relative(now, t))
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
                slot_id(spec, d.oldest)
            ),
        );
    }
    if let Some(since) = s.late_since {
        line(
            out,
            "late",
            &format!(
                "LATE: nothing has claimed a slot since {} came due ({})",
                slot_id(spec, since),
                relative(now, since)
            ),
        );
    }
    line(out, "fence", &s.fence.to_string());
    if r.leases.is_empty() {
        line(out, "live leases", "none");
    } else {
        line(out, "live leases", &r.leases.len().to_string());
        for l in &r.leases {
            let _ = writeln!(
                out,
                "    {}  owner {}  fence {}  attempt {}  expires {} ({})",
                slot_id(spec, l.slot),
                l.owner,
                l.fence,
                l.attempt,
                utc(l.expires_at),
                relative(now, l.expires_at)
            );
        }
    }
    if r.pending.is_empty() {
        line(out, "pending", "none");
    } else {
        line(
            out,
            "pending",
            &format!(
                "{} (retries, backfills and redrives waiting for a runner)",
                r.pending.len()
            ),
        );
        for p in &r.pending {
            let why = match p.origin {
                Origin::Schedule | Origin::Manual => "retry",
                Origin::Backfill => "backfill",
                Origin::Redrive => "redrive",
            };
            let error = p
                .last_error
                .as_deref()
                .map(|e| format!("  last error: {}", one_line(e, ERROR_CELL_CHARS)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    {}  {why}, attempt {}  not before {}{error}",
                slot_id(spec, p.slot),
                p.attempt,
                utc(p.not_before),
            );
        }
    }
    let k = &r.counters;
    line(
        out,
        "runs",
        &format!(
            "{} ({} succeeded, {} failed), {} dead, {} redriven, {} backfilled",
            s.runs, s.succeeded, s.failed, k.dead, k.redriven, k.backfilled
        ),
    );
    line(out, "missed", &reasons(&s.missed));
    line(out, "skipped", &reasons(&s.skipped));
    let dropped = if k.dead_dropped > 0 {
        format!(" ({} older ones dropped from the list)", k.dead_dropped)
    } else {
        String::new()
    };
    if s.dead_letters == 0 {
        line(out, "dead letters", &format!("none{dropped}"));
    } else {
        let mut newest: Vec<&DeadLetter> = r.dead.iter().collect();
        newest.sort_by_key(|d| std::cmp::Reverse((d.died_at, d.slot)));
        newest.truncate(STATUS_DEAD_LETTERS);
        let which = if newest.len() < s.dead_letters {
            format!(
                ", newest {} (all: cronslot dlq list --job {})",
                newest.len(),
                s.job
            )
        } else {
            String::new()
        };
        line(
            out,
            "dead letters",
            &format!("{}{which}{dropped}", s.dead_letters),
        );
        for d in newest {
            let _ = writeln!(
                out,
                "    {}  attempts {}  fence {}  died {}  error: {}",
                slot_id(spec, d.slot),
                d.attempts,
                d.fence,
                utc(d.died_at),
                one_line(&d.last_error, ERROR_CELL_CHARS)
            );
        }
    }
    if let Some(ch) = &r.last_schedule_change {
        line(
            out,
            "schedule",
            &format!(
                "changed {} (spec {} -> {}); slots after the cursor follow the new one",
                utc(ch.at),
                short_hash(&ch.from_hash),
                short_hash(&ch.to_hash)
            ),
        );
    }
}

fn short_hash(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}
