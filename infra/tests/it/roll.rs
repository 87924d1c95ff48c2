//! A rolling upgrade (issue 29): a fleet of three `cronslot run` processes
//! of the previous release (the baseline, `compat/baseline`, built by
//! `scripts/baseline`) is replaced node by node by this tree's, on one
//! store, while its jobs run: SQLite, PostgreSQL, Redis and DynamoDB
//! (moto), each on a thread of this one test (they mostly wait on real
//! time; one test keeps the CI's two test threads free for the rest).
//!
//! On each store, in real time:
//! - the baseline's `init` makes the store; three baseline runners start;
//!   keyed runs are enqueued the whole time, about every second, by the baseline's
//!   `cronslot runs put` and this tree's in turn, so jobs are always
//!   running (every job runs 6 s);
//! - this tree's `init` (the migration) runs while the baseline runners
//!   work;
//! - each baseline runner gets SIGTERM while one of its jobs runs (it lets
//!   its running jobs finish and exits) and a runner of this tree takes
//!   its place, one at a time;
//! - one of the new runners is then drained with SIGTERM while a job runs
//!   that outlasts its `--grace` (2 s): the run is left to its lease, and
//!   another runner runs the slot again once the lease (1 m) is over: the
//!   slot's wait is measured;
//! - then the enqueuing stops, the retries finish, and the fleet stops;
//! - this tree's `init` runs again (the contract step of
//!   docs/upgrading.md).
//!
//! The checks, from the jobs' own records and `cronslot status`: every
//! slot (each minute of the static jobs, each keyed run) ended once and no
//! slot ended twice; nothing is missed, pending, dead or leased at the
//! end; every drained runner had a job running when it got its SIGTERM.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::fleet::{
    Fleet, Run, assert_nothing_left, at_second, now_secs, read_runs, recorded_command,
};

/// The baseline's `cronslot`, built by `scripts/baseline`.
fn baseline_cli() -> PathBuf {
    cronslot_tests::baseline::built("cronslot")
}

fn this_cli() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_cronslot"))
}

/// Two static jobs every minute and one dynamic job for keyed runs, each
/// run 6 s; the shortest lease; retries quick and past the next slot.
fn manifest() -> String {
    let mut text = String::from(
        r#"
[defaults]
timezone = "UTC"
lease = "1m"
timeout = "20s"
skew_margin = "2s"
starting_deadline = "10m"
catch_up = "all"
max_catch_up = 20
retry = { max_attempts = 10, backoff = "1s", max_backoff = "4s", past_next_slot = true }
"#,
    );
    let command = recorded_command(6);
    for job in ["billing", "ledger"] {
        text.push_str(&format!(
            "\n[[job]]\nname = \"{job}\"\nschedule = \"* * * * *\"\n{command}"
        ));
    }
    text.push_str(&format!(
        "\n[[job]]\nname = \"orders\"\ndynamic = true\n{command}"
    ));
    text
}

/// The new runners' arguments: the drain's grace, shorter than a run (6 s),
/// and one run at a time with no lease claimed ahead, so that the old
/// runners still left keep getting work during the roll (left to race,
/// the first runner to look would take most of it, and an old runner
/// could sit idle when its turn to be drained mid-run comes).
const NEW_RUNNER_ARGS: &[&str] = &["--grace", "2s", "--max-running", "1", "--claim-ahead", "0"];

/// A store the fleet rolls on: its URL and what the CLI needs besides.
struct Target {
    name: &'static str,
    url: String,
}

fn cli(binary: &Path, dir: &Path, url: &str, args: &[&str]) -> Output {
    Command::new(binary)
        .args(args)
        .current_dir(dir)
        .env("CRONSLOT_STORE", url)
        .env("CRONSLOT_MANIFEST", "fleet.toml")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .env_remove("AWS_PROFILE")
        .env_remove("CRONSLOT_LOG")
        .output()
        .expect("run cronslot")
}

fn ok(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// What a roll came to, for the report.
struct Rolled {
    name: &'static str,
    slots: usize,
    longest_wait: f64,
    longest_other: f64,
    drained_wait: f64,
}

/// Waits (up to 45 s) until the runner `name` has a job running that
/// started within the last 3 s, so that its SIGTERM lands mid-run.
fn busy_now(fleet: &Fleet, dir: &Path, name: &str) {
    let give_up = now_secs() + 45.0;
    loop {
        let now = now_secs();
        let busy = read_runs(&dir.join("runs.log")).iter().any(|r| {
            r.end.is_none() && now - r.start < 3.0 && fleet.pids.get(&r.runner) == Some(&name)
        });
        if busy {
            return;
        }
        assert!(
            now < give_up,
            "runner {name} has had no job running for 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGTERM to the runner `name`; returns when it has exited (0), and when
/// it got the signal.
fn drain(fleet: &mut Fleet, name: &str) -> f64 {
    let runner = fleet.runner(name);
    let sent = now_secs();
    let status = Command::new("kill")
        .args(["-TERM", &runner.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let status = runner.child.wait().expect("the runner ends");
    assert!(status.success(), "runner {name} exited with {status}");
    fleet.forget(name);
    sent
}

fn roll(target: &Target) -> Rolled {
    let old = baseline_cli();
    let new = this_cli();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("roll-{}", target.name));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("fleet.toml"), manifest()).expect("manifest");
    let url = target.url.as_str();
    ok(
        &cli(&old, &dir, url, &["validate", "fleet.toml"]),
        "validate",
    );
    ok(
        &cli(&old, &dir, url, &["init", "--store", url]),
        "the baseline's init",
    );

    let mut fleet = Fleet::new(&dir, url);
    at_second(45);
    let began = now_secs();
    for name in ["a", "b", "c"] {
        fleet.start_version(name, &old, &[]);
    }
    // Keyed runs the whole time, by both versions in turn.
    let enqueuing = Arc::new(AtomicBool::new(true));
    // Each key, with when it was enqueued (its run is due then).
    let enqueued = Arc::new(Mutex::new(Vec::<(String, f64)>::new()));
    let enqueuer = {
        let (enqueuing, enqueued) = (Arc::clone(&enqueuing), Arc::clone(&enqueued));
        let (dir, url, old, new) = (dir.clone(), url.to_string(), old.clone(), new.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while enqueuing.load(Ordering::SeqCst) {
                let key = format!("k-{n:04}");
                let by = if n % 2 == 0 { &old } else { &new };
                let payload = format!("{{\"n\": {n}}}");
                let out = cli(
                    by,
                    &dir,
                    &url,
                    &["runs", "put", "orders", &key, "--payload", &payload],
                );
                let at = now_secs();
                ok(&out, &format!("runs put {key} by {}", by.display()));
                enqueued.lock().expect("keys").push((key, at));
                n += 1;
                std::thread::sleep(Duration::from_millis(1000));
            }
        })
    };

    // The migration while the baseline's runners work, then the roll.
    let mut drained = Vec::new();
    at_second(2);
    ok(
        &cli(&new, &dir, url, &["init", "--store", url]),
        "this tree's init",
    );
    for (name, next) in [("a", "a2"), ("b", "b2"), ("c", "c2")] {
        busy_now(&fleet, &dir, name);
        drained.push((fleet.runner(name).child.id(), drain(&mut fleet, name)));
        fleet.start_version(next, &new, NEW_RUNNER_ARGS);
        std::thread::sleep(Duration::from_secs(12));
    }
    // A new runner drained while a run outlasts its grace.
    std::thread::sleep(Duration::from_secs(5));
    busy_now(&fleet, &dir, "a2");
    let cut_pid = fleet.runner("a2").child.id();
    let cut_at = drain(&mut fleet, "a2");
    drained.push((cut_pid, cut_at));
    fleet.start_version("a3", &new, NEW_RUNNER_ARGS);
    std::thread::sleep(Duration::from_secs(10));
    enqueuing.store(false, Ordering::SeqCst);
    enqueuer.join().expect("the enqueuer");
    // The cut run's lease (1 m) runs out, its retry runs; then a quiet
    // stretch between slots.
    std::thread::sleep(Duration::from_secs(70));
    at_second(30);
    let ended = now_secs();
    fleet.stop_all();

    let runs = read_runs(&dir.join("runs.log"));
    let report = format!(
        "roll on {}: runners {:?}; {} runs\n",
        target.name,
        fleet.pids,
        runs.len()
    );
    // Every slot ended once: each minute of the static jobs, each keyed
    // run.
    let first = (began / 60.0).ceil() as i64 * 60;
    let last = ((ended - 10.0) / 60.0).floor() as i64 * 60;
    let mut slots: Vec<String> = Vec::new();
    for job in ["billing", "ledger"] {
        for minute in (first..=last).step_by(60) {
            slots.push(format!(
                "{job}@{}",
                jiff::Timestamp::from_second(minute)
                    .expect("instant")
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
            ));
        }
    }
    let keys = enqueued.lock().expect("keys").clone();
    let ended_once = |record: &str| -> Vec<&Run> {
        runs.iter()
            .filter(|r| {
                r.end.is_some() && r.slot.split_once('@').map(|(rec, _)| rec) == Some(record)
            })
            .collect()
    };
    // A run of the cut runner that ended within its grace may have been
    // dropped before its outcome was written: its slot runs again, as
    // after a crash between a job's end and its record (the effect ledger
    // is what makes that second run harmless). Only those may end twice.
    let excused = |r: &Run| r.runner == cut_pid && r.end.is_some_and(|e| e > cut_at - 0.5);
    let check_once = |what: &str, ended: Vec<&Run>| {
        let counted = ended.iter().filter(|r| !excused(r)).count();
        assert!(
            !ended.is_empty() && counted <= 1,
            "{what} ended {} times: {ended:?}\n{report}",
            ended.len()
        );
    };
    for slot in &slots {
        let ended: Vec<&Run> = runs
            .iter()
            .filter(|r| r.slot == *slot && r.end.is_some())
            .collect();
        check_once(&format!("slot {slot}"), ended);
    }
    for (key, _) in &keys {
        check_once(
            &format!("keyed run {key}"),
            ended_once(&format!("orders/{key}")),
        );
    }
    // Each drained runner had a job running at its SIGTERM.
    for (pid, at) in &drained {
        assert!(
            runs.iter()
                .any(|r| r.runner == *pid && r.start < *at && r.end.is_none_or(|e| e > *at)),
            "runner {pid} had no job running at its SIGTERM\n{report}"
        );
    }
    // The cut run: no end, and its slot ran again elsewhere with a higher
    // fence once its lease was over.
    let cut: Vec<&Run> = runs
        .iter()
        .filter(|r| r.runner == cut_pid && r.end.is_none() && r.start < cut_at)
        .collect();
    assert!(
        !cut.is_empty(),
        "the drained run outlasting its grace\n{report}"
    );
    let mut drained_wait: f64 = 0.0;
    for run in &cut {
        let record = run
            .slot
            .split_once('@')
            .map_or(run.slot.as_str(), |(r, _)| r);
        let again = runs
            .iter()
            .filter(|r| {
                r.slot.split_once('@').map(|(rec, _)| rec) == Some(record)
                    && r.fence > run.fence
                    && r.runner != cut_pid
            })
            .map(|r| r.start)
            .fold(f64::INFINITY, f64::min);
        assert!(again.is_finite(), "{run:?} never ran again\n{report}");
        drained_wait = drained_wait.max(again - run.start);
    }
    // The longest wait of a slot: from when it was due (a static job's
    // slot instant, a keyed run's enqueue) to the start of the run that
    // ended it.
    let first_end = |record: &str| -> Option<f64> {
        ended_once(record).iter().map(|r| r.start).reduce(f64::min)
    };
    // The records whose run the drain cut: their wait is the lease's.
    let cut_records: Vec<&str> = cut
        .iter()
        .map(|r| {
            r.slot
                .split_once('@')
                .map_or(r.slot.as_str(), |(rec, _)| rec)
        })
        .collect();
    let (mut longest_wait, mut longest_other): (f64, f64) = (0.0, 0.0);
    let mut note_wait = |record: &str, wait: f64| {
        longest_wait = longest_wait.max(wait);
        if !cut_records.contains(&record) {
            longest_other = longest_other.max(wait);
        }
    };
    for slot in &slots {
        let due: jiff::Timestamp = slot
            .rsplit_once('@')
            .expect("slot")
            .1
            .parse()
            .expect("instant");
        let started = runs
            .iter()
            .filter(|r| r.slot == *slot && r.end.is_some())
            .map(|r| r.start)
            .reduce(f64::min)
            .expect("ended");
        let record = slot.split_once('@').map_or(slot.as_str(), |(rec, _)| rec);
        note_wait(record, started - due.as_millisecond() as f64 / 1000.0);
    }
    for (key, at) in &keys {
        let record = format!("orders/{key}");
        let started = first_end(&record).expect("ended");
        note_wait(&record, started - at);
    }

    // The contract step: this tree's `init` once more, now that no node
    // of the baseline runs (on DynamoDB it gives the records the old
    // nodes wrote whole during the roll their names-index attribute back;
    // elsewhere it finds nothing to do).
    ok(
        &cli(&new, &dir, url, &["init", "--store", url]),
        "the contract step's init",
    );
    // The store at the end, read by this tree's CLI.
    let status = cli(&new, &dir, url, &["status", "--format", "json"]);
    ok(&status, "status");
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("json");
    assert_nothing_left(&status, &report);
    let listed = cli(
        &new,
        &dir,
        url,
        &[
            "runs",
            "ls",
            "orders",
            "--status",
            "succeeded",
            "--limit",
            "1000",
            "--format",
            "json",
        ],
    );
    ok(&listed, "runs ls");
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout).expect("json");
    assert_eq!(
        listed["runs"].as_array().map_or(0, Vec::len),
        keys.len(),
        "every keyed run succeeded: {listed}\n{report}"
    );
    Rolled {
        name: target.name,
        slots: slots.len() + keys.len(),
        longest_wait,
        longest_other,
        drained_wait,
    }
}

/// The roll on every shared store at once.
#[test]
fn a_fleet_rolls_from_the_baseline_to_this_version_on_every_shared_store() {
    let sqlite = Path::new(env!("CARGO_TARGET_TMPDIR")).join("roll-sqlite.db");
    let _ = std::fs::remove_file(&sqlite);
    let pg = cronslot_tests::postgres::shared();
    let db = pg.fresh_database("roll");
    let redis = cronslot_tests::redis::shared();
    let table = format!("roll-{}", std::process::id());
    let moto = cronslot_tests::moto::moto();
    let targets = [
        Target {
            name: "sqlite",
            url: format!("sqlite:{}", sqlite.display()),
        },
        Target {
            name: "postgres",
            url: pg.url(&db),
        },
        Target {
            name: "redis",
            url: redis.url("roll"),
        },
        Target {
            name: "dynamodb",
            url: format!(
                "dynamodb://{table}?region=us-east-1&endpoint={}",
                moto.endpoint
            ),
        },
    ];
    let rolled: Vec<Rolled> = std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .map(|t| scope.spawn(move || roll(t)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for r in rolled {
        eprintln!(
            "roll on {}: {} slots, each ended once, none missed or doubled; the longest wait of a \
             slot {:.1} s (of a slot whose run no drain cut: {:.1} s); the run cut by its \
             runner's drain ran again {:.1} s after it started",
            r.name, r.slots, r.longest_wait, r.longest_other, r.drained_wait
        );
    }
}
