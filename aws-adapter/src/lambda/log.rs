//! The function's log lines: one JSON object per line on stdout, which
//! CloudWatch Logs indexes (and, for lines with `_aws`, turns into
//! metrics). A run's line is both its structured log record and its EMF
//! document, so each run costs one line.

use std::rc::Rc;

use cronslot_runtime::{Outcome, RunReport};
use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::error::HandlerError;
use super::metrics::{self, Metric};
use super::observe::Fates;

/// Where log lines go: stdout in Lambda, a buffer in tests.
pub type LogSink = Rc<dyn Fn(&str)>;

/// Lines to stdout (Lambda forwards stdout to CloudWatch Logs).
pub fn stdout() -> LogSink {
    Rc::new(|line| println!("{line}"))
}

/// The run's line: the EMF document (succeeded, failed, lag, duration,
/// and the fates `fates` counts), the runtime's fields of the run (the
/// same on every platform), and the request id.
pub fn run_line(request_id: &str, r: &RunReport, fates: Fates) -> Value {
    let succeeded = r.outcome == Outcome::Succeeded;
    let mut metrics = vec![
        Metric::count(metrics::RUN_SUCCEEDED, u64::from(succeeded)),
        Metric::count(metrics::RUN_FAILED, u64::from(!succeeded)),
        Metric::millis(metrics::LAG_MS, u64::try_from(r.lag_ms()).unwrap_or(0)),
        Metric::millis(
            metrics::DURATION_MS,
            u64::try_from(r.duration_ms()).unwrap_or(0),
        ),
    ];
    push_fates(&mut metrics, fates);
    let mut doc = metrics::emf(&r.job, r.ended.as_millisecond(), &metrics);
    let level = if succeeded { "info" } else { "error" };
    merge(
        &mut doc,
        json!({"level": level, "msg": "run", "request_id": request_id}),
    );
    doc.extend(r.fields());
    Value::Object(doc)
}

/// A line for slots given a fate without a run (missed after an outage,
/// dead after a crashed run's last attempt), or `None` when there were none.
pub fn fates_line(request_id: &str, job: &str, fates: Fates, at: Timestamp) -> Option<Value> {
    let mut metrics = Vec::new();
    push_fates(&mut metrics, fates);
    if metrics.is_empty() {
        return None;
    }
    let mut doc = metrics::emf(job, at.as_millisecond(), &metrics);
    merge(
        &mut doc,
        json!({
            "level": "warn",
            "msg": "slots_fated",
            "request_id": request_id,
            "missed": fates.missed,
            "dead": fates.dead,
        }),
    );
    Some(Value::Object(doc))
}

/// A claim that ran nothing (a duplicate delivery, nothing due, paused).
pub fn idle_line(request_id: &str, job: &str, reason: &str, detail: Value) -> Value {
    json!({
        "level": "info",
        "msg": "idle",
        "request_id": request_id,
        "job": job,
        "reason": reason,
        "detail": detail,
    })
}

/// An invocation's error. Invalid events also count in the `InvalidEvent`
/// metric, under the job they named when it exists.
pub fn error_line(
    request_id: &str,
    job: Option<&str>,
    error: &HandlerError,
    path: Option<&str>,
    at: Timestamp,
) -> Value {
    let mut doc = if error.kind == super::error::ErrorKind::InvalidEvent {
        metrics::emf(
            job.unwrap_or(metrics::NO_JOB),
            at.as_millisecond(),
            &[Metric::count(metrics::INVALID_EVENT, 1)],
        )
    } else {
        let mut doc = Map::new();
        if let Some(job) = job {
            doc.insert("job".into(), Value::from(job));
        }
        doc
    };
    merge(
        &mut doc,
        json!({
            "level": "error",
            "msg": if error.kind.retryable() { "failed" } else { "refused" },
            "request_id": request_id,
            "error_type": error.kind.error_type(),
            "retryable": error.kind.retryable(),
            "error": error.message,
        }),
    );
    if let Some(path) = path {
        doc.insert("path".into(), Value::from(path));
    }
    Value::Object(doc)
}

fn push_fates(metrics: &mut Vec<Metric>, fates: Fates) {
    if fates.missed > 0 {
        metrics.push(Metric::count(metrics::SLOT_MISSED, fates.missed));
    }
    if fates.dead > 0 {
        metrics.push(Metric::count(metrics::SLOT_DEAD, fates.dead));
    }
}

fn merge(doc: &mut Map<String, Value>, fields: Value) {
    if let Value::Object(fields) = fields {
        doc.extend(fields);
    }
}
