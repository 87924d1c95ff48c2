//! `cronslot schedule put|get|ls|rm` on a SQLite store: the binary run as a
//! user runs it, the store read back with the core's API.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, Schedules};
use cronslot_core::manifest::parse_manifest;
use cronslot_core::schedules::ScheduleKey;
use cronslot_runner::SqliteStore;
use serde_json::Value;

const MANIFEST: &str = r#"
[[job]]
name = "report"
schedule = "0 3 * * *"
command = ["true"]

[[job]]
name = "invoice"
dynamic = true
command = ["true"]
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("schedule_cmds")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    std::fs::write(dir.join("cronslot.toml"), MANIFEST).expect("the manifest");
    dir
}

/// Runs `cronslot ARGS --store sqlite:state.db` in `dir`, with `stdin`.
fn cronslot(dir: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .args(["--store", "sqlite:state.db"])
        .current_dir(dir)
        .env_remove("CRONSLOT_STORE")
        .env_remove("CRONSLOT_MANIFEST")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cronslot");
    if let Some(mut input) = child.stdin.take() {
        // A command refused before it reads its input may exit first: the
        // pipe is then closed, which is not the test's failure.
        if let Err(e) = input.write_all(stdin.as_bytes()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "stdin: {e}");
        }
    }
    child.wait_with_output().expect("cronslot's output")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("not JSON ({e}): {o:?}"))
}

fn init(dir: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(["init", "--store", "sqlite:state.db"])
        .current_dir(dir)
        .output()
        .expect("init");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
}

/// The schedule's version and spec as the store holds them.
fn stored(dir: &Path) -> Option<(u64, Option<String>)> {
    let manifest = parse_manifest(MANIFEST, "cronslot.toml").expect("manifest");
    let store = SqliteStore::open(dir.join("state.db")).expect("open the store");
    let c = CasCoordinator::new(store, 1);
    let key = ScheduleKey::new("tenant-1").expect("key");
    block_on(c.schedule(manifest.template("invoice").expect("template"), &key))
        .expect("read")
        .map(|r| (r.data.version, r.data.spec_json))
}

#[test]
fn put_get_rm_round_trip_on_sqlite() {
    let dir = scratch("round_trip");
    init(&dir);
    let spec = r#"{"cron":"0 9 * * *","timezone":"Europe/Berlin","labels":{"plan":"pro"}}"#;
    std::fs::write(dir.join("spec.json"), spec).expect("spec");

    let o = cronslot(
        &dir,
        &[
            "schedule",
            "put",
            "invoice",
            "tenant-1",
            "--spec",
            "spec.json",
        ],
        "",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("created schedule tenant-1 of job invoice at version 1"),
        "{}",
        stdout(&o)
    );
    let (version, text) = stored(&dir).expect("written");
    assert_eq!(version, 1);
    assert!(text.unwrap_or_default().contains("Europe/Berlin"));

    // The same spec from stdin: nothing written, as JSON the route's document.
    let args = [
        "schedule", "put", "invoice", "tenant-1", "--spec", "-", "--format", "json",
    ];
    let o = cronslot(&dir, &args, spec);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        json(&o),
        serde_json::json!({"job": "invoice", "key": "tenant-1", "version": 1, "changed": false})
    );

    // A full replace under --if-match: the labels are not kept.
    let args = [
        "schedule",
        "put",
        "invoice",
        "tenant-1",
        "--spec",
        "-",
        "--if-match",
        "1",
    ];
    let o = cronslot(&dir, &args, r#"{"cron":"0 10 * * *"}"#);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("now version 2"), "{}", stdout(&o));
    let o = cronslot(&dir, &args, r#"{"cron":"0 11 * * *"}"#);
    assert_eq!(code(&o), 1, "a stale --if-match: {}", stderr(&o));
    assert!(
        stderr(&o).contains("--if-match 1") && stderr(&o).contains("version 2"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
    let o = cronslot(
        &dir,
        &[
            "schedule",
            "put",
            "invoice",
            "tenant-1",
            "--spec",
            "-",
            "--create-only",
        ],
        spec,
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("--create-only") && stderr(&o).contains("version 2"));
    assert_eq!(stored(&dir).map(|s| s.0), Some(2), "refusals wrote nothing");

    let o = cronslot(
        &dir,
        &["schedule", "get", "invoice", "tenant-1", "--format", "json"],
        "",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["version"], 2);
    assert_eq!(
        doc["spec"],
        serde_json::json!({"cron": "0 10 * * *", "timezone": "UTC", "paused": false})
    );
    assert_eq!(doc["next"].as_array().map(Vec::len), Some(10));
    assert_eq!(doc["status"]["record"]["job"], "invoice/tenant-1");
    let o = cronslot(&dir, &["schedule", "get", "invoice", "tenant-1"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("version 2") && text.contains("health: never_succeeded"),
        "{text}"
    );
    assert!(
        text.contains("next slots (UTC):") && text.contains("T10:00:00Z"),
        "{text}"
    );

    let o = cronslot(
        &dir,
        &["schedule", "rm", "invoice", "tenant-1", "--if-match", "1"],
        "",
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let o = cronslot(
        &dir,
        &["schedule", "rm", "invoice", "tenant-1", "--format", "json"],
        "",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        json(&o),
        serde_json::json!({"job": "invoice", "key": "tenant-1", "version": 3})
    );
    assert_eq!(stored(&dir), Some((3, None)), "a tombstone");
    let o = cronslot(&dir, &["schedule", "get", "invoice", "tenant-1"], "");
    assert_eq!(code(&o), 1);
    assert!(
        stderr(&o).contains("was deleted") && stderr(&o).contains("sqlite:state.db"),
        "{}",
        stderr(&o)
    );
    let o = cronslot(&dir, &["schedule", "rm", "invoice", "tenant-1"], "");
    assert_eq!(code(&o), 1, "nothing left to delete: {}", stderr(&o));
}

/// `ls` pages in key order with the cursor it prints, filters by prefix
/// and label, leaves deleted schedules out, and refuses bad flags before
/// the store is opened.
#[test]
fn ls_pages_in_key_order_and_filters() {
    let dir = scratch("ls");
    init(&dir);
    let o = cronslot(&dir, &["schedule", "ls", "invoice", "--limit", "0"], "");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("--limit"), "{}", stderr(&o));
    let o = cronslot(&dir, &["schedule", "ls", "invoice", "--label", "plan"], "");
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("NAME:VALUE"), "{}", stderr(&o));
    let o = cronslot(&dir, &["schedule", "ls", "report"], "");
    assert_eq!(code(&o), 2);

    for (key, plan) in [
        ("t-3", "pro"),
        ("t-1", "free"),
        ("u-9", "pro"),
        ("t-2", "pro"),
    ] {
        let spec = format!(r#"{{"cron":"0 9 * * *","labels":{{"plan":"{plan}"}}}}"#);
        let o = cronslot(
            &dir,
            &["schedule", "put", "invoice", key, "--spec", "-"],
            &spec,
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let o = cronslot(&dir, &["schedule", "rm", "invoice", "t-3"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let keys = |args: &[&str]| -> (Vec<String>, Value) {
        let mut all = vec!["schedule", "ls", "invoice", "--format", "json"];
        all.extend_from_slice(args);
        let o = cronslot(&dir, &all, "");
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let doc = json(&o);
        let keys = doc["schedules"]
            .as_array()
            .expect("schedules")
            .iter()
            .map(|s| s["key"].as_str().expect("a key").to_string())
            .collect();
        (keys, doc["cursor"].clone())
    };
    assert_eq!(
        keys(&[]),
        (vec!["t-1".into(), "t-2".into(), "u-9".into()], Value::Null)
    );
    assert_eq!(
        keys(&["--limit", "2"]),
        (vec!["t-1".into(), "t-2".into()], "t-2".into())
    );
    assert_eq!(
        keys(&["--limit", "2", "--cursor", "t-2"]),
        (vec!["u-9".into()], Value::Null)
    );
    assert_eq!(keys(&["--prefix", "t-"]).0, ["t-1", "t-2"]);
    assert_eq!(keys(&["--label", "plan:pro"]).0, ["t-2", "u-9"]);

    let o = cronslot(&dir, &["schedule", "ls", "invoice", "--limit", "2"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.starts_with("KEY  VERSION  NEXT\nt-1") && text.contains("--cursor t-2"),
        "{text}"
    );
}

/// `pause`, `resume`, `trigger`, `backfill` and `dlq redrive` take
/// `--key`: they act on that schedule's record, with its spec; the key of
/// a static job or of no schedule is refused.
#[test]
fn operations_take_a_schedules_key() {
    let dir = scratch("operations");
    init(&dir);
    let spec = r#"{"cron":"0 * * * *","payload":{"tenant":"acme"}}"#;
    for key in ["t-1", "t-2"] {
        let o = cronslot(
            &dir,
            &["schedule", "put", "invoice", key, "--spec", "-"],
            spec,
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    let run = |args: &[&str]| -> Value {
        let o = cronslot(&dir, args, "");
        assert_eq!(code(&o), 0, "{args:?}: {}", stderr(&o));
        json(&o)
    };
    let paused = |key: &str| -> bool {
        run(&["schedule", "get", "invoice", key, "--format", "json"])["status"]["paused"]
            .as_bool()
            .expect("paused")
    };
    assert_eq!(
        run(&["pause", "invoice", "--key", "t-1", "--format", "json"]),
        serde_json::json!({"job": "invoice", "key": "t-1", "paused": true, "changed": true})
    );
    assert!(paused("t-1"));
    assert!(!paused("t-2"), "only that schedule");
    let o = cronslot(&dir, &["resume", "invoice", "--key", "t-1"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("resumed job invoice/t-1"),
        "{}",
        stdout(&o)
    );
    assert!(!paused("t-1"));

    let doc = run(&["trigger", "invoice", "--key", "t-2", "--format", "json"]);
    assert_eq!(doc["outcome"], "succeeded", "{doc}");
    assert!(
        doc["slot_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("invoice/t-2@")),
        "{doc}"
    );
    let after = run(&["schedule", "get", "invoice", "t-2", "--format", "json"]);
    assert_eq!(after["status"]["succeeded"], 1, "{after}");

    let doc = run(&[
        "backfill",
        "invoice",
        "--key",
        "t-1",
        "--from",
        "2026-01-01T00:00:00Z",
        "--to",
        "2026-01-01T02:00:00Z",
        "--dry-run",
        "--format",
        "json",
    ]);
    assert_eq!(doc["key"], "t-1", "{doc}");
    let doc = run(&[
        "dlq", "redrive", "invoice", "--key", "t-1", "--format", "json",
    ]);
    assert_eq!(
        doc,
        serde_json::json!({"job": "invoice", "key": "t-1", "redriven": []})
    );

    let o = cronslot(&dir, &["pause", "report", "--key", "t-1"], "");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("is not dynamic"), "{}", stderr(&o));
    let o = cronslot(&dir, &["pause", "invoice", "--key", "t/1"], "");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = cronslot(&dir, &["pause", "invoice", "--key", "nobody"], "");
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no schedule \"nobody\""),
        "{}",
        stderr(&o)
    );
}

/// `put` takes the spec field by field as well as JSON: the same spec
/// either way (a second put of the same flags writes nothing), and each
/// problem named by its flag.
#[test]
fn put_takes_the_spec_as_flags() {
    let dir = scratch("flags");
    init(&dir);
    let flags = [
        "schedule",
        "put",
        "invoice",
        "t-1",
        "--cron",
        "0 9 1 * *",
        "--timezone",
        "Europe/Berlin",
        "--payload",
        r#"{"tenant": "acme"}"#,
        "--label",
        "plan=pro",
        "--label",
        "region=eu:west",
        "--format",
        "json",
    ];
    let o = cronslot(&dir, &flags, "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json(&o)["version"], 1);
    let o = cronslot(&dir, &flags, "");
    assert_eq!(json(&o)["changed"], false, "the same flags write nothing");
    let o = cronslot(
        &dir,
        &["schedule", "get", "invoice", "t-1", "--format", "json"],
        "",
    );
    assert_eq!(
        json(&o)["spec"],
        serde_json::json!({
            "cron": "0 9 1 * *",
            "timezone": "Europe/Berlin",
            "payload": {"tenant": "acme"},
            "labels": {"plan": "pro", "region": "eu:west"},
            "paused": false
        })
    );
    let o = cronslot(
        &dir,
        &[
            "schedule",
            "put",
            "invoice",
            "once",
            "--at",
            "2027-01-05T09:00:00Z",
            "--paused",
        ],
        "",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    let refused = |extra: &[&str], says: &str| {
        let mut args = vec!["schedule", "put", "invoice", "t-2"];
        args.extend_from_slice(extra);
        let o = cronslot(&dir, &args, "");
        assert_eq!(code(&o), 2, "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{extra:?}: {}", stderr(&o));
    };
    refused(
        &["--cron", "0 9 * * *", "--timezone", "Mars/Olympus"],
        "--timezone: ",
    );
    refused(&["--cron", "0 9 * *"], "--cron: ");
    refused(&["--cron", "0 9 * * *", "--label", "plan"], "NAME=VALUE");
    refused(
        &["--cron", "0 9 * * *", "--label", "a=1", "--label", "a=2"],
        "twice",
    );
    refused(
        &["--cron", "0 9 * * *", "--payload", "{nope"],
        "--payload: not JSON",
    );
    refused(&["--timezone", "UTC"], "give the spec");
    refused(
        &["--cron", "0 9 * * *", "--at", "2027-01-05T09:00:00Z"],
        "cannot be used with",
    );
    refused(
        &["--spec", "-", "--cron", "0 9 * * *"],
        "cannot be used with",
    );
}

#[test]
fn bad_input_is_refused_before_the_store() {
    let dir = scratch("bad_input");
    // No store yet: every refusal below comes before it is opened.
    let put = |job: &str, key: &str, spec: &str| {
        cronslot(&dir, &["schedule", "put", job, key, "--spec", "-"], spec)
    };
    let ok = r#"{"cron":"0 9 * * *"}"#;
    let o = put("report", "tenant-1", ok);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("job \"report\" is not dynamic") && stderr(&o).contains("invoice"),
        "{}",
        stderr(&o)
    );
    let o = put("nope", "tenant-1", ok);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("no job \"nope\""), "{}", stderr(&o));
    let o = put("invoice", "tenant/1", ok);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("letters, digits and - _ . :"),
        "{}",
        stderr(&o)
    );
    let o = put(
        "invoice",
        "tenant-1",
        r#"{"cron":"0 9 * *","timezone":"Mars/Olympus"}"#,
    );
    assert_eq!(code(&o), 2);
    let err = stderr(&o);
    assert!(
        err.contains("--spec stdin")
            && err.contains("\n  timezone: ")
            && err.contains("\n  cron: "),
        "{err}"
    );
    let o = cronslot(
        &dir,
        &[
            "schedule",
            "put",
            "invoice",
            "tenant-1",
            "--spec",
            "missing.json",
        ],
        "",
    );
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("missing.json"), "{}", stderr(&o));
    let o = cronslot(
        &dir,
        &[
            "schedule",
            "put",
            "invoice",
            "tenant-1",
            "--spec",
            "-",
            "--if-match",
            "1",
            "--create-only",
        ],
        ok,
    );
    assert_eq!(code(&o), 2, "clap refuses the pair: {}", stderr(&o));
    // A well-formed put on a store that does not exist: said so, nothing created.
    let o = put("invoice", "tenant-1", ok);
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("does not exist yet"), "{}", stderr(&o));
    assert!(!dir.join("state.db").exists());
}

/// Eight processes enqueue one key at once on one SQLite file: one run.
#[test]
fn eight_processes_enqueueing_one_key_make_one_run_on_sqlite() {
    let dir = scratch("runs");
    init(&dir);
    crate::server_cmds::eight_processes_enqueueing_one_key_make_one_run(&dir, "sqlite:state.db");
}

/// A keyed run whose command fails for good is a dead letter: `cronslot
/// dlq list` shows it as `job/key` (JSON: its key and run id), `--job`
/// names the dynamic job, and `dlq redrive JOB --key KEY` sends it back.
#[test]
fn a_dead_keyed_run_is_in_the_dead_letter_list_and_redriven_by_key() {
    let dir = scratch("dead-run");
    std::fs::write(
        dir.join("cronslot.toml"),
        "[[job]]\nname = \"report\"\nschedule = \"0 3 * * *\"\ncommand = [\"true\"]\n\n\
         [[job]]\nname = \"mail\"\ndynamic = true\ncommand = [\"false\"]\n\
         retry = { max_attempts = 1 }\n",
    )
    .unwrap();
    init(&dir);
    let o = cronslot(&dir, &["runs", "put", "mail", "order-7"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let o = cronslot(&dir, &["tick"], "");
    assert_eq!(code(&o), 1, "a run failed: {}{}", stdout(&o), stderr(&o));

    let o = cronslot(&dir, &["dlq", "list"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("mail/order-7"), "{text}");
    assert!(text.contains("1 dead letter;"), "{text}");
    let o = cronslot(
        &dir,
        &["dlq", "list", "--job", "mail", "--format", "json"],
        "",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    let letters = doc["dead_letters"].as_array().expect("dead_letters");
    assert_eq!(letters.len(), 1, "{doc}");
    assert_eq!(letters[0]["job"], "mail");
    assert_eq!(letters[0]["key"], "order-7");
    let slot_id = letters[0]["slot_id"].as_str().unwrap();
    assert!(slot_id.starts_with("mail/order-7@"), "{slot_id}");
    let o = cronslot(
        &dir,
        &["dlq", "list", "--job", "report", "--format", "json"],
        "",
    );
    assert_eq!(json(&o)["dead_letters"], serde_json::json!([]));

    let o = cronslot(&dir, &["dlq", "redrive", "mail", "--key", "order-7"], "");
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let o = cronslot(
        &dir,
        &["runs", "get", "mail", "order-7", "--format", "json"],
        "",
    );
    // Waiting again, with the attempt it already made counted.
    assert_eq!(json(&o)["status"], "retrying", "{}", stdout(&o));
    let o = cronslot(&dir, &["dlq", "list", "--format", "json"], "");
    assert_eq!(json(&o)["dead_letters"], serde_json::json!([]));
}

/// `put --from`: NDJSON, 2,500 lines written 1,000 at a time, each with
/// its own answer; a file with a bad line writes nothing and names the
/// line; a refused entry (its condition) exits 1 and is named by its line.
#[test]
fn put_from_a_file_writes_many_and_names_each_line_that_fails() {
    let dir = scratch("put-from");
    init(&dir);
    let mut lines: Vec<String> = (0..2500)
        .map(|i| format!(r#"{{"key": "t-{i:04}", "spec": {{"cron": "0 9 * * *"}}}}"#))
        .collect();
    lines.insert(10, String::new());
    std::fs::write(dir.join("many.ndjson"), lines.join("\n")).expect("the file");
    let o = cronslot(
        &dir,
        &["schedule", "put", "invoice", "--from", "many.ndjson"],
        "",
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("2500 created, 0 changed, 0 unchanged, 0 not written"),
        "{}",
        stdout(&o)
    );
    let o = cronslot(
        &dir,
        &[
            "schedule", "ls", "invoice", "--prefix", "t-24", "--format", "json",
        ],
        "",
    );
    assert_eq!(json(&o)["schedules"].as_array().map(Vec::len), Some(100));

    // The same again from stdin: nothing written; one line changed.
    lines[0] = r#"{"key": "t-0000", "spec": {"cron": "0 10 * * *"}, "if_match": 1}"#.to_string();
    let o = cronslot(
        &dir,
        &[
            "schedule", "put", "invoice", "--from", "-", "--format", "json",
        ],
        &lines.join("\n"),
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(
        (doc["changed"].as_u64(), doc["unchanged"].as_u64()),
        (Some(1), Some(2499))
    );

    // A bad line: nothing is written, and the line is named.
    let bad = [
        r#"{"key": "new-1", "spec": {"cron": "0 9 * * *"}}"#,
        r#"{"key": "new-2", "spec": {"cron": "0 9 * * *", "timezon": "UTC"}}"#,
        r#"{"key": "new/3", "spec": {"cron": "0 9 * * *"}}"#,
    ];
    let o = cronslot(
        &dir,
        &["schedule", "put", "invoice", "--from", "-"],
        &bad.join("\n"),
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("line 2:"), "{}", stderr(&o));
    assert!(stderr(&o).contains("line 3:"), "{}", stderr(&o));
    let o = cronslot(&dir, &["schedule", "get", "invoice", "new-1"], "");
    assert_eq!(code(&o), 1, "nothing was written: {}", stdout(&o));

    // A condition refused: the others are written, the line is named.
    let mixed = [
        r#"{"key": "new-1", "spec": {"cron": "0 9 * * *"}}"#,
        r#"{"key": "t-0001", "spec": {"cron": "0 9 * * *"}, "create_only": true}"#,
    ];
    let o = cronslot(
        &dir,
        &["schedule", "put", "invoice", "--from", "-"],
        &mixed.join("\n"),
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("line 2: "), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("1 of 2 schedules were not written"),
        "{}",
        stderr(&o)
    );
    let o = cronslot(&dir, &["schedule", "get", "invoice", "new-1"], "");
    assert_eq!(code(&o), 0, "{}", stderr(&o));

    // --from stands for the key and the spec.
    let o = cronslot(
        &dir,
        &["schedule", "put", "invoice", "k", "--from", "many.ndjson"],
        "",
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let o = cronslot(&dir, &["schedule", "put", "invoice"], "");
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}
