//! Serving one job for one Cron Trigger event: the runtime's run loop
//! ([`cronslot_runtime::serve`]) with the Worker's settings, and the
//! event's log lines.

use std::time::Duration;

use cronslot_core::coord::format_instant;
use cronslot_runtime::{IdleDetail, RunLine, Served, TickReport, idle_detail};
use serde::Serialize;

/// How soon a retry must be due to be waited for within the event that
/// failed: long enough for the first retries of the default backoff
/// (30 s), short enough that an event does not idle for minutes (wall
/// time, not CPU time, while it waits). Cloudflare does not re-deliver a
/// failed scheduled event; later retries wait for a tick.
pub const RETRY_WITHIN_EVENT: Duration = Duration::from_secs(30);

/// One line of the Worker's log, as [`Line::json`] writes it.
///
/// Each variant's fields are in alphabetical order, the order of the keys
/// of the JSON objects these lines were first built as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Line<'a> {
    /// A run (`msg: "run"`).
    Run(RunLine<'a>),
    /// The claim that ran nothing (`msg: "idle"`).
    Idle {
        /// The reason's details.
        detail: IdleDetail,
        /// The job.
        job: &'a str,
        /// `idle`.
        msg: &'static str,
        /// The reason's name.
        reason: &'static str,
    },
    /// The claim that failed (`msg: "claim failed"`).
    ClaimFailed {
        /// The store's error.
        error: String,
        /// The job.
        job: &'a str,
        /// `claim failed`.
        msg: &'static str,
        /// Whether the error was transient.
        transient: bool,
    },
    /// Due slots left to the next trigger (`msg: "catch-up deferred"`).
    Deferred {
        /// The job.
        job: &'a str,
        /// `catch-up deferred`.
        msg: &'static str,
        /// Why.
        reason: &'a str,
    },
    /// The tick (`msg: "tick"`).
    Tick {
        /// The window's start.
        after: String,
        /// Why the tick mark was not written.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// How many jobs were left for the next tick.
        #[serde(skip_serializing_if = "Option::is_none")]
        left: Option<usize>,
        /// Where the mark moved.
        mark: String,
        /// `tick`.
        msg: &'static str,
        /// The window's end.
        now: String,
        /// How many jobs the manifest planned.
        planned: usize,
        /// Why jobs were left.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<&'a str>,
        /// The woken jobs this manifest does not have.
        #[serde(skip_serializing_if = "Option::is_none")]
        unknown_woken: Option<&'a [String]>,
        /// Woken schedules not served because their read failed, each
        /// `[record, why]`: they keep their wakes, and the next tick reads
        /// them again (those the bound left are counted in `left`).
        #[serde(skip_serializing_if = "Option::is_none")]
        unresolved: Option<&'a [(String, String)]>,
        /// How many jobs the tick object woke.
        woken: usize,
    },
    /// Anything else the Worker reports: a message, and what it is about.
    Note {
        /// The Durable Object binding.
        #[serde(skip_serializing_if = "Option::is_none")]
        binding: Option<&'a str>,
        /// The event's cron.
        #[serde(skip_serializing_if = "Option::is_none")]
        cron: Option<&'a str>,
        /// What went wrong.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// The job.
        #[serde(skip_serializing_if = "Option::is_none")]
        job: Option<&'a str>,
        /// What happened.
        msg: &'a str,
    },
}

impl<'a> Line<'a> {
    /// A [`Line::Note`] with only its message.
    pub fn note(msg: &'a str) -> Line<'a> {
        Line::Note {
            binding: None,
            cron: None,
            error: None,
            job: None,
            msg,
        }
    }

    /// A [`Line::Note`] with its message and error.
    pub fn failure(msg: &'a str, error: String) -> Line<'a> {
        Line::Note {
            binding: None,
            cron: None,
            error: Some(error),
            job: None,
            msg,
        }
    }

    /// Whether the line reports an error (it has an `error`): written to
    /// the error log.
    pub fn is_error(&self) -> bool {
        match self {
            Line::Run(run) => run.error.is_some(),
            Line::ClaimFailed { .. } => true,
            Line::Tick { error, .. } | Line::Note { error, .. } => error.is_some(),
            Line::Idle { .. } | Line::Deferred { .. } => false,
        }
    }

    /// The line as one line of JSON.
    pub fn json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One JSON line per run (the runtime's fields, `msg: "run"`), then one
/// for the claim that ended the event's work on the job: `idle` with its
/// reason, `claim failed`, or `catch-up deferred`.
pub fn lines<'a>(job: &'a str, served: &'a Served) -> Vec<Line<'a>> {
    let mut lines: Vec<Line<'a>> = served
        .runs
        .iter()
        .map(|run| Line::Run(run.line(Some("run"))))
        .collect();
    if let Some((_, idle)) = &served.idle {
        let (reason, detail) = idle_detail(idle);
        lines.push(Line::Idle {
            detail,
            job,
            msg: "idle",
            reason,
        });
    }
    if let Some(e) = &served.claim_error {
        lines.push(Line::ClaimFailed {
            error: e.to_string(),
            job,
            msg: "claim failed",
            transient: e.is_transient(),
        });
    }
    if let Some(why) = &served.deferred {
        lines.push(Line::Deferred {
            job,
            msg: "catch-up deferred",
            reason: why,
        });
    }
    lines
}

/// The lines of one tick: each served job's (as [`lines`]), then one
/// `tick` line: the window, how many jobs the manifest planned and the
/// tick object woke, where the mark moved, and what was left or failed.
pub fn tick_lines(report: &TickReport) -> Vec<Line<'_>> {
    let mut out: Vec<Line<'_>> = report
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
    out.push(Line::Tick {
        after: format_instant(report.work.after),
        error: report.mark_error.as_ref().map(|e| {
            format!("the tick mark was not written (the next tick plans a longer window): {e}")
        }),
        left: report.left.as_ref().map(|(count, _)| *count),
        mark: format_instant(report.mark),
        msg: "tick",
        now: format_instant(report.work.now),
        planned,
        reason: report.left.as_ref().map(|(_, why)| why.as_str()),
        unknown_woken: (!report.work.unknown.is_empty()).then_some(&report.work.unknown[..]),
        unresolved: (!report.unresolved.is_empty()).then_some(&report.unresolved[..]),
        woken: report.work.jobs.len() - planned,
    });
    out
}
