//! The store commands on a server store, written once and run on
//! PostgreSQL (`store_postgres`) and Redis (`store_redis`) through
//! [`CliStore`]: `init`, `tick` from several machines at once, `status`,
//! `pause`, `resume`, `trigger`, `backfill`, `dlq` and `serve`, and the
//! errors, which name the store and never its password.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use jiff::Timestamp;

/// `cronslot ARGS` in `dir` on `store` (`CRONSLOT_STORE`), with no
/// password from the environment.
pub fn cronslot(dir: &Path, args: &[&str], store: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .env("CRONSLOT_STORE", store)
        .env_remove("CRONSLOT_LOG")
        .env_remove("PGPASSWORD")
        .env_remove("REDISCLI_AUTH")
        .current_dir(dir)
        .output()
        .expect("run cronslot")
}

/// A fresh directory `KIND/NAME` in the target's temporary directory.
pub fn scratch(kind: &str, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(kind).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    dir
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `o` succeeded; its stdout.
fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}{}", stdout(o), stderr(o));
    stdout(o)
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

/// What the store commands' test reads and changes in a store behind the
/// `cronslot` command's back, with the server's own client.
pub trait CliStore {
    /// `kind` in `init --format json`.
    fn kind(&self) -> &'static str;
    /// What `init` says of a store that is there already.
    fn found_there(&self) -> &'static str;
    /// How `status` names the store: its label starts with this.
    fn label_start(&self) -> String;
    /// Checks the store's own fields of `init --format json` on a store
    /// that is there already.
    fn check_init_document(&self, document: &serde_json::Value);
    /// How many job records the store holds.
    fn records(&self) -> usize;
    /// How many of them are paused.
    fn paused(&self) -> usize;
    /// Moves each record's `created_at` and `cursor`, and the tick mark,
    /// to two minutes ago, as if ticks had been running.
    fn rewind_two_minutes(&self);
}

/// `init`, `tick`, `status`, `pause`, `resume`, `trigger`, `backfill` and
/// `dlq` on a server store: init is idempotent, ticks on several machines
/// at once run a slot once, the store commands read what the ticks wrote
/// and write what `cronslot serve` and the ticks read.
pub fn init_tick_and_the_store_commands_work(store: &impl CliStore, url: &str, dir: &Path) {
    // `broken` is due half an hour away from now: nothing ticks it.
    let quiet = (Timestamp::now().as_second() / 60 + 30).rem_euclid(60);
    std::fs::write(
        dir.join("cronslot.toml"),
        format!(
            "[[job]]\nname = \"report\"\nschedule = \"* * * * *\"\n\
             retry = {{ max_attempts = 1 }}\n\
             command = [\"sh\", \"-c\", \"echo \\\"$CRONSLOT_SLOT\\\" >> ran.log\"]\n\
             \n[[job]]\nname = \"broken\"\nschedule = \"{quiet} * * * *\"\n\
             retry = {{ max_attempts = 1 }}\n\
             command = [\"sh\", \"-c\", \"echo disk full >&2; exit 3\"]\n"
        ),
    )
    .expect("manifest");
    // status refuses a store that was never created, instead of creating it.
    let o = cronslot(dir, &["status", "--manifest", "cronslot.toml"], url);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("cronslot init"), "{}", stderr(&o));
    let first = ok(&cronslot(dir, &["init"], url));
    let second = ok(&cronslot(dir, &["init"], url));
    assert_ne!(first, second, "the second init finds the store there");
    assert!(second.contains(store.found_there()), "{second}");
    let o = cronslot(dir, &["init", "--format", "json"], url);
    ok(&o);
    let v = json(&o);
    assert_eq!(v["kind"], store.kind(), "{v}");
    assert_eq!(v["created"], false, "{v}");
    assert!(
        !v["store"].as_str().expect("store").contains("password"),
        "the store's label, without a password: {v}"
    );
    store.check_init_document(&v);
    assert_eq!(store.records(), 0, "init creates the store, no records");
    // The store's first tick writes the tick mark and the record of
    // `report` (due in the minute it looks back over; nothing runs). Move
    // both two minutes back, as if ticks had been running: `report`'s latest
    // slot is due.
    ok(&cronslot(dir, &["tick", "cronslot.toml"], url));
    assert!(!dir.join("ran.log").exists(), "the first tick ran nothing");
    store.rewind_two_minutes();
    let ticks: Vec<_> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_cronslot"))
                .args(["tick", "cronslot.toml"])
                .env("CRONSLOT_STORE", url)
                .current_dir(dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("tick")
        })
        .collect();
    for t in ticks {
        ok(&t.wait_with_output().expect("tick ends"));
    }
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("the job ran");
    assert_eq!(ran.lines().count(), 1, "{ran}");
    let status = |job: &str| {
        let o = cronslot(
            dir,
            &["status", "--manifest", "cronslot.toml", "--format", "json"],
            url,
        );
        ok(&o);
        let v = json(&o);
        let label = v["store"].as_str().expect("store").to_string();
        assert!(label.starts_with(&store.label_start()), "{v}");
        v["jobs"]
            .as_array()
            .expect("jobs")
            .iter()
            .find(|j| j["job"] == job)
            .unwrap_or_else(|| panic!("no job {job}: {v}"))
            .clone()
    };
    let report = status("report");
    assert_eq!(report["succeeded"], 1, "{report}");

    // `cronslot serve` on the same store: the routes read what the ticks
    // wrote, a pause is written to it, and a tick over HTTP in the same
    // minute runs nothing again.
    use crate::serve::{
        ADMIN_TOKEN, TICK_SECRET, call, job as job_of, json as json_of, serve, stop,
    };
    let (child, port) = serve(
        dir,
        url,
        &[],
        &[
            ("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN),
            ("CRONSLOT_TICK_SECRET", TICK_SECRET),
        ],
    );
    let v = json_of(&call(port, "GET", "/cronslot/status", Some(ADMIN_TOKEN)));
    assert_eq!(job_of(&v, "report")["succeeded"], 1, "{v}");
    let pause = call(
        port,
        "POST",
        "/cronslot/jobs/report/pause",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(pause.status, 200, "{pause:?}");
    assert_eq!(store.paused(), 1, "the pause is in the store");
    let tick = call(port, "POST", "/cronslot/tick", Some(TICK_SECRET));
    assert_eq!(tick.status, 200, "{tick:?}");
    assert_eq!(json_of(&tick)["runs"], 0, "{tick:?}");
    stop(child);
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("the job ran");
    assert_eq!(ran.lines().count(), 1, "{ran}");

    // The same pause through the command, and a resume.
    let out = ok(&cronslot(dir, &["pause", "report"], url));
    assert!(out.contains("already paused"), "{out}");
    let out = ok(&cronslot(dir, &["resume", "report"], url));
    assert!(out.contains("resumed job report"), "{out}");
    assert_eq!(status("report")["paused"], false);
    assert_eq!(store.paused(), 0, "the resume is in the store");

    // `broken`'s latest slot, triggered, fails for good (one attempt) and
    // is a dead letter; redriven, it waits to run again, and so does the
    // hour before it, backfilled.
    let hour = jiff::SignedDuration::from_hours(1);
    let now = Timestamp::now();
    let mut slot =
        Timestamp::from_second(now.as_second() / 3600 * 3600 + quiet * 60).expect("instant");
    if slot > now {
        slot = slot.checked_sub(hour).expect("instant");
    }
    let utc = |t: Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    let (slot, before) = (utc(slot), utc(slot.checked_sub(hour).expect("instant")));
    let o = cronslot(dir, &["trigger", "broken"], url);
    assert_eq!(o.status.code(), Some(1), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stderr(&o).contains(&format!("broken@{slot} failed")) && stderr(&o).contains("dead letter"),
        "{}",
        stderr(&o)
    );
    let o = cronslot(dir, &["dlq", "list", "--format", "json"], url);
    ok(&o);
    let v = json(&o);
    let letters = v["dead_letters"].as_array().expect("dead letters");
    assert_eq!(letters.len(), 1, "{v}");
    assert_eq!(letters[0]["slot_id"], format!("broken@{slot}"), "{v}");
    assert_eq!(letters[0]["last_error"], "exit status 3: disk full", "{v}");
    let out = ok(&cronslot(
        dir,
        &["dlq", "redrive", "broken", "--slot", &slot],
        url,
    ));
    assert!(out.contains("redrove 1 dead letter of job broken"), "{out}");
    let out = ok(&cronslot(
        dir,
        &["backfill", "broken", "--from", &before, "--to", &before],
        url,
    ));
    assert!(out.contains("queued 1 slot of job broken"), "{out}");
    let broken = status("broken");
    assert_eq!(broken["dead_letters"], 0, "{broken}");
    let pending: Vec<(&str, &str)> = broken["record"]["pending"]
        .as_array()
        .expect("pending")
        .iter()
        .map(|p| {
            (
                p["slot"].as_str().expect("slot"),
                p["origin"].as_str().expect("origin"),
            )
        })
        .collect();
    assert_eq!(
        pending,
        [(slot.as_str(), "redrive"), (before.as_str(), "backfill")],
        "{broken}"
    );
}

/// Bad input on a server store: one sentence naming the store without its
/// password, and nothing written. `cases`: a store URL holding `secret`,
/// the exit code of `init` and `tick` on it, and a word the message holds.
pub fn errors_name_the_store_and_never_the_password(
    dir: &Path,
    secret: &str,
    cases: &[(String, i32, &str)],
) {
    std::fs::write(
        dir.join("cronslot.toml"),
        "[[job]]\nname = \"c\"\nschedule = \"*/5 * * * *\"\ncommand = [\"true\"]\n",
    )
    .expect("manifest");
    for (url, code, says) in cases {
        for args in [vec!["init"], vec!["tick", "cronslot.toml"]] {
            let o = cronslot(dir, &args, url);
            let (err, out) = (stderr(&o), stdout(&o));
            assert_eq!(o.status.code(), Some(*code), "{args:?} {err}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert!(!err.contains(secret) && !out.contains(secret), "{err}{out}");
            assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
        }
    }
    assert!(!dir.join("cronslot.db").exists());
}

/// A port on 127.0.0.1 that nothing listens on.
pub fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    l.local_addr().expect("addr").port()
}

/// Eight `cronslot runs put` processes enqueue one key at once on `store`
/// (issue 27): exactly one creates the run, the seven others answer it
/// (`"created": false`), every one exits 0 with the same run id; a ninth
/// with another payload is refused (exit 1, `differs`); a tick runs it
/// once. The store must be initialised already.
pub fn eight_processes_enqueueing_one_key_make_one_run(dir: &Path, store: &str) {
    std::fs::write(
        dir.join("cronslot.toml"),
        "[[job]]\nname = \"order-mail\"\ndynamic = true\ncommand = [\"true\"]\n",
    )
    .expect("the manifest");
    let put = |payload: &str| {
        Command::new(env!("CARGO_BIN_EXE_cronslot"))
            .args(["runs", "put", "order-mail", "order-123", "--format", "json"])
            .args(["--payload", payload])
            .env("CRONSLOT_STORE", store)
            .env_remove("CRONSLOT_LOG")
            .env_remove("PGPASSWORD")
            .env_remove("REDISCLI_AUTH")
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run cronslot")
    };
    let children: Vec<_> = (0..8).map(|_| put(r#"{"order": 123}"#)).collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("cronslot's output"))
        .collect();
    let docs: Vec<serde_json::Value> = outputs
        .iter()
        .map(|o| {
            json(&{
                ok(o);
                o.clone()
            })
        })
        .collect();
    let created = docs.iter().filter(|d| d["created"] == true).count();
    assert_eq!(created, 1, "exactly one process creates the run: {docs:?}");
    let run = docs[0]["run"].as_str().expect("a run id").to_string();
    assert!(
        docs.iter().all(|d| d["run"] == run.as_str()),
        "every process answers the same run: {docs:?}"
    );
    let other = put(r#"{"order": 124}"#).wait_with_output().expect("output");
    assert_eq!(other.status.code(), Some(1), "{}", stderr(&other));
    assert!(
        stderr(&other).contains("another payload"),
        "{}",
        stderr(&other)
    );
    let tick = cronslot(dir, &["tick"], store);
    assert!(
        ok(&tick).contains("order-mail: 1 run(s), 1 succeeded"),
        "{}",
        stdout(&tick)
    );
    let got = cronslot(
        dir,
        &["runs", "get", "order-mail", "order-123", "--format", "json"],
        store,
    );
    let doc = json(&{
        ok(&got);
        got
    });
    assert_eq!(
        (doc["status"].as_str(), doc["attempts"].as_u64()),
        (Some("succeeded"), Some(1))
    );
    assert_eq!(doc["run"], run.as_str());
}
