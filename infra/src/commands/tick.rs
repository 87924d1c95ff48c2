//! `cronslot tick`: one pass over the manifest, for schedulers that start
//! a process every minute (system cron, systemd timers, Kubernetes
//! CronJobs, CI schedules).
//!
//! It is the runner's single pass, one tick (docs/design.md §11): the
//! store's tick mark and wake index, and the manifest's slots since the
//! mark, say which jobs are due; only those jobs' records are read. Their
//! due slots are claimed (a compare-and-set on the shared store, so any
//! number of machines may tick at once and each slot still runs once), run
//! here within their timeouts, and recorded. Slots that came due while no
//! tick ran are planned by the next one (the mark has not passed them) and
//! caught up as each job's `catch_up` says. A pass with nothing due costs
//! the store two requests, however many jobs the manifest holds.

use clap::Args;
use cronslot_runner::{Clock, Runner, Summary, init_logging};
use serde::Serialize;

use super::run::{log_format, log_warnings, refuse_function_jobs, run};
use crate::cli::{Format, LogFormat, ManifestInput, StoreFlag};
use crate::exit::Failure;
use crate::manifest::load_manifest;
use crate::store::StoreTarget;
use crate::store::jobs::sweep_once;

#[derive(Debug, Args)]
#[command(
    after_help = "Example (a crontab line, every minute, on any number of machines):\n  \
                        * * * * * cronslot tick /etc/cronslot.toml --log-format json"
)]
pub struct TickArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    #[command(flatten)]
    pub store: StoreFlag,
    /// Log lines: one per run, human-readable or JSON.
    #[arg(long, value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
    /// The pass's report on stdout: text, or json (the document `POST
    /// /cronslot/tick` answers with: runs, succeeded, failed_jobs,
    /// duplicates_refused, store_errors), printed whatever the exit code.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn exec(args: TickArgs) -> Result<(), Failure> {
    let target = StoreTarget::parse_for_jobs(&args.store)?;
    let manifest = load_manifest(&args.manifest.path())?;
    refuse_function_jobs(&manifest, "tick")?;
    let clock = Clock::real();
    let format = log_format(args.log_format);
    init_logging(format, &clock).map_err(|e| Failure::bad_input(format!("error: {e}")))?;
    log_warnings(&manifest, format);
    let (store, clock) = target.open_for_jobs(&clock)?;
    sweep_once(&store, clock.now());
    let summary = run(Runner::new(store, manifest.jobs, clock)
        .with_templates(manifest.templates)
        .single_pass()
        .handle_ctrl_c(true))?;
    match args.format {
        Format::Text => print!("{}", tick_report(&summary)),
        Format::Json => println!("{}", crate::format::to_json(&TickDoc::of(&summary))?),
    }
    verdict(&summary)
}

/// A pass's counts: `cronslot tick --format json` and the answer of
/// `cronslot serve`'s tick route, one shape for both.
#[derive(Debug, Serialize)]
pub struct TickDoc {
    /// Runs started.
    pub runs: u64,
    /// Runs that succeeded and were recorded.
    pub succeeded: u64,
    /// Jobs with a run that did not succeed (or was not recorded).
    pub failed_jobs: Vec<String>,
    /// Claims another worker or server won.
    pub duplicates_refused: u64,
    /// Store operations that failed.
    pub store_errors: u64,
}

impl TickDoc {
    pub fn of(summary: &Summary) -> TickDoc {
        TickDoc {
            runs: summary.jobs.iter().map(|j| j.runs).sum(),
            succeeded: summary.jobs.iter().map(|j| j.succeeded).sum(),
            failed_jobs: failed_jobs(summary),
            duplicates_refused: summary.duplicates_refused,
            store_errors: summary.store_errors,
        }
    }

    /// Every run succeeded and was recorded, and the pass was sound.
    pub fn ok(&self, summary: &Summary) -> bool {
        self.failed_jobs.is_empty() && self.store_errors == 0 && summary.ok()
    }
}

/// The jobs with a run that did not succeed or could not be recorded.
fn failed_jobs(summary: &Summary) -> Vec<String> {
    summary
        .jobs
        .iter()
        .filter(|j| j.runs > j.succeeded)
        .map(|j| j.job.clone())
        .collect()
}

/// One line per job that ran, then the totals: what a cron mail or a
/// CronJob's log shows.
fn tick_report(summary: &Summary) -> String {
    let mut out = String::new();
    for job in summary.jobs.iter().filter(|j| j.runs > 0) {
        out.push_str(&format!(
            "{}: {} run(s), {} succeeded, {} to retry, {} dead, {} lost lease, {} unrecorded\n",
            job.job,
            job.runs,
            job.succeeded,
            job.runs
                .saturating_sub(job.succeeded + job.dead + job.lease_lost + job.unrecorded),
            job.dead,
            job.lease_lost,
            job.unrecorded
        ));
    }
    let runs: u64 = summary.jobs.iter().map(|j| j.runs).sum();
    let succeeded: u64 = summary.jobs.iter().map(|j| j.succeeded).sum();
    out.push_str(&format!(
        "tick: {runs} run(s), {succeeded} succeeded; {} duplicate(s) refused, {} store error(s)\n",
        summary.duplicates_refused, summary.store_errors
    ));
    out
}

/// Exit 0 when every run succeeded and was recorded, 1 otherwise.
fn verdict(summary: &Summary) -> Result<(), Failure> {
    let mut problems = Vec::new();
    let failed = failed_jobs(summary);
    if !failed.is_empty() {
        problems.push(format!(
            "a run did not succeed or could not be recorded: {} (its slot is retried or \
             dead-lettered as the job says; see the log above and `cronslot status`)",
            failed.join(", ")
        ));
    }
    if summary.store_errors > 0 {
        problems.push(format!(
            "the store failed {} time(s); what could not be claimed is claimed by the next tick",
            summary.store_errors
        ));
    }
    if !summary.slots_run_twice.is_empty() {
        problems.push(format!(
            "slot(s) ran more than once ({}): cronslot's guarantee failed; please report this",
            summary.slots_run_twice.join(", ")
        ));
    }
    problems.extend(summary.worker_failures.iter().cloned());
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Failure::problem(format!("error: {}", problems.join("; "))))
    }
}
