//! Logs: `tracing` events, written to stderr as human-readable lines or as
//! JSON objects, one per line.
//!
//! Every finished run logs exactly one event, `run finished`, with the
//! runtime's fields (`cronslot_runtime::RunReport::fields`, the same on
//! every platform): job, slot, scheduled instant, attempt, fence, owner,
//! lag (start − scheduled) and duration in milliseconds of clock time, and
//! the outcome: `succeeded`, `retrying` (with `retry_at`), `dead`,
//! `lease_lost` or `unrecorded`.
//! Other events (claims lost to another worker, heartbeats) are at debug,
//! store errors at warn. Timestamps are the runner's clock, so an
//! accelerated demo's log reads in its own time.

use std::fmt;
use std::str::FromStr;

use cronslot_core::coord::format_instant;
use cronslot_runtime::{Outcome, RunReport};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

use crate::clock::Clock;

/// The environment variable that sets the level (`error`, `warn`, `info`,
/// `debug`, `trace`; default `info`).
pub const LOG_LEVEL_VAR: &str = "CRONSLOT_LOG";

/// How [`init_logging`] writes events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogFormat {
    /// One human-readable line per event.
    Pretty,
    /// One JSON object per line, fields at the top level.
    Json,
}

/// Logging could not start (a subscriber is already set, or the level
/// variable is not a level).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogInitError(pub String);

impl fmt::Display for LogInitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LogInitError {}

/// Writes event times from the runner's clock.
#[derive(Debug, Clone)]
struct ClockTime(Clock);

impl FormatTime for ClockTime {
    fn format_time(&self, w: &mut Writer<'_>) -> fmt::Result {
        write!(w, "{:.3}", self.0.now())
    }
}

/// Sends this process's `tracing` events to stderr in `format`, timed by
/// `clock`. Call once, before the runner starts.
pub fn init_logging(format: LogFormat, clock: &Clock) -> Result<(), LogInitError> {
    let level = match std::env::var(LOG_LEVEL_VAR) {
        Ok(text) => LevelFilter::from_str(text.trim()).map_err(|_| {
            LogInitError(format!(
                "{LOG_LEVEL_VAR}={text:?} is not a level: use error, warn, info, debug or trace"
            ))
        })?,
        Err(_) => LevelFilter::INFO,
    };
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(level)
        .with_target(false)
        .with_timer(ClockTime(clock.clone()));
    let result = match format {
        LogFormat::Pretty => builder.with_ansi(false).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
    result.map_err(|e| LogInitError(format!("logging could not start: {e}")))
}

/// Logs the one line of a finished run: the runtime's fields (the same on
/// every platform), `run finished` at info for a success, warn otherwise.
pub(crate) fn emit_run(report: &RunReport) {
    let retry_at = report.retry_at().map(format_instant);
    let error = report.error();
    let slot = report.slot_id();
    let scheduled_at = format_instant(report.slot);
    // `tracing` fixes an event's level at compile time, hence two calls.
    macro_rules! run_finished {
        ($level:ident) => {
            tracing::$level!(
                job = %report.job,
                key = report.key.as_deref().map(tracing::field::display),
                slot = %slot,
                scheduled_at = %scheduled_at,
                attempt = report.attempt,
                fence = report.fence,
                owner = %report.owner,
                lag_ms = report.lag_ms(),
                duration_ms = report.duration_ms(),
                outcome = %report.outcome.as_str(),
                retry_at = retry_at.as_ref().map(tracing::field::display),
                error = error.as_ref().map(tracing::field::display),
                "run finished"
            )
        };
    }
    match report.outcome {
        Outcome::Succeeded => run_finished!(info),
        _ => run_finished!(warn),
    }
}
