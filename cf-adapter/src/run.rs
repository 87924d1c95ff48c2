//! Serving one job for one Cron Trigger event: the runtime's run loop
//! ([`cronslot_runtime::serve`]) with the Worker's settings, and the
//! event's log lines.

use std::time::Duration;

use cronslot_core::coord::format_instant;
use cronslot_runtime::{Served, TickReport, idle_reason};
use serde_json::{Value, json};

/// How soon a retry must be due to be waited for within the event that
/// failed: long enough for the first retries of the default backoff
/// (30 s), short enough that an event does not idle for minutes (wall
/// time, not CPU time, while it waits). Cloudflare does not re-deliver a
/// failed scheduled event; later retries wait for a tick.
pub const RETRY_WITHIN_EVENT: Duration = Duration::from_secs(30);

/// One JSON line per run (the runtime's fields, `msg: "run"`), then one
/// for the claim that ended the event's work on the job: `idle` with its
/// reason, `claim failed`, or `catch-up deferred`.
pub fn lines(job: &str, served: &Served) -> Vec<Value> {
    let mut lines: Vec<Value> = served
        .runs
        .iter()
        .map(|run| {
            let mut line = run.fields();
            line.insert("msg".into(), Value::from("run"));
            Value::Object(line)
        })
        .collect();
    if let Some((_, idle)) = &served.idle {
        let (reason, detail) = idle_reason(idle);
        lines.push(json!({"msg": "idle", "job": job, "reason": reason, "detail": detail}));
    }
    if let Some(e) = &served.claim_error {
        lines.push(json!({
            "msg": "claim failed", "job": job, "error": e.to_string(),
            "transient": e.is_transient(),
        }));
    }
    if let Some(why) = &served.deferred {
        lines.push(json!({"msg": "catch-up deferred", "job": job, "reason": why}));
    }
    lines
}

/// The lines of one tick: each served job's (as [`lines`]), then one
/// `tick` line: the window, how many jobs the manifest planned and the
/// tick object woke, where the mark moved, and what was left or failed.
pub fn tick_lines(report: &TickReport) -> Vec<Value> {
    let mut out: Vec<Value> = report
        .work
        .jobs
        .iter()
        .zip(&report.served)
        .flat_map(|(job, served)| lines(job.spec.name.as_str(), served))
        .collect();
    let planned = report
        .work
        .jobs
        .iter()
        .filter(|j| j.planned.is_some())
        .count();
    let mut line = json!({
        "msg": "tick",
        "after": format_instant(report.work.after),
        "now": format_instant(report.work.now),
        "planned": planned,
        "woken": report.work.jobs.len() - planned,
        "mark": format_instant(report.mark),
    });
    if !report.work.unknown.is_empty() {
        line["unknown_woken"] = json!(report.work.unknown);
    }
    if let Some((count, why)) = &report.left {
        line["left"] = json!(count);
        line["reason"] = json!(why);
    }
    if let Some(e) = &report.mark_error {
        line["error"] = json!(format!(
            "the tick mark was not written (the next tick plans a longer window): {e}"
        ));
    }
    out.push(line);
    out
}
