//! `cronslot tick` (one pass, for system cron and CronJobs), `cronslot
//! init`, and what `run` and `tick` share: the store from CRONSLOT_STORE,
//! the secrets a command never inherits, the health probes, SIGTERM.
//! On SQLite here; the same commands on PostgreSQL and Redis are in `fleet`
//! (run by `store_postgres` and `store_redis`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cronslot_core::coord::{JobState, StateStore, TickIndex, exec::block_on};
use cronslot_core::manifest::parse_manifest;
use cronslot_runner::SqliteStore;
use jiff::{SignedDuration, Timestamp};

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("tick")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

fn cronslot(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .current_dir(dir)
        .env_remove("CRONSLOT_LOG")
        .env_remove("CRONSLOT_STORE")
        .envs(env.iter().copied())
        .output()
        .expect("run cronslot")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Writes `manifest`, gives each of its jobs a record created two minutes
/// ago and the store a tick mark from then, as a deployment that has been
/// ticking looks: its latest minute slot is due at once (a store's first
/// tick only writes the mark, and a job new to the store starts with the
/// slots after its creation).
pub(crate) fn due_store(dir: &Path, manifest: &str) -> String {
    std::fs::write(dir.join("cronslot.toml"), manifest).expect("write the manifest");
    let db = dir.join("state.db");
    let store = SqliteStore::open(&db).expect("open the store");
    let created = Timestamp::now() - SignedDuration::from_mins(2);
    for spec in parse_manifest(manifest, "cronslot.toml")
        .expect("valid manifest")
        .jobs
    {
        let state = JobState::new(spec.name.as_str(), &spec.spec_hash(), created, false);
        block_on(store.put(spec.name.as_str(), &state, None)).expect("seed the record");
    }
    block_on(store.tick_end(created)).expect("seed the tick mark");
    format!("sqlite:{}", db.display())
}

/// Waits, if need be, until the current minute has at least `room` left:
/// a test whose ticks must all fall in one minute (no new slot between
/// them, and a retry's window, which closes at the next slot, still open)
/// starts early enough in its minute.
pub(crate) fn with_room_in_the_minute(room: Duration) {
    let now = Timestamp::now();
    let into_minute = Duration::from_nanos(
        u64::try_from(now.as_nanosecond().rem_euclid(60_000_000_000)).unwrap_or(0),
    );
    let left = Duration::from_secs(60).saturating_sub(into_minute);
    if left < room {
        std::thread::sleep(left + Duration::from_millis(200));
    }
}

const DUE: &str = r#"
[[job]]
name = "every-minute"
schedule = "* * * * *"
timeout = "20s"
command = ["sh", "-c", "echo \"$CRONSLOT_SLOT\" >> ran.log; env > env.txt"]
"#;

#[test]
fn a_tick_runs_each_due_slot_once_however_many_machines_tick() {
    let dir = scratch("once");
    let store = due_store(&dir, DUE);
    with_room_in_the_minute(Duration::from_secs(20));
    // Four ticks at once, as four machines' crontabs fire together.
    let ticks: Vec<_> = (0..4)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_cronslot"))
                .args(["tick", "cronslot.toml", "--store", &store])
                .current_dir(&dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start a tick")
        })
        .collect();
    let outputs: Vec<Output> = ticks
        .into_iter()
        .map(|t| t.wait_with_output().expect("tick ends"))
        .collect();
    for o in &outputs {
        assert!(
            o.status.success(),
            "{}\n{}",
            text(&o.stdout),
            text(&o.stderr)
        );
    }
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("the job ran");
    assert_eq!(ran.lines().count(), 1, "one run of the slot: {ran}");
    let ran_here: Vec<&Output> = outputs
        .iter()
        .filter(|o| text(&o.stdout).contains("every-minute: 1 run(s), 1 succeeded"))
        .collect();
    assert_eq!(ran_here.len(), 1, "exactly one tick ran it");
    // The slot is resolved: the next tick (this minute) has nothing to do.
    let again = cronslot(&dir, &["tick", "cronslot.toml", "--store", &store], &[]);
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).contains("tick: 0 run(s)"),
        "{}",
        text(&again.stdout)
    );
    // The same, as the tick route's JSON document.
    let again = cronslot(
        &dir,
        &[
            "tick",
            "cronslot.toml",
            "--store",
            &store,
            "--format",
            "json",
        ],
        &[],
    );
    assert!(again.status.success(), "{}", text(&again.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&again.stdout).expect("one JSON document");
    assert_eq!(doc["runs"], 0, "{doc}");
    assert_eq!(doc["failed_jobs"], serde_json::json!([]), "{doc}");
}

#[test]
fn a_failed_run_makes_the_tick_exit_1_and_is_retried_as_usual() {
    let dir = scratch("failed");
    let store = due_store(
        &dir,
        r#"
[[job]]
name = "broken"
schedule = "* * * * *"
retry = { max_attempts = 2, backoff = "1s" }
command = ["sh", "-c", "echo nope >&2; exit 75"]
"#,
    );
    with_room_in_the_minute(Duration::from_secs(15));
    let o = cronslot(&dir, &["tick", "cronslot.toml", "--store", &store], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("a run did not succeed or could not be recorded: broken"),
        "{err}"
    );
    assert!(
        text(&o.stdout).contains("broken: 1 run(s), 0 succeeded, 1 to retry"),
        "{}",
        text(&o.stdout)
    );
    // The retry is the next tick's, a second later; with --format json the
    // failed pass still prints its document, and still exits 1.
    std::thread::sleep(Duration::from_millis(1500));
    let o = cronslot(
        &dir,
        &[
            "tick",
            "cronslot.toml",
            "--store",
            &store,
            "--format",
            "json",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    assert_eq!(doc["runs"], 1, "{doc}");
    assert_eq!(doc["succeeded"], 0, "{doc}");
    assert_eq!(doc["failed_jobs"], serde_json::json!(["broken"]), "{doc}");
    assert_eq!(doc["store_errors"], 0, "{doc}");
    let status = cronslot(
        &dir,
        &["status", "--store", &store, "--format", "json"],
        &[],
    );
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(
        status["jobs"][0]["dead_letters"], 1,
        "the second failure dead-lettered the slot: {status}"
    );
}

#[test]
fn a_tick_refuses_rust_function_jobs_and_bad_stores_before_touching_anything() {
    let dir = scratch("refused");
    std::fs::write(
        dir.join("cronslot.toml"),
        "[[job]]\nname = \"report\"\nschedule = \"* * * * *\"\n",
    )
    .expect("write");
    let o = cronslot(
        &dir,
        &["tick", "cronslot.toml", "--store", "sqlite:never.db"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("`cronslot tick` runs command and http jobs only") && err.contains("report"),
        "{err}"
    );
    assert!(!dir.join("never.db").exists(), "nothing created");
    for (store, says) in [
        (
            "https://jobs.example.com/cronslot",
            "a Cloudflare Worker runs its own jobs",
        ),
        ("mysql://db/x", "unsupported store URL"),
    ] {
        std::fs::write(
            dir.join("cronslot.toml"),
            "[[job]]\nname = \"c\"\nschedule = \"* * * * *\"\ncommand = [\"true\"]\n",
        )
        .expect("write");
        let o = cronslot(&dir, &["tick", "cronslot.toml", "--store", store], &[]);
        assert_eq!(o.status.code(), Some(2), "{store}");
        assert!(
            text(&o.stderr).contains(says),
            "{store}: {}",
            text(&o.stderr)
        );
    }
}

#[test]
fn init_creates_a_sqlite_store_once_and_is_idempotent() {
    let dir = scratch("init");
    let o = cronslot(&dir, &["init", "--store", "sqlite:sub/dir/state.db"], &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "sqlite:sub/dir/state.db: created\n");
    assert!(dir.join("sub/dir/state.db").exists());
    // From the environment, as a Deployment's Secret gives it.
    let o = cronslot(
        &dir,
        &["init"],
        &[("CRONSLOT_STORE", "sqlite:sub/dir/state.db")],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("ready"), "{}", text(&o.stdout));
    // --format json: one document, saying whether it was created.
    let json = |store: &str| {
        let o = cronslot(&dir, &["init", "--store", store, "--format", "json"], &[]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_str::<serde_json::Value>(&text(&o.stdout)).expect("one JSON document")
    };
    assert_eq!(
        json("sqlite:sub/dir/state.db"),
        serde_json::json!({"store": "sqlite:sub/dir/state.db", "kind": "sqlite", "created": false})
    );
    assert_eq!(
        json("sqlite:other.db"),
        serde_json::json!({"store": "sqlite:other.db", "kind": "sqlite", "created": true})
    );
    // A Worker's admin URL needs the token's variable.
    let o = cronslot(&dir, &["init", "--store", "https://x.example/c"], &[]);
    assert_eq!(o.status.code(), Some(2));
    let o = cronslot(
        &dir,
        &["init", "--store", "https://x.example/c", "--format", "json"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(text(&o.stdout), "", "no document on bad input");
    assert!(
        text(&o.stderr).contains("needs --token-env"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_command_never_inherits_the_store_password_but_its_own_env_applies() {
    let dir = scratch("env");
    let store = due_store(
        &dir,
        r#"
[[job]]
name = "envdump"
schedule = "* * * * *"
env = { JOB_DB_PASSWORD = "the-jobs-own" }
command = ["sh", "-c", "env > env.txt"]
"#,
    );
    let o = cronslot(
        &dir,
        &["tick", "cronslot.toml"],
        &[
            ("CRONSLOT_STORE", store.as_str()),
            ("PGPASSWORD", "hunter2-store-secret"),
            ("REDISCLI_AUTH", "hunter3-store-secret"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let env = std::fs::read_to_string(dir.join("env.txt")).expect("the job ran");
    assert!(!env.contains("hunter2-store-secret"), "{env}");
    assert!(!env.contains("hunter3-store-secret"), "{env}");
    assert!(!env.contains("CRONSLOT_STORE"), "{env}");
    assert!(env.contains("JOB_DB_PASSWORD=the-jobs-own"), "{env}");
    assert!(env.contains("CRONSLOT_JOB=envdump"), "{env}");
    // Nor is it in anything the command printed.
    assert!(!text(&o.stdout).contains("hunter2") && !text(&o.stderr).contains("hunter2"));
}

#[test]
fn run_serves_health_probes_and_stops_gracefully_on_sigterm() {
    let dir = scratch("health");
    let store = due_store(&dir, DUE);
    with_room_in_the_minute(Duration::from_secs(40));
    let port = cronslot_tests::http::free_port();
    let addr = format!("127.0.0.1:{port}");
    let child = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args([
            "run",
            "cronslot.toml",
            "--workers",
            "2",
            "--health-listen",
            &addr,
        ])
        .env("CRONSLOT_STORE", &store)
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the runner");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut live = None;
    while Instant::now() < deadline {
        live = cronslot_tests::http::get(port, "/healthz");
        if live.is_some() && dir.join("ran.log").exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(live.map(|l| l.0), Some(200), "liveness");
    assert_eq!(
        cronslot_tests::http::get(port, "/readyz").map(|r| r.0),
        Some(200),
        "readiness"
    );
    assert_eq!(
        cronslot_tests::http::get(port, "/nope").map(|r| r.0),
        Some(404)
    );
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let out = child.wait_with_output().expect("the runner ends");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("SIGTERM: claiming nothing more"), "{err}");
    assert!(text(&out.stdout).contains("every-minute"), "the summary");
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("ran");
    assert_eq!(ran.lines().count(), 1, "{ran}");
}

#[test]
fn a_bad_health_address_is_bad_input() {
    let dir = scratch("health-bad");
    std::fs::write(dir.join("cronslot.toml"), DUE).expect("write");
    let o = cronslot(
        &dir,
        &["run", "cronslot.toml", "--health-listen", "localhost"],
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--health-listen \"localhost\": expected IP:PORT"),
        "{}",
        text(&o.stderr)
    );
    assert!(!dir.join("cronslot.db").exists());
}
