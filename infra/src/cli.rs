//! The command-line interface: every subcommand, its arguments and help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

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
    Completions {
        #[arg(value_enum)]
        shell: Shell,
    },
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

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot next '30 2 * * *' --tz America/New_York \
                        --after 2026-03-07T00:00:00Z --count 3\n  \
                        cronslot next '@daily' --format json\n  \
                        cronslot next --job daily-report --manifest cronslot.toml"
)]
pub struct NextArgs {
    /// Cron expression (five fields), e.g. '0 9 * * MON-FRI'. Omit with --job.
    #[arg(
        value_name = "EXPR",
        required_unless_present = "job",
        conflicts_with = "job"
    )]
    pub expr: Option<String>,
    #[command(flatten)]
    pub zone: ZoneArgs,
    /// List instants strictly after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// How many instants to print.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub count: u32,
    /// Output format: text shows UTC and local time; json is for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// Use this job's schedule, zone and DST policy from the manifest.
    #[arg(long, value_name = "NAME")]
    pub job: Option<String>,
    /// The manifest to read --job from (default: $CRONSLOT_MANIFEST, else cronslot.toml).
    #[arg(long, value_name = "FILE", requires = "job")]
    pub manifest: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// Cron expression (five fields).
    #[arg(value_name = "EXPR")]
    pub expr: String,
    #[command(flatten)]
    pub zone: ZoneArgs,
    /// Output format: text, or json for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlatformArg {
    Eventbridge,
    Cloudflare,
}

#[derive(Debug, Args)]
pub struct TranslateArgs {
    /// Cron expression (five fields, Sunday = 0).
    #[arg(value_name = "EXPR")]
    pub expr: String,
    /// Target dialect.
    #[arg(long, value_enum)]
    pub to: PlatformArg,
    #[command(flatten)]
    pub zone: ZoneArgs,
    /// Output format: text, or json (expression, timezone, platform, exact,
    /// translation, reasons), printed for an inexact expression too (exit 3).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// Print the next slots after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// Output format: text, or json for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
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

/// Where job state lives, and the manifest that defines the jobs.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// The store: sqlite:PATH (the embedded default),
    /// postgres://USER@HOST[:PORT]/DB[?sslmode=…&schema=…],
    /// redis://[USER:PASSWORD@]HOST[:PORT]/DB[?prefix=…] (or rediss://),
    /// dynamodb://TABLE?region=R[&endpoint=URL], or https://HOST/PREFIX (a
    /// Cloudflare Worker's admin routes, e.g. https://jobs.example.com/cronslot;
    /// needs --token-env). Also read from CRONSLOT_STORE.
    #[arg(
        long,
        value_name = "URL",
        env = "CRONSLOT_STORE",
        hide_env_values = true,
        default_value = "sqlite:cronslot.db"
    )]
    pub store: String,
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
#[command(
    after_help = "Example (three competing workers, a minute per second, 45 minutes):\n  \
                        cronslot run examples/cronslot.toml --store sqlite:demo-out/cronslot.db \
                        --workers 3 --speed 60 --until +45m"
)]
pub struct RunArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// The store: sqlite:PATH (one machine),
    /// postgres://USER@HOST[:PORT]/DB[?sslmode=…&schema=…],
    /// redis://[USER:PASSWORD@]HOST[:PORT]/DB[?prefix=…] (or rediss://) or
    /// dynamodb://TABLE?region=R[&endpoint=URL] (a fleet). Prefer the
    /// environment (CRONSLOT_STORE, PGPASSWORD, REDISCLI_AUTH) for a URL with a password:
    /// a command line is visible to every user of the machine.
    #[arg(
        long,
        value_name = "URL",
        env = "CRONSLOT_STORE",
        hide_env_values = true,
        default_value = "sqlite:cronslot.db"
    )]
    pub store: String,
    /// Clock speed: 60 makes a minute pass per second (demos and tests).
    #[arg(long, default_value_t = 1.0)]
    pub speed: f64,
    /// Stop at this RFC 3339 instant, or after +DURATION (e.g. +45m) of clock time.
    #[arg(long, value_name = "RFC3339|+DURATION")]
    pub until: Option<String>,
    /// Competing workers in this process, each with its own owner id.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// Log lines: one per run, human-readable or JSON.
    #[arg(long, value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
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

#[derive(Debug, Args)]
#[command(
    after_help = "Example (a crontab line, every minute, on any number of machines):\n  \
                        * * * * * cronslot tick /etc/cronslot.toml --log-format json"
)]
pub struct TickArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// The store, as for `run` (sqlite:PATH, postgres://…, redis://…, dynamodb://…).
    #[arg(
        long,
        value_name = "URL",
        env = "CRONSLOT_STORE",
        hide_env_values = true,
        default_value = "sqlite:cronslot.db"
    )]
    pub store: String,
    /// Log lines: one per run, human-readable or JSON.
    #[arg(long, value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
    /// The pass's report on stdout: text, or json (the document `POST
    /// /cronslot/tick` answers with: runs, succeeded, failed_jobs,
    /// duplicates_refused, store_errors), printed whatever the exit code.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Example (the admin routes and the jobs, on one machine):\n  \
                        CRONSLOT_ADMIN_TOKEN=… cronslot serve cronslot.toml --run --listen 127.0.0.1:8080"
)]
pub struct ServeArgs {
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// The store, as for `run` (sqlite:PATH, postgres://…, redis://…, dynamodb://…).
    #[arg(
        long,
        value_name = "URL",
        env = "CRONSLOT_STORE",
        hide_env_values = true,
        default_value = "sqlite:cronslot.db"
    )]
    pub store: String,
    /// The address to serve on. Anything but loopback should sit behind
    /// TLS (a reverse proxy): the bearer tokens travel in the clear here.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Also run the jobs in this process, as `cronslot run` does.
    #[arg(long)]
    pub run: bool,
    /// With --run: competing workers, each with its own owner id.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub workers: u32,
    /// Log lines: human-readable or JSON.
    #[arg(long, value_enum, default_value = "pretty")]
    pub log_format: LogFormat,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The store to create: sqlite:PATH, postgres://…, redis://…,
    /// dynamodb://TABLE?region=R[&endpoint=URL],
    /// or https://HOST/PREFIX (a Cloudflare Worker's admin routes: wrangler
    /// creates its Durable Objects, and init repairs the wakes of objects
    /// written by an older cronslot; needs --token-env).
    #[arg(
        long,
        value_name = "URL",
        env = "CRONSLOT_STORE",
        hide_env_values = true,
        default_value = "sqlite:cronslot.db"
    )]
    pub store: String,
    /// With an https:// store: the environment variable that holds the
    /// Worker's admin token (its CRONSLOT_ADMIN_TOKEN secret).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// Output format: text, or json (what was created, already there or
    /// repaired, as one document).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

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

#[derive(Debug, Args)]
pub struct DlqArgs {
    #[command(subcommand)]
    pub action: DlqAction,
}

#[derive(Debug, Subcommand)]
pub enum DlqAction {
    /// List dead letters: slot, attempts, last error, fence.
    List {
        #[command(flatten)]
        store: StoreArgs,
        /// Only this job.
        #[arg(long, value_name = "NAME")]
        job: Option<String>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Send dead letters back to run, with a fresh attempt budget.
    Redrive {
        #[command(flatten)]
        store: StoreArgs,
        /// The job whose dead letters to redrive.
        #[arg(value_name = "JOB")]
        job: String,
        /// Only this slot (RFC 3339); default: every dead letter of the job.
        #[arg(long, value_name = "RFC3339")]
        slot: Option<String>,
        /// Output format: text, or json (the admin API's redrive document).
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
}

#[derive(Debug, Args)]
pub struct JobArgs {
    /// The job's name.
    #[arg(value_name = "JOB")]
    pub job: String,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `pause` and `resume`: the job, and how to say what changed.
#[derive(Debug, Args)]
pub struct PauseArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Output format: text, or json (the admin API's pause document).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// `trigger`: the job, and how to say what happened.
#[derive(Debug, Args)]
pub struct TriggerArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Output format: text, or json (the admin API's trigger document,
    /// printed also when the run failed or nothing ran).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct BackfillArgs {
    /// The job's name.
    #[arg(value_name = "JOB")]
    pub job: String,
    /// First slot instant to include (RFC 3339).
    #[arg(long, value_name = "RFC3339")]
    pub from: String,
    /// Last slot instant to include (RFC 3339, not in the future).
    #[arg(long, value_name = "RFC3339")]
    pub to: String,
    /// List the slots that would be queued, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format: text, or json (the admin API's backfill document).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RenderFormat {
    /// AWS SAM template (AWS::Serverless::Function, built by cargo-lambda).
    Sam,
    /// Plain CloudFormation (no SAM transform; code from S3).
    Cloudformation,
    /// wrangler.toml for the Cloudflare Worker.
    Wrangler,
    /// A table of every job for the people who operate them.
    Markdown,
    /// A Deployment (`cronslot run`) or a CronJob (`cronslot tick`), with the manifest in a ConfigMap.
    Kubernetes,
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

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot render sam examples/aws-jobs/cronslot.toml --out template.yaml\n  \
                        cronslot render wrangler cronslot.toml --name my-jobs --cron-limit 250\n  \
                        cronslot render markdown cronslot.toml > JOBS.md\n  \
                        cronslot render kubernetes cronslot.toml --kind cronjob --namespace jobs"
)]
pub struct RenderArgs {
    /// What to write.
    #[arg(value_enum, value_name = "FORMAT")]
    pub format: RenderFormat,
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// Write here instead of stdout (parent directories are created).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// wrangler: the Worker's name (default: the manifest's directory name, or "cronslot").
    /// kubernetes: the objects' name, a DNS-1123 label (default: the manifest's file stem).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// wrangler: the account's cron trigger limit, counting the tick (5 on Free, 250 on Paid).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub cron_limit: Option<u32>,
    /// sam: the function's CodeUri (default: the manifest's directory, relative to --out's).
    #[arg(long, value_name = "DIR")]
    pub code_uri: Option<String>,
    /// sam, cloudformation: the binary cargo-lambda builds (default: from the Cargo.toml beside the manifest).
    #[arg(long, value_name = "NAME")]
    pub binary: Option<String>,
    /// markdown: list the next runs after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// kubernetes: a Deployment running `cronslot run`, or a CronJob running `cronslot tick` [default: deployment].
    #[arg(long, value_enum, value_name = "KIND")]
    pub kind: Option<KubernetesKind>,
    /// kubernetes --kind deployment: how many replicas (each slot still runs once) [default: 2].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub replicas: Option<u32>,
    /// kubernetes: the container image with the cronslot binary (and whatever the command
    /// jobs run) [default: ghcr.io/cronslot/cronslot:VERSION]; pin your own.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// kubernetes: the namespace of every object (default: none, kubectl's current one).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// kubernetes: the Secret whose key `url` holds the store URL [default: NAME-store].
    #[arg(long, value_name = "SECRET")]
    pub secret: Option<String>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot check template.yaml --manifest cronslot.toml\n  \
                        cronslot check wrangler.toml --manifest cronslot.toml --cron-limit 250\n  \
                        cronslot check --live aws --manifest cronslot.toml --group cronslot"
)]
pub struct CheckArgs {
    /// A SAM/CloudFormation template (.yaml, .yml, .json, .template), a wrangler.toml,
    /// or a Kubernetes YAML (`render kubernetes`).
    #[arg(
        value_name = "TEMPLATE",
        required_unless_present = "live",
        conflicts_with = "live"
    )]
    pub template: Option<PathBuf>,
    /// Compare what is deployed instead of a template: the EventBridge
    /// Scheduler schedules of --group (and --prefix) in the account.
    #[arg(long, value_enum, value_name = "PLATFORM")]
    pub live: Option<ApiPlatform>,
    /// --live: the schedule group [default: cronslot].
    #[arg(long, value_name = "GROUP", requires = "live")]
    pub group: Option<String>,
    /// --live: only schedules whose names start with this.
    #[arg(long, value_name = "PREFIX", requires = "live")]
    pub prefix: Option<String>,
    /// --live: the AWS region (default: AWS_REGION or the profile's).
    #[arg(long, value_name = "REGION", requires = "live")]
    pub region: Option<String>,
    /// --live: the API endpoint (default: AWS_ENDPOINT_URL, else AWS's).
    #[arg(long, value_name = "URL", requires = "live")]
    pub endpoint_url: Option<String>,
    /// The manifest the template should match.
    #[command(flatten)]
    pub manifest: ManifestFlag,
    /// Compare fire times over the year after this RFC 3339 instant (default: now).
    #[arg(long, value_name = "RFC3339")]
    pub after: Option<String>,
    /// wrangler: the account's cron trigger limit, counting the tick (5 on Free, 250 on Paid).
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub cron_limit: u32,
    /// Output format: text (one finding per line), or json (one document,
    /// printed also when there are differences).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

/// A platform whose schedules `sync` and `check --live` manage by API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApiPlatform {
    /// EventBridge Scheduler.
    Aws,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  cronslot sync aws cronslot.toml --dry-run \\\n    \
                        --target-arn arn:aws:lambda:us-east-1:123456789012:function:jobs \\\n    \
                        --role-arn arn:aws:iam::123456789012:role/jobs-scheduler\n  \
                        cronslot check --live aws --manifest cronslot.toml"
)]
pub struct SyncArgs {
    /// Where the schedules live.
    #[arg(value_enum, value_name = "PLATFORM")]
    pub platform: ApiPlatform,
    #[command(flatten)]
    pub manifest: ManifestInput,
    /// The schedule group that holds the manifest's schedules (created when missing).
    #[arg(long, value_name = "GROUP", default_value = "cronslot")]
    pub group: String,
    /// Name every schedule PREFIX+JOB; only schedules with the prefix are touched.
    #[arg(long, value_name = "PREFIX", default_value = "")]
    pub prefix: String,
    /// Print the plan (create, update, delete, unchanged per schedule) and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Output format: text, or json (one document, printed also when
    /// some schedules failed).
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
    /// The function every schedule invokes (its ARN). Needed by the first
    /// sync; afterwards, when left out, each schedule keeps its own and a
    /// new one takes the group's.
    #[arg(long, value_name = "ARN")]
    pub target_arn: Option<String>,
    /// The role Scheduler assumes to invoke it (lambda:InvokeFunction,
    /// sqs:SendMessage). Like --target-arn, kept when left out.
    #[arg(long, value_name = "ARN")]
    pub role_arn: Option<String>,
    /// The SQS queue undeliverable events go to (recommended). Kept when left out.
    #[arg(long, value_name = "ARN")]
    pub dead_letter_arn: Option<String>,
    /// The AWS region (default: AWS_REGION or the profile's).
    #[arg(long, value_name = "REGION")]
    pub region: Option<String>,
    /// The API endpoint (default: AWS_ENDPOINT_URL, else AWS's).
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
}

/// The platform `cronslot new` writes a project for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NewPlatform {
    /// An AWS Lambda function (EventBridge Scheduler, DynamoDB), with a SAM template.
    Aws,
    /// A Cloudflare Worker (Cron Triggers, Durable Objects), with its wrangler.toml.
    Cloudflare,
    /// A program running the jobs on one machine (SQLite).
    Local,
    /// A program for a fleet of servers sharing one PostgreSQL.
    Postgres,
}

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  cronslot new my-jobs --platform aws\n  \
                        cronslot new my-jobs --platform local --cronslot-path ~/src/cronslot")]
pub struct NewArgs {
    /// The project's directory (created in the current one) and Cargo package name:
    /// lowercase letters, digits, '-' and '_', starting with a letter.
    #[arg(value_name = "NAME")]
    pub name: String,
    /// Where the jobs run.
    #[arg(long, value_enum, value_name = "PLATFORM")]
    pub platform: NewPlatform,
    /// Depend on the cronslot crates in this checkout of cronslot's repository
    /// (path dependencies) instead of their releases on crates.io.
    #[arg(long, value_name = "DIR")]
    pub cronslot_path: Option<PathBuf>,
    /// Output format: text, or json (the project's path and files) for scripts.
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
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
