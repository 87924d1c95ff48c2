//! The command line's top level: the `cronslot` command, its subcommands
//! with their help text, and the argument types several of them share
//! (formats, the zone and DST options, the manifest, the store). Each
//! subcommand's own arguments are beside its code, in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::commands::backfill::BackfillArgs;
use crate::commands::check::CheckArgs;
use crate::commands::completions::CompletionsArgs;
use crate::commands::dlq::DlqArgs;
use crate::commands::explain::ExplainArgs;
use crate::commands::init::InitArgs;
use crate::commands::new::NewArgs;
use crate::commands::next::NextArgs;
use crate::commands::pause::PauseArgs;
use crate::commands::render::RenderArgs;
use crate::commands::run::RunArgs;
use crate::commands::runs::RunsArgs;
use crate::commands::schedule::ScheduleArgs;
use crate::commands::serve::ServeArgs;
use crate::commands::status::StatusArgs;
use crate::commands::sync::SyncArgs;
use crate::commands::tick::TickArgs;
use crate::commands::translate::TranslateArgs;
use crate::commands::trigger::TriggerArgs;
use crate::commands::validate::ValidateArgs;

#[derive(Debug, Parser)]
#[command(
    name = "cronslot",
    version = crate::version::text(),
    about = "Scheduled jobs that run once in effect per scheduled slot",
    long_about = "cronslot gives every scheduled occurrence of a job an identity (the slot), \
                  decides which slots run, and checks schedules against every platform's cron \
                  dialect.\n\nSchedules use five fields (minute hour day-of-month month \
                  day-of-week), Sunday = 0 or 7, in an IANA time zone.",
    after_help = "Examples:\n  cronslot next '0 9 * * MON-FRI' --tz America/New_York\n  \
                  cronslot explain '30 2 * * *' --tz Europe/Berlin\n  \
                  cronslot translate '0 9 * * MON-FRI' --to eventbridge --tz America/New_York\n  \
                  cronslot validate examples/cronslot.toml"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the next fire instants of an expression or a manifest job.
    Next(NextArgs),
    /// Describe a schedule in plain English, with its DST behaviour.
    Explain(ExplainArgs),
    /// Translate an expression to a platform's cron dialect, exactly or not at all.
    ///
    /// Prints the translated expression alone on the last line of stdout
    /// (`cron(...)` for EventBridge, five fields for Cloudflare). When no
    /// exact translation exists, prints the reasons on stderr and exits 3.
    Translate(TranslateArgs),
    /// Check a manifest and print every job with its next three slots.
    Validate(ValidateArgs),
    /// Run the manifest's jobs on a store, each slot once, until stopped.
    ///
    /// On the embedded store (sqlite:PATH) for one machine, or on a shared
    /// one (postgres://…, redis://…, dynamodb://…) for a fleet: run it on every
    /// server with the same manifest and store; each slot runs once. Exits
    /// 0 when it stopped normally (dead letters are the jobs' failures, not
    /// the runner's), 1 if a slot ran twice or a worker failed, 2 on bad
    /// input. SIGTERM or Ctrl-C: claim nothing more and let running jobs
    /// finish; a second one stops them too.
    Run(RunArgs),
    /// Make one pass: run every job's due slots once, wait for them, exit.
    ///
    /// For system cron, systemd timers, Kubernetes CronJobs and CI
    /// schedules: call it every minute on any number of machines with one
    /// shared store; each slot runs once. Plans every job at now, runs the
    /// due slots of command and http jobs within their timeouts, and
    /// records each outcome. Exits 0 when every run succeeded and was
    /// recorded (or nothing was due), 1 when a run failed (it is retried or
    /// dead-lettered as usual) or the store failed, 2 on bad input (a Rust
    /// function job, which only a program embedding cronslot can run).
    Tick(TickArgs),
    /// Serve the admin routes (status, pause, redrive, trigger…) and a tick URL over HTTP.
    ///
    /// The Worker's routes under /cronslot, on any store: the same paths,
    /// JSON and bearer token (CRONSLOT_ADMIN_TOKEN; unset, every route but
    /// /cronslot/health answers 503). POST /cronslot/tick runs one pass as
    /// `cronslot tick` does, for schedulers that can only call a URL; it
    /// takes Authorization: Bearer with CRONSLOT_TICK_SECRET. With --run,
    /// the process also runs the jobs, as `cronslot run` does. Stops on
    /// SIGTERM or Ctrl-C after the requests in flight. Exits 0 when it
    /// stopped normally, 1 when it could not serve, 2 on bad input.
    Serve(ServeArgs),
    /// Create what a store needs: the SQLite file, the PostgreSQL schema, or the DynamoDB table.
    ///
    /// Idempotent: what exists already is left as it is (and said so).
    /// Records written by an older cronslot get the wakes they need. On a
    /// Worker's admin URL, that repair is all init does.
    /// Exits 0 when the store is ready, 1 when it could not be made ready,
    /// 2 on bad input. With --format json: one document on stdout (the
    /// store, its kind, what was created or already there, what was
    /// repaired) when the store is ready; nothing on stdout otherwise.
    Init(InitArgs),
    /// Show each job's last success, next slot, live leases, fence, counts and dead letters.
    ///
    /// Also each job's health: ok, STALE (no success within `stale_after`,
    /// or the bound derived from its schedule; a job that never succeeded
    /// counts from its first slot), never ran, or paused. Status only reads
    /// and exits 0 whatever the jobs' health (scripts read the JSON `stale`
    /// field); 2 on bad input, such as a store that does not exist yet.
    Status(StatusArgs),
    /// List or redrive dead letters (slots whose retries are exhausted).
    Dlq(DlqArgs),
    /// Pause a job: its slots are skipped (and counted) until it is resumed.
    Pause(PauseArgs),
    /// Resume a paused job: the next slot runs; slots due while paused stay skipped.
    Resume(PauseArgs),
    /// Queue past slots of a job to run again (oldest first).
    Backfill(BackfillArgs),
    /// Create, show or delete a schedule of a dynamic job (dynamic = true).
    ///
    /// A dynamic job's schedules are data, one per key, written while the
    /// application runs: `put` writes one (a full replace; an equal spec
    /// writes nothing; --if-match VERSION writes only over that version,
    /// --create-only only where none is), `get` shows its spec, version,
    /// next slots and status, `rm` deletes it (a tombstone keeps its
    /// version). The same operations as the admin routes PUT, GET and
    /// DELETE /cronslot/schedules/JOB/KEY; --format json prints their
    /// documents. Exits 0 when done, 1 when it could not be done as asked
    /// (no such schedule, another version, the store failed), 2 on bad
    /// input (a job that is not dynamic, a bad key or spec).
    Schedule(ScheduleArgs),
    /// Enqueue or show a keyed run of a dynamic job: one run per business key.
    ///
    /// `put JOB KEY --payload JSON` enqueues a one-off run of the job under
    /// the key, due now (or --at): the key is claimed atomically, so the
    /// same key with the same payload, within the job's key_retention (30
    /// days after the run ends unless the job says longer), answers the run
    /// it names and never makes a second one; another payload is refused.
    /// `get JOB KEY` shows the run's status (pending, running, retrying,
    /// succeeded, dead), attempts, last error, instants and fence. `ls JOB`
    /// lists a page of the job's runs in key order (--prefix, --status,
    /// --limit, --cursor). The same operations as the admin routes PUT and
    /// GET /cronslot/runs/JOB/KEY and GET /cronslot/runs/JOB; --format json
    /// prints their documents. Exits 0 when enqueued (or already there),
    /// read or listed, 1 when it could not be done (another
    /// payload under the key, no such run, the store failed), 2 on bad input.
    Runs(RunsArgs),
    /// Run the current slot of a job now, once (even if it is late).
    ///
    /// Claims the job's latest slot at or before now as a runner would (a
    /// new fence, the job's overlap policy), runs its command here with the
    /// CRONSLOT_* environment and the job's timeout, and records the
    /// outcome. Command jobs only: http and Rust function jobs are refused
    /// before anything is claimed (their runner runs them). Exits 0 when the
    /// run succeeded; 1 when nothing ran (the slot already ran, is running,
    /// or the job is paused) or the run failed (retried or dead-lettered as
    /// usual); 2 on bad input. With an https:// store (a Cloudflare
    /// Worker's admin URL) the Worker claims, runs and records the slot
    /// itself, whatever kind of job it is, and this prints what happened.
    /// With --format json: the admin route's trigger document on stdout
    /// whenever the trigger came to an outcome (succeeded, failed, nothing
    /// claimed, cannot run here, claim failed, not recorded), with the
    /// exit code and the stderr message above; nothing on stdout when it
    /// failed before that (bad input, a store that cannot be opened).
    Trigger(TriggerArgs),
    /// Write an infrastructure template (or an operations table) from the manifest.
    ///
    /// `sam` and `cloudformation`: the DynamoDB table, the Lambda function,
    /// a least-privilege role, one EventBridge Scheduler schedule per
    /// dedicated job (its exact translation) and one tick for the rest, a
    /// dead-letter queue and a staleness alarm per job. `wrangler`: the
    /// Worker's crons (the tick, then dedicated jobs' exact UTC crons within
    /// --cron-limit), its Durable Object binding and migration. `markdown`:
    /// every job for the people who operate it. `kubernetes`: a Deployment
    /// running `cronslot run` (or, with --kind cronjob, a CronJob running
    /// `cronslot tick` every minute) with the manifest in a ConfigMap and
    /// the store URL from a Secret. The output is deterministic
    /// and says what it was generated from. A dedicated job without an
    /// exact translation runs on the tick, with a note (on stderr too).
    /// Exit 0, or 2 on bad input.
    Render(RenderArgs),
    /// Compare a template's schedules with the manifest, by fire times.
    ///
    /// Reads a SAM/CloudFormation template (YAML with !Ref/!Sub/... tags, or
    /// JSON), a wrangler.toml, or a Kubernetes YAML from `render
    /// kubernetes` (its ConfigMap's manifest is compared job by job, its
    /// Deployment or CronJob with what render writes), evaluates every schedule in its platform's
    /// dialect (EventBridge counts weekdays 1-7 from Sunday, Cloudflare runs
    /// in UTC) and compares the instants it fires at over the next year with
    /// the manifest's slots: missing, extra and different schedules, wrong
    /// zones, retry policies that outlive the next slot, crons written with
    /// POSIX weekday numbers. With --live aws instead of a template, the
    /// same comparison on the EventBridge Scheduler schedules deployed in a
    /// schedule group (see `sync`). Exits 0 when consistent, 1 with the
    /// differences, 2 on bad input. With --format json: one document on
    /// stdout with every difference and note, printed when there are
    /// differences too (exit 1, and the count on stderr); nothing on stdout
    /// on bad input.
    Check(CheckArgs),
    /// Make the account's EventBridge Scheduler schedules match the manifest.
    ///
    /// For schedules managed by API rather than templates: creates, updates
    /// and deletes the schedules of the manifest's dedicated jobs (and the
    /// tick for tick-mode jobs), as `render sam` would write them, in one
    /// schedule group (default `cronslot`, created when missing) and under
    /// an optional name prefix. A job's schedule is named PREFIX+JOB, the
    /// tick PREFIX+_tick. Only schedules of that group and prefix whose
    /// Input is a cronslot one are ever deleted. Idempotent, and safe when
    /// two syncs run at once. Exits 0 when in sync or synced, 1 on AWS
    /// errors, 2 on bad input. With --format json: one document on stdout
    /// with every schedule's action (or, with --dry-run, what it would
    /// be), printed also when some schedules failed (exit 1, the errors on
    /// stderr too); nothing on stdout when sync failed before its plan.
    Sync(SyncArgs),
    /// Write a new project: a Rust job, its manifest, its build and its platform's template.
    ///
    /// Creates ./NAME, a standalone Cargo project (outside any workspace)
    /// for --platform: aws (a Lambda, with template.yaml from `render
    /// sam`), cloudflare (a Worker, with wrangler.toml from `render
    /// wrangler`), local (a program running the jobs on SQLite) or
    /// postgres (a program for a fleet sharing PostgreSQL, with a
    /// Kubernetes Deployment of it and a Dockerfile). Its
    /// cronslot.toml has one example job, src/jobs.rs the function that
    /// runs it, README.md the commands to build, run and deploy it. The
    /// cronslot crates come from crates.io at this CLI's version, or from
    /// a checkout with --cronslot-path. Never overwrites: an existing NAME
    /// is refused, and the directory appears whole or not at all. Exits 0
    /// when written, 1 when it could not be written, 2 on bad input.
    New(NewArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GapArg {
    Shift,
    Skip,
    ShiftAlways,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OverlapArg {
    Once,
    Twice,
}

/// Zone and DST policy options shared by the schedule commands.
#[derive(Debug, Args)]
pub struct ZoneArgs {
    /// IANA time zone the expression is evaluated in.
    #[arg(long, value_name = "ZONE", default_value = "UTC")]
    pub tz: String,
    /// Fixed-time slots in a DST gap: run at the end of the gap, or skip.
    /// A jump of 3 hours or more is a clock change, whose slots are skipped
    /// under both; shift-always runs them at the end of any jump.
    #[arg(long, value_enum, default_value = "shift")]
    pub dst_gap: GapArg,
    /// Fixed-time slots in a repeated hour: run once (first pass) or twice.
    #[arg(long, value_enum, default_value = "once")]
    pub dst_overlap: OverlapArg,
}

/// The manifest, for the commands that name it first (`cronslot run
/// [MANIFEST]`): the argument, or `--manifest FILE` as every command takes
/// it, or `CRONSLOT_MANIFEST`, or `cronslot.toml`.
#[derive(Debug, Args)]
pub struct ManifestInput {
    /// The manifest (default: $CRONSLOT_MANIFEST, else cronslot.toml). Same as --manifest FILE.
    #[arg(
        id = "manifest_path",
        value_name = "MANIFEST",
        conflicts_with = "manifest"
    )]
    path: Option<PathBuf>,
    /// The manifest, as every command takes it (default: $CRONSLOT_MANIFEST, else cronslot.toml).
    #[arg(id = "manifest", long = "manifest", value_name = "FILE")]
    flag: Option<PathBuf>,
}

impl ManifestInput {
    /// The manifest's path by the rule above.
    pub fn path(&self) -> PathBuf {
        manifest_path(self.path.as_deref().or(self.flag.as_deref()))
    }
}

/// The manifest, for the commands whose arguments are other things (jobs,
/// platforms): `--manifest FILE`, or `CRONSLOT_MANIFEST`, or `cronslot.toml`.
#[derive(Debug, Args)]
pub struct ManifestFlag {
    /// The manifest that defines the jobs (default: $CRONSLOT_MANIFEST, else cronslot.toml).
    #[arg(id = "manifest", long = "manifest", value_name = "FILE")]
    flag: Option<PathBuf>,
}

impl ManifestFlag {
    /// The manifest's path.
    pub fn path(&self) -> PathBuf {
        manifest_path(self.flag.as_deref())
    }
}

/// The environment variable that names the manifest when no argument does.
pub const MANIFEST_ENV: &str = "CRONSLOT_MANIFEST";

/// An explicit path, else `CRONSLOT_MANIFEST` (when set and not blank),
/// else `cronslot.toml`. (Read here rather than through clap's `env`, which
/// would make a set variable conflict with an explicit argument.)
pub fn manifest_path(explicit: Option<&std::path::Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    match std::env::var_os(MANIFEST_ENV) {
        Some(v) if !v.to_string_lossy().trim().is_empty() => PathBuf::from(v),
        _ => PathBuf::from("cronslot.toml"),
    }
}

/// `--store URL`, declared once for every command that opens a store (`run`,
/// `tick`, `serve`, `init` and, through [`StoreArgs`], the store commands):
/// one flag, environment variable, default and help text. It derefs to the
/// URL, so `&args.store` is the `&str` the store parsers take. `--token-env`
/// is not part of it: `run`, `tick` and `serve` refuse a Worker's admin URL.
#[derive(Debug, Args)]
pub struct StoreFlag {
    /// The store: sqlite:PATH (one machine),
    /// postgres://USER@HOST[:PORT]/DB[?sslmode=…&schema=…],
    /// redis://[USER:PASSWORD@]HOST[:PORT]/DB[?prefix=…] (or rediss://) or
    /// dynamodb://TABLE?region=R[&endpoint=URL] (a fleet); where the command
    /// takes --token-env, also https://HOST/PREFIX (a Cloudflare Worker's
    /// admin routes, e.g. https://jobs.example.com/cronslot). Prefer the
    /// environment (CRONSLOT_STORE, PGPASSWORD, REDISCLI_AUTH) for a URL
    /// with a password: a command line is visible to every user of the
    /// machine.
    #[arg(
        id = "store",
        long = "store",
        value_name = "URL",
        env = "CRONSLOT_STORE",
        hide_env_values = true,
        default_value = "sqlite:cronslot.db"
    )]
    url: String,
}

impl std::ops::Deref for StoreFlag {
    type Target = str;

    fn deref(&self) -> &str {
        &self.url
    }
}

/// Where job state lives, and the manifest that defines the jobs.
#[derive(Debug, Args)]
pub struct StoreArgs {
    #[command(flatten)]
    pub store: StoreFlag,
    /// With an https:// store: the environment variable that holds the
    /// Worker's admin token (its CRONSLOT_ADMIN_TOKEN secret). The token is
    /// read from the environment, never from the command line.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    #[command(flatten)]
    pub manifest: ManifestFlag,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Debug, Args)]
pub struct JobArgs {
    /// The job's name.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// Act on this schedule of the dynamic job JOB (its record alone)
    /// instead of a job's own record.
    #[arg(long, value_name = "KEY")]
    pub key: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// What `render kubernetes` runs the jobs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum KubernetesKind {
    /// Long-running `cronslot run` replicas competing for each slot.
    Deployment,
    /// A CronJob running `cronslot tick` every minute.
    #[value(name = "cronjob")]
    CronJob,
}

/// A platform whose schedules `sync` and `check --live` manage by API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiPlatform {
    /// EventBridge Scheduler.
    Aws,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
