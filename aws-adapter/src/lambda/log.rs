//! The function's log lines: one JSON object per line on stdout, which
//! CloudWatch Logs indexes (and, for lines with `_aws`, turns into
//! metrics). A run's line is both its structured log record and its EMF
//! document, so each run costs one line.

use std::rc::Rc;

use cronslot_core::coord::format_instant;
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

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    Succeeded,
    /// Failed; the retry is scheduled.
    Retrying,
    /// Failed for good: a dead letter.
    Dead,
    /// The run finished but its lease was superseded, so its outcome was
    /// refused.
    LeaseLost,
    /// The run finished but its outcome could not be stored.
    Unrecorded,
}

impl RunEnd {
    pub fn as_str(self) -> &'static str {
        match self {
            RunEnd::Succeeded => "succeeded",
            RunEnd::Retrying => "failed_retrying",
            RunEnd::Dead => "failed_dead",
            RunEnd::LeaseLost => "lease_lost",
            RunEnd::Unrecorded => "unrecorded",
        }
    }
}

/// Everything one run's line says.
#[derive(Debug, Clone)]
pub struct RunReport {
    pub request_id: String,
    pub job: String,
    pub slot: Timestamp,
    pub attempt: u32,
    pub fence: u64,
    /// From the scheduled instant to the start (negative when started early
    /// within the skew margin).
    pub lag_ms: i64,
    pub duration_ms: u64,
    pub end: RunEnd,
    /// What the job or the store said, when it did not succeed.
    pub error: Option<String>,
    pub retry_at: Option<Timestamp>,
    /// Slots the run's writes gave a fate.
    pub fates: Fates,
    /// When the run ended.
    pub at: Timestamp,
}

/// The run's line: the EMF document plus the run's fields.
pub fn run_line(r: &RunReport) -> Value {
    let succeeded = r.end == RunEnd::Succeeded;
    let mut metrics = vec![
        Metric::count(metrics::RUN_SUCCEEDED, u64::from(succeeded)),
        Metric::count(metrics::RUN_FAILED, u64::from(!succeeded)),
        Metric::millis(metrics::LAG_MS, u64::try_from(r.lag_ms).unwrap_or(0)),
        Metric::millis(metrics::DURATION_MS, r.duration_ms),
    ];
    push_fates(&mut metrics, r.fates);
    let mut doc = metrics::emf(&r.job, r.at.as_millisecond(), &metrics);
    let level = if succeeded { "info" } else { "error" };
    let fields = json!({
        "level": level,
        "msg": "run",
        "request_id": r.request_id,
        "slot": format!("{}@{}", r.job, format_instant(r.slot)),
        "scheduled_at": format_instant(r.slot),
        "attempt": r.attempt,
        "fence": r.fence,
        "lag_ms": r.lag_ms,
        "duration_ms": r.duration_ms,
        "outcome": r.end.as_str(),
    });
    merge(&mut doc, fields);
    if let Some(e) = &r.error {
        doc.insert("error".into(), Value::from(e.as_str()));
    }
    if let Some(t) = r.retry_at {
        doc.insert("retry_at".into(), Value::from(format_instant(t)));
    }
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
