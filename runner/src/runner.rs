//! The local runner: N competing workers in one process over one shared
//! store (SQLite by default; PostgreSQL or DynamoDB for a fleet of
//! machines), each slot run once, until a time or Ctrl-C; or one pass
//! over what is due ([`Runner::single_pass`], `cronslot tick`).
//!
//! Each worker is a thread with its own current-thread runtime, `LocalSet`,
//! owner id (`host-pid-w1`…) and `CasCoordinator` over a clone of the store.
//! A store whose clients belong to a runtime must survive being used from
//! several (PostgreSQL's store drives its connections on a runtime of its
//! own); the runner's own thread keeps its runtime for the whole run, for
//! reading the records at start and stop.
//! Threads, not tasks on one thread, because the SQLite store's operations
//! run inline (they never yield): workers on one thread would take turns
//! and never actually compete, and one worker waiting on the file's lock
//! would stall the others. On threads they race for the same slots exactly
//! as separate processes do, and the store's compare-and-set decides.
//!
//! ```no_run
//! use cronslot_runner::{Clock, Jobs, Runner, SqliteStore};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let text = std::fs::read_to_string("cronslot.toml")?;
//! let manifest = cronslot_core::manifest::parse_manifest(&text, "cronslot.toml")?;
//! let jobs = Jobs::new().register("report", |ctx| async move {
//!     ctx.effect("send", || async { Ok("sent".to_string()) }).await?;
//!     Ok(())
//! });
//! let summary = Runner::new(SqliteStore::open("cronslot.db")?, manifest.jobs, Clock::real())
//!     .with_jobs(jobs)
//!     .workers(2)
//!     .handle_ctrl_c(true)
//!     .run()?;
//! println!("{summary}");
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cronslot_core::coord::{JobState, format_instant};
use cronslot_core::manifest::{Action, JobSpec, JobTemplate};
use jiff::Timestamp;
use tokio::sync::{mpsc, watch};

use crate::clock::{Clock, add};
use crate::health::Health;
use crate::records_seen::RecordsSeen;
use cronslot_runtime::Jobs;
use cronslot_sqlite::SqliteStore;
use cronslot_stores::{WakeSignal, Woken};

use crate::platform::LocalPlatform;
use crate::summary::{Summary, SummaryInput, Tally, summarize};
use crate::watch::{Stop, Watch};
use crate::worker::{RunnerStore, Running, Shared, Worker};

/// The most workers one runner starts.
pub const MAX_WORKERS: u32 = 64;

/// The runner could not start.
#[derive(Debug)]
pub struct RunError(pub String);

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunError {}

/// Stops a running [`Runner`] from another thread.
#[derive(Debug, Clone)]
pub struct StopHandle {
    tx: Arc<watch::Sender<Stop>>,
}

impl StopHandle {
    /// Claim nothing more and let the running jobs finish.
    pub fn stop(&self) {
        self.tx.send_if_modified(|s| {
            let change = *s == Stop::Running;
            if change {
                *s = Stop::Graceful;
            }
            change
        });
    }

    /// Stop the running jobs too; they are recorded as transient failures,
    /// so their slots are retried by the next runner.
    pub fn stop_now(&self) {
        self.tx.send_replace(Stop::Now);
    }
}

/// When the runner stops claiming.
#[derive(Debug, Clone, Copy)]
enum Until {
    At(Timestamp),
    /// This long (clock time) after the runner starts.
    After(Duration),
}

/// Runs a manifest's jobs. Build it, then [`Runner::run`] blocks until
/// `until`, a [`StopHandle`], or (with [`Runner::handle_ctrl_c`]) Ctrl-C.
pub struct Runner<S: RunnerStore = SqliteStore> {
    store: S,
    specs: Vec<JobSpec>,
    templates: Vec<JobTemplate>,
    clock: Clock,
    jobs: Jobs,
    workers: u32,
    max_running: Option<u32>,
    claim_ahead: Option<u32>,
    until: Option<Until>,
    single_pass: bool,
    ctrl_c: bool,
    grace: Option<Duration>,
    owner_prefix: String,
    stop: Arc<watch::Sender<Stop>>,
    health: Arc<Health>,
    wakes: Option<WakeSignal>,
}

impl<S: RunnerStore> Runner<S> {
    /// A runner of `specs` (a manifest's jobs) over `store`, timed by
    /// `clock`: one worker, no registered functions, no end (it runs until
    /// a [`StopHandle`] stops it), Ctrl-C not handled.
    pub fn new(store: S, specs: Vec<JobSpec>, clock: Clock) -> Runner<S> {
        Runner {
            store,
            specs,
            templates: Vec::new(),
            clock,
            jobs: Jobs::new(),
            workers: 1,
            max_running: None,
            claim_ahead: None,
            until: None,
            single_pass: false,
            ctrl_c: false,
            grace: None,
            owner_prefix: default_owner_prefix(),
            stop: Arc::new(watch::channel(Stop::Running).0),
            health: Arc::new(Health::new(1)),
            wakes: None,
        }
    }

    /// Wakes a worker at once when `signal` fires (the store's wake
    /// signal: `store.wake_signal()` on PostgreSQL, Redis, SQLite or an
    /// `AnyStore`), so that a keyed run enqueued, or a slot triggered, by
    /// anyone starts within a second rather than at the next poll. `None`
    /// (DynamoDB, an in-memory store) leaves the poll alone, which stays
    /// the safety net in any case: a signal that is lost while its
    /// listener reconnects costs at most a poll's wait.
    pub fn woken_by(mut self, signal: impl Into<Option<WakeSignal>>) -> Runner<S> {
        self.wakes = signal.into();
        self
    }

    /// The manifest's dynamic jobs ([`Manifest::templates`]): the runner
    /// serves the schedules the store holds for them, each found through
    /// its wake like any due record.
    ///
    /// [`Manifest::templates`]: cronslot_core::manifest::Manifest
    pub fn with_templates(mut self, templates: Vec<JobTemplate>) -> Runner<S> {
        self.templates = templates;
        self
    }

    /// The Rust functions of the manifest's function jobs.
    pub fn with_jobs(mut self, jobs: Jobs) -> Runner<S> {
        self.jobs = jobs;
        self
    }

    /// Competing workers (1 to [`MAX_WORKERS`]; other values are clamped).
    pub fn workers(mut self, n: u32) -> Runner<S> {
        self.workers = n.clamp(1, MAX_WORKERS);
        self.health = Arc::new(Health::new(self.workers));
        self
    }

    /// At most `n` runs at once in this process, over all its workers (at
    /// least 1): a worker claims only while fewer are running, so a burst
    /// of due runs (keyed runs enqueued by the thousand, a 09:00 of many
    /// schedules) waits in the store, where any process may take it,
    /// rather than all starting here. Unbounded by default.
    pub fn max_running(mut self, n: u32) -> Runner<S> {
        self.max_running = Some(n.max(1));
        self
    }

    /// With [`Runner::max_running`]: up to `n` more leases claimed ahead
    /// of the free places, each waiting (its lease kept alive) to start
    /// the moment a run ends, so that the next run does not wait for a
    /// round trip to the store. As many as `max_running` by default; 0
    /// claims only for free places (a fleet of long runs, where a lease
    /// waiting here would start sooner in another process).
    pub fn claim_ahead(mut self, n: u32) -> Runner<S> {
        self.claim_ahead = Some(n);
        self
    }

    /// Stop claiming when the clock reaches `t`; running jobs finish.
    pub fn until(mut self, t: Timestamp) -> Runner<S> {
        self.until = Some(Until::At(t));
        self
    }

    /// One pass instead of a loop: every job is planned once at the
    /// clock's now, its due slots are claimed and run, and the runner ends
    /// when those runs have ended (within their time limits). What system
    /// cron, a systemd timer or a Kubernetes CronJob calls every minute.
    pub fn single_pass(mut self) -> Runner<S> {
        self.single_pass = true;
        self
    }

    /// The runner's health (whether its workers make progress, whether its
    /// store answers), for a probe to read from another thread while
    /// [`Runner::run`] runs. Take it after [`Runner::workers`].
    pub fn health(&self) -> Arc<Health> {
        Arc::clone(&self.health)
    }

    /// Stop claiming after `clock_time` from the start of [`Runner::run`]
    /// (measured from the instant the jobs are registered, so that the
    /// number of slots in the window does not depend on start-up time).
    pub fn run_for(mut self, clock_time: Duration) -> Runner<S> {
        self.until = Some(Until::After(clock_time));
        self
    }

    /// Owner ids are `<prefix>-w<n>`; the default prefix is `host-pid`.
    pub fn owner_prefix(mut self, prefix: impl Into<String>) -> Runner<S> {
        self.owner_prefix = prefix.into();
        self
    }

    /// First Ctrl-C or SIGTERM: claim nothing more, let running jobs
    /// finish (within their time limits). Second: stop them too. Off by default: a library
    /// should not take over a process's signals unasked.
    pub fn handle_ctrl_c(mut self, on: bool) -> Runner<S> {
        self.ctrl_c = on;
        self
    }

    /// The drain's grace period (real time): once asked to stop (a signal
    /// or a [`StopHandle`]), the runner claims nothing more and lets its
    /// running jobs go on for at most `grace`; the jobs still running then
    /// are dropped without a word to the store (a command's process group
    /// is killed), so their leases expire as after a crash and another
    /// runner retries their slots. Without it (the default) the running
    /// jobs go on within their own time limits.
    ///
    /// Why not record them as failed: at the end of a grace period the
    /// platform is about to kill the process (Kubernetes' SIGKILL at
    /// `terminationGracePeriodSeconds`), and a run declared failed while
    /// its effects may still land (a command's detached children) would be
    /// retried beside them; an expired lease, and the fence that comes
    /// with the next claim, is the one rule for every way a runner ends.
    pub fn drain_grace(mut self, grace: Duration) -> Runner<S> {
        self.grace = Some(grace);
        self
    }

    /// A handle that stops this runner from another thread once
    /// [`Runner::run`] has started (call it before: `run` takes the runner).
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            tx: Arc::clone(&self.stop),
        }
    }

    /// Function jobs with no registered function: each of their runs would
    /// fail permanently (the CLI, which has no Rust functions, refuses to
    /// start on them).
    pub fn unrunnable(&self) -> Vec<String> {
        let specs = self.specs.iter().map(|s| (&s.name, &s.action));
        let templates = self.templates.iter().map(|t| (&t.name, &t.action));
        specs
            .chain(templates)
            .filter(|(name, action)| {
                **action == Action::Function && !self.jobs.contains(name.as_str())
            })
            .map(|(name, _)| name.as_str().to_string())
            .collect()
    }

    /// Runs until stopped; returns what happened. Store errors never end
    /// the run (they are logged and retried); only failing to start does.
    pub fn run(self) -> Result<Summary, RunError> {
        self.jobs
            .check_all(
                &self.specs,
                &self.templates,
                &LocalPlatform::new(self.clock.clone()),
            )
            .map_err(|e| RunError(e.to_string()))?;
        let started_at = self.clock.now();
        let until = self.until.map(|u| match u {
            Until::At(t) => t,
            Until::After(d) => add(started_at, d),
        });
        let names: Vec<String> = self
            .specs
            .iter()
            .map(|s| s.name.as_str().to_string())
            .collect();
        let template_names: Vec<String> = self
            .templates
            .iter()
            .map(|t| t.name.as_str().to_string())
            .collect();
        let main = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| RunError(format!("could not start the runtime: {e}")))?;
        // Records are created when their jobs first come due (a tick's
        // planned slot says when they existed from), and read only then.
        let store = RecordsSeen::watch(self.store.clone());
        let watch = Arc::new(Watch {
            tally: Mutex::new(Tally::default()),
            health: Arc::clone(&self.health),
        });
        let shared = Arc::new(Shared {
            specs: self.specs,
            templates: self.templates,
            jobs: self.jobs,
            clock: self.clock.clone(),
            store: store.clone(),
            until,
            single_pass: self.single_pass,
            watch,
            poke: tokio::sync::Notify::new(),
            workers: self.workers,
            running: Arc::new(Running::new(
                self.max_running,
                self.claim_ahead.or(self.max_running).unwrap_or(0),
            )),
        });
        // One pass reads what is due once: no signal to wait on.
        let wakes = self.wakes.filter(|_| !self.single_pass);
        tracing::info!(
            workers = self.workers,
            max_running = self.max_running,
            claim_ahead = self.max_running.map(|n| self.claim_ahead.unwrap_or(n)),
            speed = self.clock.speed(),
            woken_by_store = wakes.is_some(),
            until = until.map(|t| tracing::field::display(format_instant(t))),
            jobs = names.len(),
            dynamic_jobs = template_names.len(),
            "runner started"
        );
        let mut worker_failures = Vec::new();
        std::thread::scope(|scope| -> Result<(), RunError> {
            let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
            let mut handles = Vec::new();
            for n in 1..=self.workers {
                let owner = format!("{}-w{n}", self.owner_prefix);
                let shared = Arc::clone(&shared);
                let stop = self.stop.subscribe();
                // Dropped when the thread ends, however it ends: the main
                // thread counts the worker as done then.
                let done = done_tx.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("cronslot-w{n}"))
                    .spawn_scoped(scope, move || {
                        let result = worker_thread(n, owner, seed(n), shared, stop);
                        drop(done);
                        result
                    })
                    .map_err(|e| RunError(format!("could not start worker {n}: {e}")));
                match handle {
                    Ok(h) => handles.push((n, h)),
                    Err(e) => {
                        // Workers already started must not run unsupervised.
                        self.stop.send_replace(Stop::Now);
                        return Err(e);
                    }
                }
            }
            drop(done_tx);
            main.block_on(supervise(
                &mut done_rx,
                &self.stop,
                (self.ctrl_c, self.grace),
                &self.health,
                Wakes {
                    signal: wakes,
                    poke: &shared.poke,
                },
            ));
            for (n, handle) in handles {
                match handle.join() {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => worker_failures.push(format!("worker {n}: {e}")),
                    Err(_) => worker_failures.push(format!("worker {n} panicked")),
                }
            }
            Ok(())
        })?;
        let stopped_at = self.clock.now();
        let seen = store.watcher().records();
        let before: HashMap<String, JobState> = seen
            .iter()
            .filter_map(|(job, s)| Some((job.clone(), s.first.clone()?)))
            .collect();
        let after: HashMap<String, JobState> = seen
            .into_iter()
            .filter_map(|(job, s)| Some((job, s.latest?)))
            .collect();
        let tally = std::mem::take(&mut *shared.tally());
        Ok(summarize(
            tally,
            SummaryInput {
                started_at,
                stopped_at,
                speed: self.clock.speed(),
                workers: self.workers,
                jobs: &names,
                templates: &template_names,
                before: &before,
                after: &after,
                worker_failures,
            },
        ))
    }
}

/// The store's wake signal and where the supervisor forwards it.
struct Wakes<'a> {
    signal: Option<WakeSignal>,
    poke: &'a tokio::sync::Notify,
}

impl Wakes<'_> {
    /// Waits for the signal and hands each wake to one waiting worker;
    /// says when the signal is lost and when it is back. Never returns.
    async fn forward(&mut self) {
        let Some(signal) = &mut self.signal else {
            return std::future::pending().await;
        };
        let mut lost = false;
        loop {
            match signal.woken().await {
                Woken::Due => {
                    if std::mem::take(&mut lost) {
                        tracing::info!("the store's wake signal is back");
                    }
                    self.poke.notify_one();
                }
                Woken::Lost(why) => {
                    lost = true;
                    tracing::warn!(error = %why,
                        "lost the store's wake signal: until it is back, runs enqueued now \
                         start at the next poll (5 s)");
                }
                _ => self.poke.notify_one(),
            }
        }
    }
}

/// Waits for every worker to end, turning Ctrl-C into stop requests and
/// the store's wakes into a worker's tick.
async fn supervise(
    done: &mut mpsc::UnboundedReceiver<()>,
    stop: &watch::Sender<Stop>,
    (ctrl_c, grace): (bool, Option<Duration>),
    health: &Health,
    mut wakes: Wakes<'_>,
) {
    let mut listen = ctrl_c;
    // When the drain's grace period ends, once a stop was asked for.
    let mut grace_ends: Option<tokio::time::Instant> = None;
    let mut terminate = if ctrl_c {
        Terminate::listen()
    } else {
        Terminate::none()
    };
    let mut stop_seen = stop.subscribe();
    let forwarding = wakes.forward();
    tokio::pin!(forwarding);
    loop {
        if *stop_seen.borrow_and_update() != Stop::Running {
            health.stopping();
            if grace_ends.is_none() {
                grace_ends = grace.map(|g| tokio::time::Instant::now() + g);
            }
        }
        let grace_over = async {
            match grace_ends {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop_seen.changed() => {}
            () = grace_over, if *stop.borrow() == Stop::Graceful => {
                tracing::warn!(
                    grace = ?grace.unwrap_or_default(),
                    "the drain's grace period is over: stopping the running jobs without \
                     recording them; their leases expire and other runners retry their slots"
                );
                stop.send_replace(Stop::Abandon);
            }
            msg = done.recv() => {
                if msg.is_none() {
                    return;
                }
            }
            signal = tokio::signal::ctrl_c(), if listen => {
                if let Err(e) = signal {
                    tracing::warn!(error = %e, "cannot listen for Ctrl-C; stop with --until");
                    listen = false;
                    continue;
                }
                listen = escalate(stop, "Ctrl-C");
            }
            () = terminate.recv(), if listen => listen = escalate(stop, "SIGTERM"),
            () = &mut forwarding => {}
        }
    }
}

/// A stop signal: the first asks to claim nothing more and let running
/// jobs finish, the second stops them too. Returns whether to keep
/// listening.
fn escalate(stop: &watch::Sender<Stop>, signal: &str) -> bool {
    if *stop.borrow() == Stop::Running {
        tracing::warn!(
            "{signal}: claiming nothing more, waiting for running jobs ({signal} again stops them)"
        );
        stop.send_replace(Stop::Graceful);
        true
    } else {
        tracing::warn!(
            "{signal} again: stopping running jobs (each is recorded as a transient failure)"
        );
        stop.send_replace(Stop::Now);
        false
    }
}

/// SIGTERM, what process supervisors (systemd, Kubernetes, Docker) send to
/// stop a service; never, where there is no such signal or it cannot be
/// listened for.
struct Terminate {
    #[cfg(unix)]
    signal: Option<tokio::signal::unix::Signal>,
}

impl Terminate {
    fn listen() -> Terminate {
        #[cfg(unix)]
        {
            let signal = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .map_err(|e| tracing::warn!(error = %e, "cannot listen for SIGTERM"))
                .ok();
            Terminate { signal }
        }
        #[cfg(not(unix))]
        Terminate {}
    }

    fn none() -> Terminate {
        Terminate {
            #[cfg(unix)]
            signal: None,
        }
    }

    async fn recv(&mut self) {
        #[cfg(unix)]
        if let Some(signal) = &mut self.signal {
            if signal.recv().await.is_some() {
                return;
            }
        }
        std::future::pending::<()>().await
    }
}

/// One worker's thread: its runtime, its `LocalSet`, its loop.
fn worker_thread<S: RunnerStore>(
    number: u32,
    owner: String,
    seed: u64,
    shared: Arc<Shared<S>>,
    stop: watch::Receiver<Stop>,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("could not start its runtime: {e}"))?;
    let local = tokio::task::LocalSet::new();
    let mut abandon = stop.clone();
    let worker = std::rc::Rc::new(Worker::new(number, owner, seed, shared, stop));
    local.block_on(&runtime, async {
        tokio::select! {
            () = worker.run() => {}
            // Dropping the loop drops its runs (their tasks are aborted
            // and dropped with this thread's `LocalSet`): nothing more is
            // written.
            () = abandoned(&mut abandon) => {}
        }
    });
    Ok(())
}

/// Returns once the runner says [`Stop::Abandon`]; never if it is gone
/// without saying it.
async fn abandoned(stop: &mut watch::Receiver<Stop>) {
    loop {
        if *stop.borrow_and_update() == Stop::Abandon {
            return;
        }
        if stop.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// A jitter seed per worker: different across workers and processes.
fn seed(worker: u32) -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos
        ^ (u64::from(std::process::id()) << 32)
        ^ u64::from(worker).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// `host-pid`: unique per process on a machine, and says where a lease's
/// owner runs.
fn default_owner_prefix() -> String {
    let host: String = hostname()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let host = if host.is_empty() {
        "localhost".to_string()
    } else {
        host
    };
    format!("{host}-{}", std::process::id())
}

#[cfg(unix)]
fn hostname() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

#[cfg(not(unix))]
fn hostname() -> String {
    std::env::var("COMPUTERNAME").unwrap_or_default()
}
