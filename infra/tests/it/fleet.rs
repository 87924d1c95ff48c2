//! A fleet of real `cronslot run` processes under real faults (issues 13
//! and 17), written once and run on PostgreSQL (`store_postgres`) and
//! Redis (`store_redis`) through [`FleetStore`]. The store commands on
//! those stores are `server_cmds`'s.
//!
//! The fleet (docs/reliability.md "A fleet on PostgreSQL"): three
//! `cronslot run` processes share one store in real time, with lease-sized
//! timings, while one is killed with its jobs (SIGKILL) and restarted, one
//! is frozen with its jobs (SIGSTOP) for longer than its lease and resumed,
//! the server crashes and restarts, and every client connection is cut.
//!
//! The checks are made from the jobs' own records (each run appends a
//! `start` and an `end` line with its slot, fence, attempt and runner) and
//! from `cronslot status` at the end:
//! - every slot ends;
//! - two runs of one slot overlap only when one of them was frozen;
//! - the fences of a job increase in the order its runs start;
//! - at the end no lease is stuck, and there is no dead letter, pending
//!   retry or missed slot (nothing the faults explain: slots late from an
//!   outage are caught up).
//!
//! `CRONSLOT_FLEET_ROUNDS=N` repeats the round of faults N times (the long
//! run whose figures are in docs/reliability.md); CI runs one round, about
//! five minutes of real time (three and a half per further round).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use jiff::Timestamp;

/// The jobs: four every minute, each running six seconds; a lease of a
/// minute (the shortest the manifest takes) and a time limit of 15 s;
/// retries quick enough to finish within the minute; every missed slot
/// caught up. Each run appends its `start` and `end` with its slot, fence,
/// attempt and runner (the command's parent) to `runs.log`.
fn manifest() -> String {
    let mut text = String::from(
        r#"
[defaults]
timezone = "UTC"
lease = "1m"
timeout = "15s"
skew_margin = "2s"
starting_deadline = "10m"
catch_up = "all"
max_catch_up = 20
overlap = "forbid"
retry = { max_attempts = 10, backoff = "1s", max_backoff = "4s", past_next_slot = true }
"#,
    );
    for job in JOBS {
        text.push_str(&format!(
            "\n[[job]]\nname = \"{job}\"\nschedule = \"* * * * *\"\n{}",
            recorded_command(6)
        ));
    }
    text
}

/// A job's `command` line: it appends its `start` and, `seconds` later,
/// its `end` to `runs.log`, each with its job, slot (a keyed run's names
/// its record: `orders/KEY@instant`), fence, attempt, runner (the
/// command's parent) and time ([`read_runs`] reads them).
pub(crate) fn recorded_command(seconds: u32) -> String {
    let record = |kind: &str| {
        format!(
            "echo \\\"{kind} $CRONSLOT_JOB $CRONSLOT_SLOT $CRONSLOT_FENCE $CRONSLOT_ATTEMPT \
             $PPID $(date +%s.%N)\\\" >> runs.log"
        )
    };
    format!(
        "command = [\"sh\", \"-c\", \"{}; sleep {seconds}; {}\"]\n",
        record("start"),
        record("end")
    )
}

const JOBS: [&str; 4] = ["billing", "invoices", "ledger", "payouts"];

/// One `cronslot run` of the fleet.
pub(crate) struct Runner {
    name: &'static str,
    pub(crate) child: Child,
}

pub(crate) struct Fleet {
    dir: PathBuf,
    url: String,
    runners: Vec<Runner>,
    /// Every runner process ever started, by pid.
    pub(crate) pids: BTreeMap<u32, &'static str>,
}

impl Fleet {
    pub(crate) fn new(dir: &Path, url: &str) -> Fleet {
        Fleet {
            dir: dir.to_path_buf(),
            url: url.to_string(),
            runners: Vec::new(),
            pids: BTreeMap::new(),
        }
    }

    fn start(&mut self, name: &'static str) {
        self.start_version(name, Path::new(env!("CARGO_BIN_EXE_cronslot")), &[]);
    }

    /// Starts `cronslot run fleet.toml` of the binary `cli` (this tree's,
    /// or another version's), with `extra` arguments.
    pub(crate) fn start_version(&mut self, name: &'static str, cli: &Path, extra: &[&str]) {
        let log = std::fs::File::create(self.dir.join(format!("{name}-{}.log", self.pids.len())))
            .expect("runner log");
        let child = Command::new(cli)
            .args([
                "run",
                "fleet.toml",
                "--workers",
                "2",
                "--log-format",
                "json",
            ])
            .args(extra)
            .env("CRONSLOT_STORE", &self.url)
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .env_remove("AWS_PROFILE")
            .env_remove("CRONSLOT_LOG")
            .current_dir(&self.dir)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start cronslot run");
        self.pids.insert(child.id(), name);
        self.runners.push(Runner { name, child });
    }

    /// Waits (up to 30 s) for a runner with a job running now (started
    /// within the last 10 s and not ended), preferring one not named
    /// `not`: the target of a fault that must land on running jobs.
    pub(crate) fn busy(&self, not: Option<&str>) -> &'static str {
        let give_up = now_secs() + 30.0;
        loop {
            let now = now_secs();
            let running: Vec<&'static str> = read_runs(&self.dir.join("runs.log"))
                .iter()
                .filter(|r| r.end.is_none() && now - r.start < 10.0)
                .filter_map(|r| self.pids.get(&r.runner).copied())
                .filter(|name| self.runners.iter().any(|live| live.name == *name))
                .collect();
            if let Some(name) = running
                .iter()
                .find(|name| Some(**name) != not)
                .or(running.first())
            {
                return name;
            }
            assert!(now < give_up, "no runner has had a job running for 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn runner(&mut self, name: &str) -> &mut Runner {
        self.runners
            .iter_mut()
            .find(|r| r.name == name)
            .expect("a runner of that name")
    }

    /// Sends `signal` to the runner and to every job it runs (each job
    /// leads its own process group).
    ///
    /// The runner is stopped before its children are listed, so that it
    /// starts no job after the listing, and it gets the signal itself
    /// last: continued last, it reaps no job between the listing and the
    /// signal; killed last, its jobs are still its children when listed.
    /// A job's group may be gone by the time it is signalled (a job
    /// forked just before the runner stopped can end while it is
    /// stopped): that is not a failure.
    fn signal(&mut self, name: &str, signal: &str) {
        let pid = self.runner(name).child.id();
        let send = |signal: &str, target: String, quiet: bool| {
            Command::new("kill")
                .arg(format!("-{signal}"))
                .arg("--")
                .arg(&target)
                .stderr(if quiet {
                    Stdio::null()
                } else {
                    Stdio::inherit()
                })
                .status()
                .expect("kill")
                .success()
        };
        if signal != "CONT" {
            assert!(send("STOP", pid.to_string(), false), "kill -STOP {pid}");
        }
        for group in child_groups(pid) {
            send(signal, format!("-{group}"), true);
        }
        assert!(send(signal, pid.to_string(), false), "kill -{signal} {pid}");
    }

    /// Takes a runner that has exited out of the fleet.
    pub(crate) fn forget(&mut self, name: &str) {
        self.runners.retain(|r| r.name != name);
    }

    /// SIGKILL the runner and its jobs, and reap it.
    fn kill(&mut self, name: &str) {
        self.signal(name, "KILL");
        let index = self
            .runners
            .iter()
            .position(|r| r.name == name)
            .expect("runner");
        let mut runner = self.runners.remove(index);
        let _ = runner.child.wait();
    }

    /// SIGTERM every runner; each finishes its running jobs and exits 0.
    pub(crate) fn stop_all(&mut self) {
        for runner in &self.runners {
            let _ = Command::new("kill")
                .args(["-TERM", &runner.child.id().to_string()])
                .status();
        }
        for runner in &mut self.runners {
            let status = runner.child.wait().expect("runner ends");
            assert!(
                status.success(),
                "runner {} exited with {status}",
                runner.name
            );
        }
        self.runners.clear();
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for runner in &mut self.runners {
            let pid = runner.child.id();
            for group in child_groups(pid) {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{group}")])
                    .status();
            }
            let _ = runner.child.kill();
            let _ = runner.child.wait();
        }
    }
}

/// What `cronslot status --format json` says at a fleet's end: no lease
/// stuck, no retry pending, no dead letter, no slot missed.
pub(crate) fn assert_nothing_left(status: &serde_json::Value, report: &str) {
    for job in status["jobs"].as_array().expect("jobs") {
        let name = &job["job"];
        assert_eq!(
            job["record"]["leases"],
            serde_json::json!([]),
            "{name}: a stuck lease\n{report}"
        );
        assert_eq!(
            job["record"]["pending"],
            serde_json::json!([]),
            "{name}: a pending retry\n{report}"
        );
        assert_eq!(job["dead_letters"], 0, "{name}: a dead letter\n{report}");
        for (reason, count) in job["missed"].as_object().expect("missed") {
            assert_eq!(count, 0, "{name}: missed for {reason}\n{report}");
        }
    }
}

/// The process groups of `pid`'s children (the jobs it runs).
fn child_groups(pid: u32) -> BTreeSet<u32> {
    let mut groups = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return groups;
    };
    for entry in entries.flatten() {
        let Some((parent, group)) = parent_and_group(&entry.path()) else {
            continue;
        };
        if parent == pid {
            groups.insert(group);
        }
    }
    // A job forked but not yet in a group of its own is still in the
    // runner's group, which is this test's: never signal that.
    if let Some((_, own)) = parent_and_group(Path::new("/proc/self")) {
        groups.remove(&own);
    }
    groups
}

/// A process's parent and process group, from `/proc/<pid>/stat`.
fn parent_and_group(proc_dir: &Path) -> Option<(u32, u32)> {
    let stat = std::fs::read_to_string(proc_dir.join("stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parens.
    let (_, rest) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some((fields.get(1)?.parse().ok()?, fields.get(2)?.parse().ok()?))
}

/// One run, from its `start` (and `end`, if it wrote one) lines.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    pub(crate) job: String,
    pub(crate) slot: String,
    pub(crate) fence: u64,
    pub(crate) runner: u32,
    pub(crate) start: f64,
    pub(crate) end: Option<f64>,
}

pub(crate) fn read_runs(path: &Path) -> Vec<Run> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // A run is its record's (a job's, or a dynamic job's `job/key`) and its
    // fence: the slot names the record before its `@`.
    let mut runs: BTreeMap<(String, u64), Run> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [kind, job, slot, fence, _attempt, runner, at] = f[..] else {
            panic!("a malformed record: {line:?}");
        };
        let fence: u64 = fence.parse().expect("fence");
        let at: f64 = at.parse().expect("time");
        let record = slot.split_once('@').map_or(slot, |(record, _)| record);
        let key = (record.to_string(), fence);
        match kind {
            "start" => {
                let old = runs.insert(
                    key,
                    Run {
                        job: job.into(),
                        slot: slot.into(),
                        fence,
                        runner: runner.parse().expect("pid"),
                        start: at,
                        end: None,
                    },
                );
                assert!(old.is_none(), "two runs of {record} with fence {fence}");
            }
            "end" => runs.get_mut(&key).expect("an end after its start").end = Some(at),
            other => panic!("a malformed record kind {other:?}"),
        }
    }
    runs.into_values().collect()
}

pub(crate) fn now_secs() -> f64 {
    Timestamp::now().as_millisecond() as f64 / 1000.0
}

/// Sleeps until `second` (0–59) of the minute; from a later second, of the
/// next minute.
pub(crate) fn at_second(second: u64) {
    let now = Timestamp::now().as_millisecond();
    let into = now.rem_euclid(60_000) as u64;
    let target = second * 1000;
    let wait = if into < target {
        target - into
    } else {
        60_000 - into + target
    };
    std::thread::sleep(Duration::from_millis(wait));
}

/// What a fleet does to its store: where it is, and the faults that are
/// the store's own.
pub trait FleetStore {
    /// Crashes the server: killed, nothing flushed beyond what it had
    /// already made durable.
    fn crash(&self);
    /// Starts the crashed server again and returns once it answers.
    fn restart(&self);
    /// Cuts every client connection to the store; how many it cut.
    fn cut_connections(&self) -> u32;
    /// How the connections are cut, for the report (`pg_terminate_backend`).
    fn cut_name(&self) -> &'static str;
}

/// The fleet test on the store at `url`, on a server of the test's own
/// (it is crashed), in the directory `dir_name` of the target's temporary
/// directory.
pub fn runs_every_slot_once_through_faults(store: &impl FleetStore, url: &str, dir_name: &str) {
    let rounds: u32 = std::env::var("CRONSLOT_FLEET_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(1);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir_name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("fleet.toml"), manifest()).expect("manifest");
    let valid = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(["validate", "fleet.toml"])
        .current_dir(&dir)
        .output()
        .expect("validate");
    assert!(
        valid.status.success(),
        "{}",
        String::from_utf8_lossy(&valid.stdout)
    );
    let init = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(["init", "--store", url])
        .output()
        .expect("init");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let mut fleet = Fleet::new(&dir, url);
    at_second(45);
    let began = now_secs();
    for name in ["a", "b", "c"] {
        fleet.start(name);
    }
    let mut frozen: Vec<(u32, f64, f64)> = Vec::new();
    let mut faults = Vec::new();
    std::thread::sleep(Duration::from_secs(3));
    for name in ["a", "b", "c"] {
        let alive = fleet.runner(name).child.try_wait().expect("wait").is_none();
        assert!(alive, "runner {name} did not start: see {}", dir.display());
    }
    for _ in 0..rounds {
        // Jobs start at :00 and run six seconds: each fault lands on
        // running jobs, or on their outcomes being recorded.
        at_second(1);
        let killed = fleet.busy(None);
        fleet.kill(killed);
        faults.push(format!("{:.0} SIGKILL {killed}", now_secs() - began));
        // While the other runners' jobs end and record their outcomes.
        std::thread::sleep(Duration::from_secs(4));
        let cut = store.cut_connections();
        faults.push(format!(
            "{:.0} {} ({cut} connections)",
            now_secs() - began,
            store.cut_name()
        ));
        std::thread::sleep(Duration::from_secs(3));
        fleet.start(killed);

        at_second(1);
        let stopped = fleet.busy(Some(killed));
        let pid = fleet.runner(stopped).child.id();
        fleet.signal(stopped, "STOP");
        let from = now_secs();
        // Longer than the lease (60 s) plus the skew margin and a poll.
        std::thread::sleep(Duration::from_secs(75));
        fleet.signal(stopped, "CONT");
        frozen.push((pid, from, now_secs()));
        faults.push(format!("{:.0} SIGSTOP {stopped} for 75 s", from - began));

        at_second(3);
        store.crash();
        faults.push(format!("{:.0} server crash", now_secs() - began));
        std::thread::sleep(Duration::from_secs(6));
        store.restart();
    }
    // A quiet minute for retries to finish, then stop between slots.
    at_second(30);
    at_second(30);
    let ended = now_secs();
    fleet.stop_all();

    let runs = read_runs(&dir.join("runs.log"));
    let report = format!(
        "{dir_name}: faults: {faults:?}\nrunners: {:?}\nruns: {}\n",
        fleet.pids,
        runs.len()
    );
    eprintln!("{report}");
    let was_frozen = |run: &Run, until: f64| {
        frozen
            .iter()
            .any(|(pid, from, to)| *pid == run.runner && run.start < *to && until > *from)
    };

    // Every slot ends: each minute from the first slot after the start to
    // the last one before the stop has a run that wrote its `end`.
    let first = (began / 60.0).ceil() as i64 * 60;
    let last = ((ended - 10.0) / 60.0).floor() as i64 * 60;
    for job in JOBS {
        for minute in (first..=last).step_by(60) {
            let slot = format!(
                "{job}@{}",
                Timestamp::from_second(minute)
                    .expect("instant")
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
            );
            assert!(
                runs.iter().any(|r| r.slot == slot && r.end.is_some()),
                "slot {slot} never ended\n{report}"
            );
        }
    }

    // Two runs of one slot overlap only when one of them was frozen; a
    // run without an `end` was killed (or cut by its time limit): it ran
    // until at most its start plus the time limit.
    let mut overlaps = 0;
    for (i, a) in runs.iter().enumerate() {
        for b in &runs[i + 1..] {
            if a.slot != b.slot {
                continue;
            }
            let a_end = a.end.unwrap_or(a.start + 15.0);
            let b_end = b.end.unwrap_or(b.start + 15.0);
            if a.start < b_end && b.start < a_end {
                overlaps += 1;
                assert!(
                    was_frozen(a, a_end) || was_frozen(b, b_end),
                    "runs {a:?} and {b:?} overlap and neither was frozen\n{report}"
                );
            }
        }
    }

    // Fences increase in the order a job's runs start.
    for job in JOBS {
        let mut of_job: Vec<&Run> = runs.iter().filter(|r| r.job == job).collect();
        of_job.sort_by(|a, b| a.start.total_cmp(&b.start));
        for pair in of_job.windows(2) {
            assert!(
                pair[0].fence < pair[1].fence,
                "fences of {job} do not increase: {:?} then {:?}\n{report}",
                pair[0],
                pair[1]
            );
        }
    }

    // The store at the end: no stuck lease, no dead letter, nothing
    // pending, nothing missed.
    let status = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(["status", "--manifest", "fleet.toml", "--format", "json"])
        .env("CRONSLOT_STORE", url)
        .current_dir(&dir)
        .output()
        .expect("status");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_nothing_left(&status, &report);
    // The faults landed on running jobs: a killed run's slot and a frozen
    // run's slot were each run again, by another runner, with a newer
    // fence.
    for (pid, from, to) in &frozen {
        let taken_over = runs.iter().any(|held| {
            held.runner == *pid
                && held.start < *from
                && runs.iter().any(|again| {
                    again.slot == held.slot
                        && again.fence > held.fence
                        && again.runner != *pid
                        && again.start > *from
                        && again.start < *to
                })
        });
        assert!(
            taken_over,
            "no slot of the frozen runner {pid} was taken over\n{report}"
        );
    }
    let rerun = runs
        .iter()
        .filter(|r| runs.iter().any(|o| o.slot == r.slot && o.fence > r.fence))
        .count();
    assert!(
        rerun >= 2 * rounds as usize,
        "faults should make runs again: {rerun}\n{report}"
    );
    eprintln!(
        "{dir_name}: overlapping runs (all of a frozen runner): {overlaps}; runs made again: \
         {rerun}; {:.0} s from the start of the fleet to its stop",
        ended - began
    );
}
