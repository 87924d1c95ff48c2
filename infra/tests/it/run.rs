//! `cronslot run`: the README's demo end to end (three competing workers,
//! an accelerated clock, the example manifest), and bad arguments refused
//! before anything starts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use jiff::{SignedDuration, Timestamp};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("infra/ has a parent")
        .to_path_buf()
}

/// A fresh directory holding a copy of the example manifest.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("run")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    std::fs::copy(
        workspace_root().join("examples/cronslot.toml"),
        dir.join("cronslot.toml"),
    )
    .expect("copy the example manifest");
    dir
}

fn cronslot_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(args)
        .current_dir(dir)
        .env_remove("CRONSLOT_LOG")
        .output()
        .expect("run cronslot")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The summary row of `job`: slots, runs, succeeded, retries, dead.
fn row(summary: &str, job: &str) -> [u64; 5] {
    let line = summary
        .lines()
        .find(|l| l.split_whitespace().next() == Some(job))
        .unwrap_or_else(|| panic!("no row for {job} in\n{summary}"));
    let numbers: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(5)
        .map(|n| n.parse().expect("a count"))
        .collect();
    numbers.try_into().expect("five counts")
}

/// The README's command, for 12 minutes of clock time at speed 120 (six
/// real seconds). Twelve minutes, not fewer: every window that long holds
/// a `*/10` slot of broken-export, whatever minute the test starts at.
/// Speed 120, not more: the manifest's 30 s command timeout is then a
/// quarter of a real second, ample for `sh` even on a loaded machine.
#[test]
fn the_readme_demo_runs_each_slot_once_with_retries_and_dead_letters() {
    let dir = scratch("readme");
    let o = cronslot_in(
        &dir,
        &[
            "run",
            "cronslot.toml",
            "--store",
            "sqlite:demo-out/cronslot.db",
            "--until",
            "+12m",
            "--speed",
            "120",
            "--workers",
            "3",
        ],
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    assert!(out.contains("slots run more than once: 0"), "{out}");
    assert!(
        dir.join("demo-out/cronslot.db").exists(),
        "the store's directory was created"
    );
    assert!(
        err.contains("run finished"),
        "one log line per run on stderr: {err}"
    );

    // One heartbeat line per minute: no duplicates, no gaps.
    let beats = lines(&dir.join("demo-out/heartbeat.log"));
    let unique: BTreeSet<&String> = beats.iter().collect();
    assert_eq!(
        unique.len(),
        beats.len(),
        "a heartbeat slot ran twice: {beats:?}"
    );
    let instants: Vec<Timestamp> = beats
        .iter()
        .map(|l| {
            l.trim_start_matches("heartbeat@")
                .parse()
                .expect("a slot id")
        })
        .collect();
    assert!(instants.len() >= 11, "{beats:?}");
    for pair in instants.windows(2) {
        assert_eq!(
            pair[1].duration_since(pair[0]),
            SignedDuration::from_mins(1),
            "{beats:?}"
        );
    }
    let [slots, runs, succeeded, _, _] = row(&out, "heartbeat");
    assert_eq!(
        (slots, runs, succeeded),
        (beats.len() as u64, slots, slots),
        "{out}"
    );

    // flaky-sync fails its first attempt and succeeds on the second, on the
    // same slot.
    let flaky = lines(&dir.join("demo-out/flaky-sync.log"));
    let ok: Vec<&String> = flaky.iter().filter(|l| l.ends_with(": ok")).collect();
    assert!(ok.len() >= 5, "{flaky:?}");
    for line in &ok {
        assert!(line.contains(" attempt 2: ok"), "{line}");
        let slot = line.split(' ').next().unwrap_or_default();
        assert!(
            flaky.contains(&format!("{slot} attempt 1: upstream busy")),
            "{flaky:?}"
        );
    }
    let [_, _, succeeded, retries, dead] = row(&out, "flaky-sync");
    assert_eq!(
        (succeeded, retries, dead),
        (ok.len() as u64, ok.len() as u64, 0),
        "{out}"
    );

    // broken-export always fails: dead letters, listed in the summary.
    let [_, _, _, _, dead] = row(&out, "broken-export");
    assert!(dead >= 1, "{out}");
    assert!(out.contains("export target unreachable"), "{out}");

    let refused: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("duplicates refused: "))
        .and_then(|rest| rest.split(' ').next()?.parse().ok())
        .expect("a duplicates line");
    assert!(refused > 0, "three workers competed: {out}");
}

#[test]
fn json_logs_are_one_object_per_line() {
    let dir = scratch("json");
    let o = cronslot_in(
        &dir,
        &[
            "run",
            "cronslot.toml",
            "--store",
            "sqlite:state/c.db",
            "--until",
            "+3m",
            "--speed",
            "300",
            "--log-format",
            "json",
            "--format",
            "json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut runs = 0;
    for line in stderr(&o).lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if v["message"] == "run finished" {
            runs += 1;
            for field in [
                "job",
                "slot",
                "attempt",
                "fence",
                "owner",
                "lag_ms",
                "duration_ms",
                "outcome",
            ] {
                assert!(!v[field].is_null(), "{field} missing in {line}");
            }
        }
    }
    assert!(runs >= 2, "{}", stderr(&o));
    // The summary, with --format json: one document that counts the same
    // runs the log lines show.
    let summary: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    assert_eq!(summary["speed"], 300.0, "{summary}");
    let jobs = summary["jobs"].as_array().expect("jobs");
    assert!(jobs.len() >= 5, "every job of the manifest: {summary}");
    let counted: u64 = jobs.iter().map(|j| j["runs"].as_u64().expect("runs")).sum();
    assert_eq!(counted, runs, "{summary}");
    assert_eq!(
        summary["slots_run_twice"],
        serde_json::json!([]),
        "{summary}"
    );
    assert_eq!(
        jobs[0]["missed"]["downtime"], 0,
        "every reason present: {summary}"
    );
}

#[test]
fn bad_until_exits_2_before_anything_starts() {
    let dir = scratch("bad_until");
    for bad in ["+5x", "tomorrow", "+0s", "45m", "2000-01-01T00:00:00Z"] {
        let o = cronslot_in(
            &dir,
            &[
                "run",
                "cronslot.toml",
                "--store",
                "sqlite:out/c.db",
                "--until",
                bad,
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("--until"), "{bad}: {}", stderr(&o));
    }
    assert!(!dir.join("out").exists(), "nothing was created");
}

#[test]
fn bad_speed_exits_2() {
    let dir = scratch("bad_speed");
    for bad in [
        "--speed=0",
        "--speed=-1",
        "--speed=100001",
        "--speed=nan",
        "--speed=fast",
    ] {
        let o = cronslot_in(
            &dir,
            &[
                "run",
                "cronslot.toml",
                "--store",
                "sqlite:out/c.db",
                "--until",
                "+1m",
                bad,
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", stderr(&o));
        assert!(stderr(&o).contains("speed"), "{bad}: {}", stderr(&o));
    }
}

#[test]
fn function_jobs_are_refused_by_name() {
    let dir = scratch("function_jobs");
    std::fs::write(
        dir.join("fn.toml"),
        "[[job]]\nname = \"rust-only\"\nschedule = \"* * * * *\"\n\n[[job]]\nname = \"fine\"\nschedule = \"* * * * *\"\ncommand = [\"true\"]\n",
    )
    .expect("write manifest");
    let o = cronslot_in(
        &dir,
        &["run", "fn.toml", "--store", "sqlite:c.db", "--until", "+1m"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("rust-only"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("fine"), "{}", stderr(&o));
}

#[test]
fn bad_store_and_missing_manifest_exit_2() {
    let dir = scratch("bad_store");
    let o = cronslot_in(
        &dir,
        &[
            "run",
            "cronslot.toml",
            "--store",
            "postgres://x",
            "--until",
            "+1m",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--store"), "{}", stderr(&o));
    let o = cronslot_in(&dir, &["run", "missing.toml", "--until", "+1m"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("missing.toml"), "{}", stderr(&o));
}
