//! The store commands (`status`, `dlq`, `pause`, `resume`, `backfill`,
//! `trigger`) driven through the binary against a real SQLite file, with
//! state seeded through the library at past instants.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, Claim, Coordinator, FailOutcome, Trigger};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runner::SqliteStore;
use jiff::{SignedDuration, Timestamp, ToSpan};
use serde_json::Value;

// ---------------------------------------------------------------- helpers

/// A fresh directory per test (removed and recreated, so reruns start clean).
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("store_cmds")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn cronslot(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run cronslot")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

/// The start of the current minute, minus `minutes`.
fn minutes_ago(minutes: i64) -> Timestamp {
    let now = Timestamp::now();
    let floor = now.as_second() - now.as_second().rem_euclid(60);
    Timestamp::from_second(floor - minutes * 60).unwrap()
}

fn plus_secs(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(secs)).unwrap()
}

/// An hourly minute half an hour away from now, so that the current slot
/// of `M * * * *` is ~30 minutes old and the next ~30 minutes ahead: no
/// slot boundary falls inside a test.
fn quiet_minute() -> i64 {
    let now = Timestamp::now().as_second();
    ((now / 60) + 30).rem_euclid(60)
}

const MANIFEST: &str = r#"
[defaults]
lease = "2m"
starting_deadline = "5m"

[[job]]
name = "broken"
schedule = "* * * * *"
retry = { max_attempts = 1 }
command = ["sh", "-c", "exit 1"]

[[job]]
name = "report"
schedule = "0 9 * * *"
timezone = "America/New_York"
command = ["true"]

[[job]]
name = "ping"
schedule = "0 * * * *"
http = { url = "http://127.0.0.1:9/hook" }
"#;

/// A directory with `cronslot.toml` and an (empty) store `cronslot.db`.
fn setup(name: &str, manifest: &str) -> PathBuf {
    let dir = scratch(name);
    std::fs::write(dir.join("cronslot.toml"), manifest).unwrap();
    SqliteStore::open(dir.join("cronslot.db")).unwrap();
    dir
}

fn coordinator(dir: &Path) -> CasCoordinator<SqliteStore> {
    CasCoordinator::new(SqliteStore::open(dir.join("cronslot.db")).unwrap(), 7)
}

fn spec(dir: &Path, job: &str) -> JobSpec {
    let text = std::fs::read_to_string(dir.join("cronslot.toml")).unwrap();
    parse_manifest(&text, "cronslot.toml")
        .unwrap()
        .job(job)
        .unwrap()
        .clone()
}

/// A tick at `at` that finds nothing due: creates the job's record, or
/// moves its cursor to `at`.
fn create_record(c: &CasCoordinator<SqliteStore>, spec: &JobSpec, at: Timestamp) {
    let claim = block_on(c.claim(spec, at, Trigger::Tick, "seed")).unwrap();
    assert!(matches!(claim, Claim::Idle(_)), "{claim:?}");
}

/// Seeds `broken` 30 minutes ago: one success, then one dead letter.
/// Returns the succeeded slot and the dead one.
fn seed_broken(dir: &Path) -> (Timestamp, Timestamp) {
    let c = coordinator(dir);
    let spec = spec(dir, "broken");
    let t0 = minutes_ago(30);
    create_record(&c, &spec, t0);

    let ok = match block_on(c.claim(&spec, plus_secs(t0, 61), Trigger::Tick, "w1")).unwrap() {
        Claim::Claimed(lease) => lease,
        other => panic!("{other:?}"),
    };
    block_on(c.complete(&spec, ok.fence, None, plus_secs(t0, 63))).unwrap();

    let bad = match block_on(c.claim(&spec, plus_secs(t0, 121), Trigger::Tick, "w2")).unwrap() {
        Claim::Claimed(lease) => lease,
        other => panic!("{other:?}"),
    };
    let fate = block_on(c.fail(
        &spec,
        bad.fence,
        "export target unreachable",
        true,
        plus_secs(t0, 122),
    ))
    .unwrap();
    assert_eq!(fate, FailOutcome::Dead);
    (ok.slot, bad.slot)
}

fn job<'v>(status: &'v Value, name: &str) -> &'v Value {
    status["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["job"] == name)
        .unwrap_or_else(|| panic!("no job {name} in {status}"))
}

fn utc(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

// ------------------------------------------------------------------ status

#[test]
fn status_json_has_the_documented_shape() {
    let dir = setup("status_json", MANIFEST);
    let (ok_slot, dead_slot) = seed_broken(&dir);
    let o = cronslot(&dir, &["status", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v = json(&o);
    assert_eq!(v["store"], "sqlite:cronslot.db");
    assert!(v["now"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        v["jobs"].as_array().unwrap().len(),
        3,
        "manifest order, every job"
    );
    assert_eq!(v["not_in_manifest"], serde_json::json!([]));

    let b = job(&v, "broken");
    // The admin route's document: the same keys wherever it is read.
    for key in [
        "job",
        "schedule",
        "timezone",
        "explanation",
        "action",
        "recorded",
        "paused",
        "health",
        "stale",
        "stale_after_seconds",
        "stale_at",
        "last_success",
        "last_success_slot",
        "next_slot",
        "late_since",
        "due",
        "live_leases",
        "fence",
        "pending",
        "runs",
        "succeeded",
        "failed",
        "missed",
        "skipped",
        "dead_letters",
        "record",
    ] {
        assert!(b.get(key).is_some(), "missing {key} in {b}");
    }
    assert_eq!(b["action"], "command");
    assert_eq!(b["recorded"], true);
    assert_eq!(b["paused"], false);
    assert_eq!(b["fence"], 2);
    // Its last success was ~29 minutes ago; a per-minute job with a 2m
    // lease and a 5m deadline is stale after 8 minutes.
    assert_eq!(b["stale_after_seconds"], 8 * 60);
    assert_eq!(b["health"], "stale");
    assert_eq!(b["stale"], true);
    assert_eq!(b["last_success_slot"], utc(ok_slot));
    let record = &b["record"];
    let last = &record["last_success"];
    assert_eq!(last["slot"], utc(ok_slot));
    assert_eq!(last["owner"], "w1");
    assert_eq!(last["fence"], 1);
    assert_eq!(b["last_success"], last["finished_at"]);
    assert_eq!(b["runs"], 2);
    assert_eq!(b["succeeded"], 1);
    assert_eq!(b["failed"], 1);
    assert_eq!(record["counters"]["dead"], 1);
    let missed = b["missed"].as_object().unwrap();
    let keys: Vec<&str> = missed.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["catch_up", "clock_change", "downtime", "dst", "overlap"]
    );
    assert!(missed["downtime"].as_u64().unwrap() > 20, "{missed:?}");
    assert_eq!(b["skipped"]["paused"], 0);
    assert_eq!(b["dead_letters"], 1);
    let letter = &record["dead"][0];
    assert_eq!(letter["slot"], utc(dead_slot));
    assert_eq!(letter["attempts"], 1);
    assert_eq!(letter["fence"], 2);
    assert_eq!(letter["last_error"], "export target unreachable");
    // The newest due slot waits for a runner (catch_up = "latest").
    assert_eq!(b["due"]["count"], 1);
    // Nothing has claimed a slot since the one after the dead letter's:
    // late since then (the store has no runner).
    let late: Timestamp = b["late_since"].as_str().unwrap().parse().unwrap();
    assert!(
        late > dead_slot && late <= b["due"]["oldest"].as_str().unwrap().parse().unwrap(),
        "{b}"
    );
    assert_eq!(b["live_leases"], 0);
    assert_eq!(record["leases"], serde_json::json!([]));

    // A job without a record: "no runs yet", with its next slot.
    let r = job(&v, "report");
    assert_eq!(r["recorded"], false);
    assert_eq!(r["last_success"], Value::Null);
    assert_eq!(r["record"]["fence"], 0);
    assert_eq!(r["health"], "never_succeeded");
    assert_eq!(r["late_since"], Value::Null);
    assert_eq!(r["timezone"], "America/New_York");
    let next: Timestamp = r["next_slot"].as_str().unwrap().parse().unwrap();
    assert!(next > Timestamp::now());
    assert_eq!(job(&v, "ping")["action"], "http");
}

#[test]
fn status_text_shows_each_job() {
    let dir = setup("status_text", MANIFEST);
    let (_, dead_slot) = seed_broken(&dir);
    let o = cronslot(&dir, &["status"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "store sqlite:cronslot.db",
        "broken  * * * * * (UTC)  command job",
        "health        STALE: no success for",
        "last success  broken@",
        "next slot",
        "fence         2",
        "live leases   none",
        "missed",
        "downtime",
        "dead letters  1",
        "export target unreachable",
        "report  0 9 * * * (America/New_York)  command job",
        "no runs yet (no record in this store",
        "EST",
    ] {
        assert!(out.contains(needle), "{needle:?} not in:\n{out}");
    }
    assert!(out.contains(&format!("broken@{}", utc(dead_slot))), "{out}");
    // --job narrows it down to one job.
    let o = cronslot(&dir, &["status", "--job", "report"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stdout(&o).contains("broken"), "{}", stdout(&o));
}

#[test]
fn status_on_a_missing_store_fails_and_creates_nothing() {
    let dir = scratch("missing_store");
    std::fs::write(dir.join("cronslot.toml"), MANIFEST).unwrap();
    for args in [
        &["status"][..],
        &["dlq", "list", "--store", "sqlite:nowhere.db"],
        &["pause", "broken", "--store", "sqlite:nowhere.db"],
        &["trigger", "broken", "--store", "sqlite:nowhere.db"],
    ] {
        let o = cronslot(&dir, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("does not exist yet"), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("cronslot init --store"),
            "{}",
            stderr(&o)
        );
    }
    assert!(!dir.join("cronslot.db").exists());
    assert!(!dir.join("nowhere.db").exists());
}

#[test]
fn unknown_job_and_unknown_store_scheme_are_bad_input() {
    let dir = setup("bad_input", MANIFEST);
    let o = cronslot(&dir, &["status", "--job", "nope"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("no job \"nope\"") && stderr(&o).contains("broken, report, ping"),
        "{}",
        stderr(&o)
    );
    for args in [
        &["pause", "nope"][..],
        &["trigger", "nope"],
        &["dlq", "redrive", "nope"],
        &[
            "backfill",
            "nope",
            "--from",
            "2026-01-01T00:00:00Z",
            "--to",
            "2026-01-02T00:00:00Z",
        ],
    ] {
        let o = cronslot(&dir, args);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("known jobs"), "{}", stderr(&o));
    }

    let o = cronslot(&dir, &["status", "--store", "mongodb://localhost"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("unsupported store URL") && stderr(&o).contains("expected sqlite:PATH"),
        "{}",
        stderr(&o)
    );
    let o = cronslot(
        &dir,
        &["status", "--store", "https://worker.example/cronslot"],
    );
    assert_eq!(code(&o), 2, "a Worker's admin URL without --token-env");
    assert!(stderr(&o).contains("needs --token-env"), "{}", stderr(&o));
    let o = cronslot(&dir, &["status", "--store", "dynamodb://"]);
    assert_eq!(code(&o), 2, "a DynamoDB URL without a table is bad input");
    let o = cronslot(&dir, &["status", "--store", "cronslot.db"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("did you mean sqlite:cronslot.db?"),
        "{}",
        stderr(&o)
    );
}

// ----------------------------------------------------------- pause, resume

#[test]
fn pause_and_resume_round_trip_is_visible_in_status() {
    let dir = setup("pause_resume", MANIFEST);
    let o = cronslot(&dir, &["pause", "report"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("paused job report"), "{}", stdout(&o));

    let v = json(&cronslot(
        &dir,
        &["status", "--job", "report", "--format", "json"],
    ));
    assert_eq!(job(&v, "report")["paused"], true);
    assert_eq!(job(&v, "report")["health"], "paused");
    assert!(stdout(&cronslot(&dir, &["status", "--job", "report"])).contains("PAUSED"));

    let o = cronslot(&dir, &["pause", "report"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("already paused"), "{}", stdout(&o));

    let o = cronslot(&dir, &["resume", "report"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("resumed job report"), "{}", stdout(&o));
    assert!(stdout(&o).contains("next slot"), "{}", stdout(&o));
    let v = json(&cronslot(
        &dir,
        &["status", "--job", "report", "--format", "json"],
    ));
    assert_eq!(job(&v, "report")["paused"], false);

    let o = cronslot(&dir, &["resume", "report"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("not paused"), "{}", stdout(&o));

    // As JSON: the admin route's pause document.
    for (args, doc) in [
        (
            ["pause", "report"],
            serde_json::json!({"job": "report", "paused": true, "changed": true}),
        ),
        (
            ["pause", "report"],
            serde_json::json!({"job": "report", "paused": true, "changed": false}),
        ),
        (
            ["resume", "report"],
            serde_json::json!({"job": "report", "paused": false, "changed": true}),
        ),
    ] {
        let v = json(&cronslot(&dir, &[args[0], args[1], "--format", "json"]));
        assert_eq!(v, doc, "{args:?}");
    }
}

// --------------------------------------------------------------------- dlq

#[test]
fn dlq_lists_the_dead_letter_and_redrive_moves_it_to_pending() {
    let dir = setup("dlq", MANIFEST);
    let (_, dead) = seed_broken(&dir);

    let o = cronslot(&dir, &["dlq", "list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("JOB"), "{out}");
    assert!(out.contains(&utc(dead)), "{out}");
    assert!(out.contains("export target unreachable"), "{out}");

    let v = json(&cronslot(&dir, &["dlq", "list", "--format", "json"]));
    let letters = v["dead_letters"].as_array().unwrap();
    assert_eq!(letters.len(), 1, "{v}");
    assert_eq!(letters[0]["job"], "broken");
    assert_eq!(letters[0]["slot"], utc(dead));
    assert_eq!(letters[0]["slot_id"], format!("broken@{}", utc(dead)));
    assert_eq!(letters[0]["attempts"], 1);
    assert_eq!(letters[0]["fence"], 2);
    assert_eq!(letters[0]["last_error"], "export target unreachable");
    assert!(letters[0]["died_at"].is_string());

    // A slot that is not a dead letter.
    let o = cronslot(
        &dir,
        &["dlq", "redrive", "broken", "--slot", "2020-01-01T00:00:00Z"],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a dead letter"),
        "{}",
        stderr(&o)
    );
    let o = cronslot(&dir, &["dlq", "redrive", "broken", "--slot", "yesterday"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));

    let o = cronslot(&dir, &["dlq", "redrive", "broken", "--slot", &utc(dead)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("redrove 1 dead letter of job broken"),
        "{}",
        stdout(&o)
    );
    assert!(
        stdout(&o).contains(&format!("broken@{}", utc(dead))),
        "{}",
        stdout(&o)
    );

    let v = json(&cronslot(
        &dir,
        &["status", "--job", "broken", "--format", "json"],
    ));
    let b = job(&v, "broken");
    assert_eq!(b["dead_letters"], 0);
    assert_eq!(b["record"]["counters"]["redriven"], 1);
    let pending = b["record"]["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{b}");
    assert_eq!(pending[0]["slot"], utc(dead));
    assert_eq!(pending[0]["origin"], "redrive");
    assert_eq!(pending[0]["attempt"], 1);

    let o = cronslot(&dir, &["dlq", "list"]);
    assert!(stdout(&o).contains("no dead letters"), "{}", stdout(&o));
    // Redriving it again: it is waiting now, not dead.
    let o = cronslot(&dir, &["dlq", "redrive", "broken", "--slot", &utc(dead)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("running or waiting"), "{}", stderr(&o));
    let o = cronslot(&dir, &["dlq", "redrive", "broken"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("no dead letters"), "{}", stdout(&o));
    // As JSON: the admin route's redrive document, here with nothing in it.
    let v = json(&cronslot(
        &dir,
        &["dlq", "redrive", "broken", "--format", "json"],
    ));
    assert_eq!(v, serde_json::json!({"job": "broken", "redriven": []}));
}

// ---------------------------------------------------------------- backfill

#[test]
fn backfill_dry_run_changes_nothing_and_the_real_one_queues() {
    let minute = quiet_minute();
    let manifest = format!(
        "[[job]]\nname = \"hourly\"\nschedule = \"{minute} * * * *\"\ncommand = [\"true\"]\n"
    );
    let dir = setup("backfill", &manifest);
    let spec = spec(&dir, "hourly");
    let c = coordinator(&dir);
    create_record(&c, &spec, minutes_ago(6 * 60));
    // A runner's tick moves the cursor to now (the late slots are missed).
    create_record(&c, &spec, Timestamp::now());
    let from = utc(minutes_ago(6 * 60));
    let to = utc(minutes_ago(60));

    let o = cronslot(
        &dir,
        &[
            "backfill",
            "hourly",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("would queue 5 slots of job hourly (dry run"),
        "{out}"
    );
    assert_eq!(out.matches("hourly@").count(), 5, "{out}");
    let v = json(&cronslot(&dir, &["status", "--format", "json"]));
    assert_eq!(
        job(&v, "hourly")["record"]["pending"],
        serde_json::json!([])
    );
    // As JSON: the admin route's backfill document.
    let v = json(&cronslot(
        &dir,
        &[
            "backfill",
            "hourly",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
            "--format",
            "json",
        ],
    ));
    assert_eq!(v["job"], "hourly");
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["slots"].as_array().map(Vec::len), Some(5), "{v}");

    let o = cronslot(&dir, &["backfill", "hourly", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("queued 5 slots of job hourly"),
        "{}",
        stdout(&o)
    );
    let v = json(&cronslot(&dir, &["status", "--format", "json"]));
    let h = job(&v, "hourly");
    let pending = h["record"]["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 5, "{h}");
    assert!(pending.iter().all(|p| p["origin"] == "backfill"));
    assert_eq!(h["record"]["counters"]["backfilled"], 5);

    // Again: they are waiting now, so nothing more is queued.
    let o = cronslot(&dir, &["backfill", "hourly", "--from", &from, "--to", &to]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("no slot of job hourly to queue"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn backfill_into_the_future_or_backwards_is_bad_input() {
    let dir = setup("backfill_bad", MANIFEST);
    let future = utc(Timestamp::now().checked_add(2.hours()).unwrap());
    let past = utc(minutes_ago(60));
    let o = cronslot(
        &dir,
        &["backfill", "report", "--from", &past, "--to", &future],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("is in the future"), "{}", stderr(&o));
    let o = cronslot(
        &dir,
        &[
            "backfill",
            "report",
            "--from",
            &past,
            "--to",
            "2020-01-01T00:00:00Z",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--from must be before --to"),
        "{}",
        stderr(&o)
    );
    let o = cronslot(
        &dir,
        &["backfill", "report", "--from", "last week", "--to", &past],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--from \"last week\" is not an RFC 3339 instant"),
        "{}",
        stderr(&o)
    );
}

// ----------------------------------------------------------------- trigger

#[test]
fn trigger_runs_a_command_job_once() {
    let minute = quiet_minute();
    let manifest = format!(
        r#"[[job]]
name = "writer"
schedule = "{minute} * * * *"
command = ["sh", "-c", "echo \"$CRONSLOT_JOB $CRONSLOT_SLOT $CRONSLOT_IDEMPOTENCY_KEY $CRONSLOT_FENCE $CRONSLOT_ATTEMPT $CRONSLOT_SCHEDULED_AT $GREETING\" >> triggered.log"]
env = {{ GREETING = "hello" }}
"#
    );
    let dir = setup("trigger", &manifest);
    let spec = spec(&dir, "writer");
    create_record(&coordinator(&dir), &spec, minutes_ago(3 * 60));
    let slot = spec.schedule.prev_before(Timestamp::now()).unwrap();
    let id = format!("writer@{}", utc(slot));

    let o = cronslot(&dir, &["trigger", "writer"]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains(&format!("claimed {id}")),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("owner cli-"), "{}", stdout(&o));
    assert!(stdout(&o).contains("succeeded"), "{}", stdout(&o));
    let log = std::fs::read_to_string(dir.join("triggered.log")).unwrap();
    assert_eq!(
        log.trim(),
        format!("writer {id} {id} 1 1 {} hello", utc(slot)),
        "one run with the slot's environment"
    );

    let o = cronslot(&dir, &["trigger", "writer"]);
    assert_eq!(code(&o), 1, "{}\n{}", stdout(&o), stderr(&o));
    assert!(stderr(&o).contains("already ran"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(dir.join("triggered.log")).unwrap(),
        log
    );

    let v = json(&cronslot(&dir, &["status", "--format", "json"]));
    let w = job(&v, "writer");
    assert_eq!(w["last_success_slot"], utc(slot));
    assert_eq!(w["runs"], 1);
    assert_eq!(w["health"], "ok");
}

#[test]
fn trigger_records_a_failed_run() {
    let minute = quiet_minute();
    let manifest = format!(
        "[[job]]\nname = \"failing\"\nschedule = \"{minute} * * * *\"\n\
         command = [\"sh\", \"-c\", \"echo disk full >&2; exit 3\"]\n"
    );
    let dir = setup("trigger_fails", &manifest);
    let spec = spec(&dir, "failing");
    create_record(&coordinator(&dir), &spec, minutes_ago(3 * 60));

    let o = cronslot(&dir, &["trigger", "failing"]);
    assert_eq!(code(&o), 1, "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("(permanent): exit status 3: disk full"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("dead letter"), "{}", stderr(&o));
    let v = json(&cronslot(&dir, &["dlq", "list", "--format", "json"]));
    assert_eq!(
        v["dead_letters"][0]["last_error"],
        "exit status 3: disk full"
    );
    // The dead slot is resolved: a second trigger says so and points at redrive.
    let o = cronslot(&dir, &["trigger", "failing"]);
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("cronslot dlq redrive failing"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn trigger_format_json_prints_the_trigger_document_whatever_the_outcome() {
    let minute = quiet_minute();
    let manifest = format!(
        "[[job]]\nname = \"fine\"\nschedule = \"{minute} * * * *\"\ncommand = [\"true\"]\n\n\
         [[job]]\nname = \"failing\"\nschedule = \"{minute} * * * *\"\n\
         command = [\"sh\", \"-c\", \"echo noise; echo disk full >&2; exit 3\"]\n\n\
         [[job]]\nname = \"ping\"\nschedule = \"{minute} * * * *\"\n\
         http = {{ url = \"http://127.0.0.1:9/\" }}\n"
    );
    let dir = setup("trigger_json", &manifest);
    let c = coordinator(&dir);
    for name in ["fine", "failing"] {
        create_record(&c, &spec(&dir, name), minutes_ago(3 * 60));
    }
    let slot = spec(&dir, "fine")
        .schedule
        .prev_before(Timestamp::now())
        .unwrap();

    // Succeeded: the admin route's document, and nothing else on stdout.
    let o = cronslot(&dir, &["trigger", "fine", "--format", "json"]);
    assert_eq!(code(&o), 0, "{}\n{}", stdout(&o), stderr(&o));
    let v = json(&o);
    assert_eq!(v["job"], "fine");
    assert_eq!(v["outcome"], "succeeded");
    assert_eq!(v["slot"], utc(slot));
    assert_eq!(v["slot_id"], format!("fine@{}", utc(slot)));
    assert_eq!(v["attempt"], 1);
    assert_eq!(v["fence"], 1);
    assert!(v["duration_ms"].as_i64().is_some_and(|ms| ms >= 0), "{v}");
    assert!(v.get("error").is_none(), "{v}");

    // Nothing claimed: still the document (with why), exit 1, stderr as in text.
    let o = cronslot(&dir, &["trigger", "fine", "--format", "json"]);
    assert_eq!(code(&o), 1, "{}\n{}", stdout(&o), stderr(&o));
    let v = json(&o);
    assert_eq!(v["outcome"], "not_claimed");
    assert_eq!(v["idle"]["AlreadyResolved"]["slot"], utc(slot), "{v}");
    assert!(
        v["message"].as_str().unwrap().contains("already ran"),
        "{v}"
    );
    assert!(stderr(&o).contains("already ran"), "{}", stderr(&o));

    // Failed: the run's error and fate; the job's own stdout is not on ours.
    let o = cronslot(&dir, &["trigger", "failing", "--format", "json"]);
    assert_eq!(code(&o), 1, "{}\n{}", stdout(&o), stderr(&o));
    let v = json(&o);
    assert_eq!(v["outcome"], "failed");
    assert_eq!(v["error"], "exit status 3: disk full");
    assert_eq!(v["permanent"], true);
    assert_eq!(v["fate"], "Dead");
    assert_eq!(v["attempt"], 1);
    assert!(stderr(&o).contains("dead letter"), "{}", stderr(&o));

    // Cannot run here: the document too, exit 2, nothing claimed.
    let o = cronslot(&dir, &["trigger", "ping", "--format", "json"]);
    assert_eq!(code(&o), 2, "{}\n{}", stdout(&o), stderr(&o));
    let v = json(&o);
    assert_eq!(v["outcome"], "cannot_run");
    assert!(v.get("slot").is_none(), "{v}");
    assert!(
        stderr(&o).contains("runs command jobs only"),
        "{}",
        stderr(&o)
    );

    // Bad input before any outcome: no document.
    let o = cronslot(&dir, &["trigger", "nope", "--format", "json"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(stdout(&o), "");
}

#[test]
fn trigger_refuses_http_jobs_without_claiming() {
    let dir = setup("trigger_http", MANIFEST);
    let o = cronslot(&dir, &["trigger", "ping"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("runs command jobs only"),
        "{}",
        stderr(&o)
    );
    let v = json(&cronslot(
        &dir,
        &["status", "--job", "ping", "--format", "json"],
    ));
    assert_eq!(job(&v, "ping")["recorded"], false);
    assert_eq!(job(&v, "ping")["fence"], 0);
}

#[test]
fn trigger_on_a_paused_job_runs_nothing() {
    let dir = setup("trigger_paused", MANIFEST);
    assert_eq!(code(&cronslot(&dir, &["pause", "report"])), 0);
    let o = cronslot(&dir, &["trigger", "report"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("is paused"), "{}", stderr(&o));
}

#[test]
fn trigger_kills_a_command_at_its_timeout_and_schedules_a_retry() {
    let minute = quiet_minute();
    let manifest = format!(
        "[[job]]\nname = \"slow\"\nschedule = \"{minute} * * * *\"\ntimeout = \"1s\"\n\
         command = [\"sleep\", \"30\"]\n"
    );
    let dir = setup("trigger_timeout", &manifest);
    let spec = spec(&dir, "slow");
    create_record(&coordinator(&dir), &spec, minutes_ago(3 * 60));

    let started = std::time::Instant::now();
    let o = cronslot(&dir, &["trigger", "slow"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(code(&o), 1, "{}\n{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains("(transient): timed out after 1s"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("attempt 2 is due at"), "{}", stderr(&o));
    let v = json(&cronslot(&dir, &["status", "--format", "json"]));
    let pending = &job(&v, "slow")["record"]["pending"];
    assert_eq!(pending[0]["attempt"], 2, "{v}");
    assert_eq!(job(&v, "slow")["failed"], 1);
}

#[test]
fn a_live_lease_shows_in_status_and_blocks_a_trigger() {
    let minute = quiet_minute();
    let manifest = format!(
        "[[job]]\nname = \"busy\"\nschedule = \"{minute} * * * *\"\nstarting_deadline = \"1h\"\n\
         command = [\"true\"]\n"
    );
    let dir = setup("live_lease", &manifest);
    let spec = spec(&dir, "busy");
    let c = coordinator(&dir);
    create_record(&c, &spec, minutes_ago(3 * 60));
    let lease = match block_on(c.claim(&spec, Timestamp::now(), Trigger::Tick, "worker-7")).unwrap()
    {
        Claim::Claimed(lease) => lease,
        other => panic!("{other:?}"),
    };

    let v = json(&cronslot(&dir, &["status", "--format", "json"]));
    let leases = job(&v, "busy")["record"]["leases"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(leases.len(), 1, "{v}");
    assert_eq!(leases[0]["owner"], "worker-7");
    assert_eq!(leases[0]["fence"], lease.fence);
    assert_eq!(leases[0]["attempt"], 1);
    assert_eq!(leases[0]["slot"], utc(lease.slot));
    assert_eq!(leases[0]["expires_at"], lease.expires_at.to_string());
    let text = stdout(&cronslot(&dir, &["status"]));
    assert!(text.contains("live leases   1"), "{text}");
    assert!(text.contains("owner worker-7"), "{text}");

    let o = cronslot(&dir, &["trigger", "busy"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is running now (fence 1)"),
        "{}",
        stderr(&o)
    );
}
