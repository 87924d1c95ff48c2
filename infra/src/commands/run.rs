//! `cronslot run`: the manifest's command and http jobs on a store (SQLite
//! for one machine; PostgreSQL, Redis or DynamoDB shared by a fleet), with N
//! competing workers, until a time, SIGTERM or Ctrl-C; then the summary.
//!
//! Every argument is checked before anything starts (exit 2 with the
//! reason). Logs go to stderr, the summary to stdout. Exit 0 when the run
//! ended normally, dead letters included (they are the jobs' failures, not
//! the runner's); exit 1 if a slot ran more than once or a worker failed.

use std::time::Duration;

use clap::Args;
use cronslot_core::manifest::{Action, Manifest, parse_duration};
use cronslot_runner::{Clock, LogFormat, Runner, RunnerStore, Summary, init_logging};
use jiff::{SignedDuration, Timestamp};

use crate::cli::{self, Format, ManifestInput, StoreFlag};
use crate::exit::Failure;
use crate::format::to_json;
use crate::health;
use crate::manifest::load_manifest;
use crate::store::StoreTarget;
use crate::store::jobs::{sweep_in_background, warn_durability};

#[derive(Debug, Args)]
#[command(
    after_help = "Example (three competing workers, a minute per second, 45 minutes):\n  \
                        cronslot run examples/cronslot.toml --store sqlite:demo-out/cronslot.db \
                        --workers 3 --speed 60 --until +45m"
)]
pub struct RunArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    #[command(flatten)]
    pub store: StoreFlag,
    /// Clock speed: 60 makes a minute pass per second (demos and tests).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Stop at this RFC 3339 instant, or after +DURATION (e.g. +45m) of clock time.
    #[arg(long, value_name = "RFC3339|+DURATION")]
    pub until: Option<String>,
    /// Competing workers in this process, each with its own owner id.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// at most this many runs at once in this process, over all its
    /// workers; a burst beyond it waits in the store (for this process's
    /// next free place, or another process). Unbounded if not given.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_running: Option<u32>,
    /// with --max-running: up to this many more leases claimed ahead of
    /// the free places, each kept alive while it waits and started the
    /// moment a run ends. As many as --max-running by default; 0 for none
    /// (long runs, where a lease waiting here would start sooner in
    /// another process).
    #[arg(long, value_name = "N", requires = "max_running")]
    pub claim_ahead: Option<u32>,
    /// The drain's grace period, e.g. 30s: on SIGTERM (or Ctrl-C) the
    /// runner claims nothing more and lets its running jobs go on this
    /// long (real time); those still running then are stopped without a
    /// word to the store, so their leases expire and another runner
    /// retries their slots, as after a crash. Without it the running jobs
    /// go on within their own time limits. `cronslot render kubernetes`
    /// sets it below the pod's terminationGracePeriodSeconds.
    #[arg(long, value_name = "DURATION")]
    pub grace: Option<String>,
    /// Log lines: one per run, human-readable or JSON.
    #[arg(long, value_enum, default_value = "pretty")]
    pub log_format: cli::LogFormat,
    /// Serve health probes on this address (e.g. 0.0.0.0:8080): GET
    /// /healthz answers 200 while every worker makes progress, GET /readyz
    /// 200 while the store answers.
    #[arg(long, value_name = "ADDR")]
    pub health_listen: Option<String>,
    /// The summary printed when the runner stops: text, or json (started_at,
    /// stopped_at, speed, workers, each job's counts and new dead letters,
    /// duplicates_refused, claim_conflicts, store_errors, slots_run_twice,
    /// worker_failures), printed whatever the exit code.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn exec(args: RunArgs) -> Result<(), Failure> {
    let clock = clock(args.speed)?;
    let until = args
        .until
        .as_deref()
        .map(|text| parse_until(text, clock.now()))
        .transpose()?;
    let grace = args
        .grace
        .as_deref()
        .map(|text| {
            parse_duration(text)
                .map_err(|e| Failure::bad_input(format!("error: --grace {text:?}: {e}")))
        })
        .transpose()?;
    let target = StoreTarget::parse_for_jobs(&args.store)?;
    let manifest = load_manifest(&args.manifest.path())?;
    refuse_function_jobs(&manifest, "run")?;
    let listener = args
        .health_listen
        .as_deref()
        .map(|addr| health::bind("--health-listen", addr))
        .transpose()?;
    let format = log_format(args.log_format);
    init_logging(format, &clock).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    log_warnings(&manifest, format);
    let (store, clock) = target.open_for_jobs(&clock)?;
    warn_durability(&store);
    sweep_in_background(&store);
    // The store's wake signal: a run enqueued (or a slot triggered) by
    // anyone starts at once, not at the next poll.
    let wakes = store.wake_signal();
    let mut runner = Runner::new(store, manifest.jobs, clock)
        .with_templates(manifest.templates)
        .woken_by(wakes)
        .workers(args.workers)
        .handle_ctrl_c(true);
    if let Some(n) = args.max_running {
        runner = runner.max_running(n);
    }
    if let Some(n) = args.claim_ahead {
        runner = runner.claim_ahead(n);
    }
    if let Some(grace) = grace {
        runner = runner.drain_grace(grace);
    }
    match until {
        Some(Until::After(d)) => runner = runner.run_for(d),
        Some(Until::At(t)) => runner = runner.until(t),
        None => {}
    }
    if let Some(listener) = listener {
        health::serve(listener, runner.health())?;
    }
    let summary = run(runner)?;
    match args.format {
        Format::Text => print!("{summary}"),
        Format::Json => println!("{}", to_json(&summary)?),
    }
    verdict(&summary)
}

/// A runner's exit: 1 when a slot ran more than once or a worker failed
/// (dead letters are the jobs' failures, not the runner's).
pub(super) fn verdict(summary: &Summary) -> Result<(), Failure> {
    if summary.ok() {
        return Ok(());
    }
    let mut problems = Vec::new();
    if !summary.slots_run_twice.is_empty() {
        problems.push(format!(
            "{} slot(s) ran more than once ({}): cronslot's guarantee failed; please report this",
            summary.slots_run_twice.len(),
            summary.slots_run_twice.join(", ")
        ));
    }
    problems.extend(summary.worker_failures.iter().cloned());
    Err(Failure::problem(format!("error: {}", problems.join("; "))))
}

/// Runs the runner to its end.
pub(super) fn run<S: RunnerStore>(runner: Runner<S>) -> Result<Summary, Failure> {
    runner
        .run()
        .map_err(|e| Failure::problem(format!("error: {e}")))
}

pub(super) fn log_format(format: cli::LogFormat) -> LogFormat {
    match format {
        cli::LogFormat::Pretty => LogFormat::Pretty,
        cli::LogFormat::Json => LogFormat::Json,
    }
}

/// The manifest's warnings, in the log's format.
pub(super) fn log_warnings(manifest: &Manifest, format: LogFormat) {
    for warning in &manifest.warnings {
        match format {
            // As `validate` prints them, source line and caret included.
            LogFormat::Pretty => eprintln!("{warning}"),
            // Every stderr line stays one JSON object.
            LogFormat::Json => tracing::warn!(warning = %warning, "manifest warning"),
            // A format newer than this CLI: through the logs, in its format.
            _ => tracing::warn!(warning = %warning, "manifest warning"),
        }
    }
}

fn clock(speed: f64) -> Result<Clock, Failure> {
    if speed == 1.0 {
        return Ok(Clock::real());
    }
    Clock::accelerated(speed).map_err(|e| Failure::bad_input(format!("error: --speed: {e}")))
}

/// When to stop claiming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    /// `+DURATION`: this long (clock time) after the runner starts.
    After(Duration),
    At(Timestamp),
}

/// `+DURATION` (clock time), or an RFC 3339 instant in the future.
fn parse_until(text: &str, now: Timestamp) -> Result<Until, Failure> {
    let bad = |why: String| Failure::bad_input(format!("error: --until {text:?}: {why}"));
    if let Some(rest) = text.strip_prefix('+') {
        let duration = parse_duration(rest).map_err(|e| bad(e.to_string()))?;
        if duration.is_zero() {
            return Err(bad("the duration is zero: nothing would run".into()));
        }
        // Checked here so that the runner's own addition cannot saturate
        // silently.
        SignedDuration::try_from(duration)
            .ok()
            .and_then(|d| now.checked_add(d).ok())
            .ok_or_else(|| bad("that is past the end of supported time".into()))?;
        return Ok(Until::After(duration));
    }
    let until: Timestamp = text.parse().map_err(|e| {
        bad(format!(
            "neither an RFC 3339 instant (2026-03-08T07:00:00Z) nor +DURATION (+45m): {e}"
        ))
    })?;
    if until <= now {
        return Err(bad(format!(
            "it has already passed (the clock reads {now:.0})"
        )));
    }
    Ok(Until::At(until))
}

/// `cronslot run` and `tick` have no Rust functions: a job that needs one
/// would only fill the dead-letter list, so say so before starting.
pub(super) fn refuse_function_jobs(manifest: &Manifest, command: &str) -> Result<(), Failure> {
    let names: Vec<&str> = manifest
        .jobs
        .iter()
        .filter(|j| j.action == Action::Function)
        .map(|j| j.name.as_str())
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: `cronslot {command}` runs command and http jobs only; these jobs have neither and \
         need a Rust function registered by a program that embeds cronslot-runner \
         (see examples/fleet): {}",
        names.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2030-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn until_takes_a_duration_or_a_future_instant() {
        assert_eq!(
            parse_until("+45m", now()).unwrap(),
            Until::After(Duration::from_secs(45 * 60))
        );
        assert_eq!(
            parse_until("2030-01-02T00:00:00Z", now()).unwrap(),
            Until::At("2030-01-02T00:00:00Z".parse().unwrap())
        );
        for bad in [
            "+0s",
            "+",
            "+45",
            "45m",
            "tomorrow",
            "2029-12-31T00:00:00Z",
            "+-5m",
        ] {
            let failure = parse_until(bad, now()).unwrap_err();
            assert_eq!(failure.code, Failure::BAD_INPUT, "{bad}");
            assert!(failure.message.contains("--until"), "{}", failure.message);
        }
    }

    #[test]
    fn speed_must_be_positive_and_bounded() {
        assert!(clock(60.0).is_ok());
        for bad in [0.0, -1.0, 100_001.0, f64::NAN, f64::INFINITY] {
            assert_eq!(clock(bad).unwrap_err().code, Failure::BAD_INPUT, "{bad}");
        }
    }
}
