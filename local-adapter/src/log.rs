//! Logs: `tracing` events, written to stderr as human-readable lines or as
//! JSON objects, one per line.
//!
//! Every finished run logs exactly one event, `run finished`, with the job,
//! slot, attempt, fence, owner, lag (start − scheduled) and duration in
//! milliseconds of clock time, and the outcome: `succeeded`, `retry_at`
//! (with the instant), `dead`, `superseded` or `failed` (not recorded).
//! Other events (claims lost to another worker, heartbeats) are at debug,
//! store errors at warn. Timestamps are the runner's clock, so an
//! accelerated demo's log reads in its own time.

use std::fmt;
use std::str::FromStr;

use jiff::Timestamp;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

use crate::clock::Clock;
use crate::summary::RunEnd;

/// The environment variable that sets the level (`error`, `warn`, `info`,
/// `debug`, `trace`; default `info`).
pub const LOG_LEVEL_VAR: &str = "CRONSLOT_LOG";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// RFC 3339 UTC with milliseconds: enough for clock times, shorter than
/// nanoseconds.
fn format_instant_ms(t: Timestamp) -> String {
    format!("{t:.3}")
}

/// The one line a finished run logs.
pub(crate) struct RunLine<'a> {
    pub job: &'a str,
    pub slot: &'a str,
    pub attempt: u32,
    pub fence: u64,
    pub owner: &'a str,
    pub lag_ms: i64,
    pub duration_ms: i64,
    pub end: RunEnd,
    pub error: Option<&'a str>,
}

impl RunLine<'_> {
    pub(crate) fn emit(&self) {
        let retry_at = match self.end {
            RunEnd::RetryAt(t) => Some(format_instant_ms(t)),
            _ => None,
        };
        // `tracing` fixes an event's level at compile time, hence two calls.
        macro_rules! run_finished {
            ($level:ident) => {
                tracing::$level!(
                    job = %self.job,
                    slot = %self.slot,
                    attempt = self.attempt,
                    fence = self.fence,
                    owner = %self.owner,
                    lag_ms = self.lag_ms,
                    duration_ms = self.duration_ms,
                    outcome = %self.end.as_str(),
                    retry_at = retry_at.map(tracing::field::display),
                    error = self.error.map(tracing::field::display),
                    "run finished"
                )
            };
        }
        match self.end {
            RunEnd::Succeeded => run_finished!(info),
            _ => run_finished!(warn),
        }
    }
}
