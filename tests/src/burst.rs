//! The 09:00 burst (issue 28): `slots` schedules of one dynamic job fall
//! due in the same minute, and a fleet of runner processes on one store
//! starts each of them once. Written once for the benchmark
//! (`tests/benches/burst.rs`: 100,000 slots, with and without jitter,
//! figures in docs/performance.md) and the CI test (`tests/it/burst.rs`:
//! 10,000, every slot once and nothing stuck, not timed).
//!
//! The fleet is real processes: the caller re-runs its own executable as
//! each runner ([`Fleet::spawn`] with a command the caller builds; the
//! child calls [`run_child`]), each a `cronslot_runner::Runner` (what
//! `cronslot run` runs) with the job's function registered: it sleeps
//! `work` (10 ms). The parent sees the fleet through the store alone: it
//! waits until no schedule is due, stops the fleet, and reads every record
//! ([`check`]): each slot's runs, fences and start.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use cronslot_core::coord::decide::Precondition;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, MAX_SCHEDULE_BATCH, SchedulePut, ScheduleQuery, Schedules, StateStore,
    TickIndex,
};
use cronslot_core::manifest::{JobTemplate, Manifest, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_runtime::Jobs;
use jiff::{SignedDuration, Timestamp};

/// The dynamic job of the burst.
pub const JOB: &str = "burst";

/// What a burst is.
#[derive(Debug, Clone)]
pub struct Burst {
    /// Schedules, each with one slot at the burst's minute.
    pub slots: usize,
    /// The job's jitter (zero: none).
    pub jitter: Duration,
    /// Runner processes.
    pub runners: usize,
    /// Claim loops per process.
    pub workers: u32,
    /// Runs at once per process.
    pub max_running: u32,
    /// What each run does: sleep this long.
    pub work: Duration,
}

/// The manifest of the burst: its one job, dynamic, a lease of five
/// minutes, the deadline the jitter needs.
pub fn manifest(jitter: Duration) -> Manifest {
    let mut text = format!("[[job]]\nname = \"{JOB}\"\ndynamic = true\nlease = \"5m\"\n");
    if !jitter.is_zero() {
        text.push_str(&format!("jitter = \"{}s\"\n", jitter.as_secs()));
    }
    match parse_manifest(&text, "burst.toml") {
        Ok(m) => m,
        Err(e) => panic!("{e}"),
    }
}

/// The job of [`manifest`].
pub fn template(jitter: Duration) -> JobTemplate {
    manifest(jitter).templates.remove(0)
}

fn key(i: usize) -> ScheduleKey {
    match ScheduleKey::new(format!("tenant-{i:07}")) {
        Ok(k) => k,
        Err(e) => panic!("{e}"),
    }
}

/// Writes the burst's schedules, 1,000 a request: each a one-off at the
/// first whole minute at least `lead` from now, which it returns with the
/// seconds the writes took.
pub fn prepare<S: StateStore>(store: S, burst: &Burst, lead: Duration) -> (Timestamp, f64) {
    let now = Timestamp::now();
    let ready = now.as_second() + lead.as_secs() as i64;
    let minute = (ready.div_euclid(60) + 1) * 60;
    let at = match Timestamp::from_second(minute) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    let spec = match ScheduleSpec::from_json(&format!("{{\"at\": \"{at}\"}}")) {
        Ok(s) => s,
        Err(e) => panic!("{e:?}"),
    };
    let template = template(burst.jitter);
    let c = CasCoordinator::new(store, 1);
    let started = Instant::now();
    for start in (0..burst.slots).step_by(MAX_SCHEDULE_BATCH) {
        let puts = (start..burst.slots.min(start + MAX_SCHEDULE_BATCH))
            .map(|i| SchedulePut {
                key: key(i),
                spec: spec.clone(),
                precondition: Precondition::None,
            })
            .collect();
        for (i, answer) in block_on(c.put_schedules(&template, puts, now))
            .into_iter()
            .enumerate()
        {
            if let Err(e) = answer {
                panic!("schedule {}: {e}", start + i);
            }
        }
    }
    (at, started.elapsed().as_secs_f64())
}

/// The environment a runner process reads ([`run_child`]).
const STORE_VAR: &str = "CRONSLOT_BURST_STORE";
const CONFIG_VAR: &str = "CRONSLOT_BURST_CONFIG";
const STOP_VAR: &str = "CRONSLOT_BURST_STOP";

/// The fleet's processes, and the file whose existence stops them.
pub struct Fleet {
    children: Vec<Child>,
    stop_file: PathBuf,
}

impl Fleet {
    /// Starts `burst.runners` processes of `command` (the caller's own
    /// executable, set to call [`run_child`]), each told the store's URL,
    /// the burst and the stop file.
    pub fn spawn(url: &str, burst: &Burst, dir: &Path, command: impl Fn() -> Command) -> Fleet {
        let stop_file = dir.join("stop");
        let _ = std::fs::remove_file(&stop_file);
        let config = format!(
            "{} {} {} {}",
            burst.jitter.as_secs(),
            burst.workers,
            burst.max_running,
            burst.work.as_millis()
        );
        let children = (0..burst.runners)
            .map(|_| {
                let mut c = command();
                c.env(STORE_VAR, url)
                    .env(CONFIG_VAR, &config)
                    .env(STOP_VAR, &stop_file);
                match c.spawn() {
                    Ok(child) => child,
                    Err(e) => panic!("starting a runner: {e}"),
                }
            })
            .collect();
        Fleet {
            children,
            stop_file,
        }
    }

    /// Tells every runner to stop (each lets its runs finish) and waits
    /// for them; panics when one failed.
    pub fn stop(mut self) {
        if let Err(e) = std::fs::write(&self.stop_file, b"stop") {
            panic!("{}: {e}", self.stop_file.display());
        }
        for child in &mut self.children {
            match child.wait() {
                Ok(status) if status.success() => {}
                Ok(status) => panic!("a runner exited with {status}"),
                Err(e) => panic!("waiting for a runner: {e}"),
            }
        }
        self.children.clear();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether this process was started as a runner of a fleet.
pub fn is_child() -> bool {
    std::env::var_os(STORE_VAR).is_some()
}

/// What a runner process of the fleet is told ([`Fleet::spawn`]): the
/// store, the job and its function, how many claim loops and runs at once,
/// and the file whose appearance stops it. The caller builds the runner
/// (`cronslot_runner::Runner` on the store the URL names: this crate's
/// library does not link the stores, whose own tests link it) and hands it
/// to [`ChildConfig::wait_for_stop`].
pub struct ChildConfig {
    /// The store's URL.
    pub url: String,
    /// The burst's job.
    pub template: JobTemplate,
    /// Its function: sleeps the burst's `work`.
    pub jobs: Jobs,
    /// Claim loops.
    pub workers: u32,
    /// Runs at once.
    pub max_running: u32,
    stop_file: PathBuf,
}

impl ChildConfig {
    /// The configuration of this runner process, from its environment.
    pub fn from_env() -> ChildConfig {
        let url = std::env::var(STORE_VAR).unwrap_or_default();
        let config = std::env::var(CONFIG_VAR).unwrap_or_default();
        let stop_file = PathBuf::from(std::env::var_os(STOP_VAR).unwrap_or_default());
        let numbers: Vec<u64> = config
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        let [jitter, workers, max_running, work_ms] = numbers[..] else {
            panic!("{CONFIG_VAR}={config:?}: four numbers");
        };
        let work = Duration::from_millis(work_ms);
        let jobs = Jobs::new().register(JOB, move |_ctx| async move {
            tokio::time::sleep(work).await;
            Ok(())
        });
        ChildConfig {
            url,
            template: template(Duration::from_secs(jitter)),
            jobs,
            workers: u32::try_from(workers).unwrap_or(1),
            max_running: u32::try_from(max_running).unwrap_or(1),
            stop_file,
        }
    }

    /// Returns once the stop file exists or `finished` says the runner
    /// ended on its own; the caller then stops the runner.
    pub fn wait_for_stop(&self, finished: impl Fn() -> bool) {
        while !self.stop_file.exists() && !finished() {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Waits until nothing of the job is due at the store's clock (every slot
/// claimed, and no lease expired), at most `limit`: false when it gave up.
/// One read of the wake index each half second.
pub fn wait_until_drained<S: TickIndex>(store: &S, after: Timestamp, limit: Duration) -> bool {
    let give_up = Instant::now() + limit;
    while Instant::now() < give_up {
        let now = Timestamp::now();
        if now > after {
            match block_on(store.tick_start(now, 1)) {
                Ok(start) if start.woken.is_empty() => return true,
                Ok(_) => {}
                Err(e) => panic!("reading the wake index: {e}"),
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    false
}

/// What the records say of the burst.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Schedules read.
    pub schedules: usize,
    /// Slots that ran exactly once and succeeded.
    pub once: usize,
    /// Slots with more than one run (a claim after another's).
    pub twice: usize,
    /// Slots that did not succeed.
    pub not_run: usize,
    /// Leases still held.
    pub stuck: usize,
    /// Milliseconds from each slot's start (its instant, or its jittered
    /// start) to its run's start, sorted.
    pub lags_ms: Vec<f64>,
    /// Milliseconds from each slot's instant to its run's start, sorted.
    pub lags_from_instant_ms: Vec<f64>,
    /// First and last run start.
    pub first_start: Option<Timestamp>,
    /// See `first_start`.
    pub last_start: Option<Timestamp>,
}

impl Outcome {
    /// The `p`th percentile (nearest rank) of `sorted`.
    pub fn percentile(sorted: &[f64], p: f64) -> f64 {
        if sorted.is_empty() {
            return f64::NAN;
        }
        let i = ((sorted.len() as f64 - 1.0) * p / 100.0).round() as usize;
        sorted[i.min(sorted.len() - 1)]
    }

    /// The start lag (p50, p99, max), claims per second and the checks, for
    /// a benchmark's line.
    pub fn summary(&self) -> String {
        let p = |q: f64| Outcome::percentile(&self.lags_ms, q) / 1e3;
        format!(
            "start lag p50 {:.2}s p99 {:.2}s max {:.2}s; {:.0} claims/s; once {} twice {} not run {} stuck {}",
            p(50.0),
            p(99.0),
            p(100.0),
            self.claims_per_second(),
            self.once,
            self.twice,
            self.not_run,
            self.stuck
        )
    }

    /// Panics unless each of `slots` ran once and no lease is left.
    pub fn assert_every_slot_once(&self, slots: usize) {
        assert_eq!(
            (self.once, self.twice, self.not_run, self.stuck),
            (slots, 0, 0, 0),
            "every slot once, nothing stuck: {}",
            self.summary()
        );
    }

    /// Runs started per second, from the first start to the last.
    pub fn claims_per_second(&self) -> f64 {
        match (self.first_start, self.last_start) {
            (Some(a), Some(b)) if b > a => self.once as f64 / b.duration_since(a).as_secs_f64(),
            _ => f64::NAN,
        }
    }
}

/// Reads every schedule of the burst, 1,000 a page, and says how its slot
/// went.
pub fn check<S: StateStore>(store: S, burst: &Burst, at: Timestamp) -> Outcome {
    check_schedules(&CasCoordinator::new(store, 2), &template(burst.jitter), at)
}

/// [`check`] of the schedules of `template` through any implementation of
/// the schedules (the Durable Objects' client, for one).
pub fn check_schedules<C: Schedules>(c: &C, template: &JobTemplate, at: Timestamp) -> Outcome {
    let mut query = ScheduleQuery {
        limit: MAX_SCHEDULE_BATCH,
        ..ScheduleQuery::default()
    };
    let mut outcome = Outcome {
        schedules: 0,
        once: 0,
        twice: 0,
        not_run: 0,
        stuck: 0,
        lags_ms: Vec::new(),
        lags_from_instant_ms: Vec::new(),
        first_start: None,
        last_start: None,
    };
    let ms = |d: SignedDuration| d.as_secs_f64() * 1e3;
    loop {
        let page = match block_on(c.list_schedules(template, &query)) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        for (key, read) in &page.schedules {
            outcome.schedules += 1;
            let record = &read.record;
            outcome.stuck += record.leases.len();
            let succeeded = record.last_success.as_ref().is_some_and(|r| r.slot == at);
            match (succeeded, record.counters.runs) {
                (true, 1) => outcome.once += 1,
                (_, n) if n > 1 => outcome.twice += 1,
                _ => outcome.not_run += 1,
            }
            if let Some(run) = record.history.iter().find(|r| r.slot == at) {
                let spec = match read.data.job_spec(template, key) {
                    Ok(Some(spec)) => spec,
                    other => panic!("{key:?}: {other:?}"),
                };
                outcome
                    .lags_ms
                    .push(ms(run.started_at.duration_since(spec.start_of(at))));
                outcome
                    .lags_from_instant_ms
                    .push(ms(run.started_at.duration_since(at)));
                outcome.first_start = Some(
                    outcome
                        .first_start
                        .map_or(run.started_at, |t| t.min(run.started_at)),
                );
                outcome.last_start = Some(
                    outcome
                        .last_start
                        .map_or(run.started_at, |t| t.max(run.started_at)),
                );
            }
        }
        match page.cursor {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    outcome.lags_ms.sort_by(f64::total_cmp);
    outcome.lags_from_instant_ms.sort_by(f64::total_cmp);
    outcome
}
