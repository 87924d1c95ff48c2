//! `cronslot serve`: the Worker's admin routes and a tick URL over HTTP on
//! the embedded store, driven over real sockets against the built binary.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cronslot_tests::http::{Answer, free_port, request};
use serde_json::Value;

use crate::tick::{due_store, with_room_in_the_minute};

pub(crate) const ADMIN_TOKEN: &str = "admin-token-7f3a9c";
pub(crate) const TICK_SECRET: &str = "tick-secret-51be02";

/// Two jobs due every minute: one succeeds, one fails once and is dead.
const JOBS: &str = r#"
[[job]]
name = "report"
schedule = "* * * * *"
timeout = "20s"
command = ["sh", "-c", "echo \"$CRONSLOT_SLOT\" >> ran.log"]

[[job]]
name = "export"
schedule = "* * * * *"
timeout = "20s"
retry = { max_attempts = 1 }
command = ["sh", "-c", "echo broken >&2; exit 3"]
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("serve")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// Starts `cronslot serve` with `extra` arguments and `env`, and waits
/// until it answers on its port.
pub(crate) fn serve(dir: &Path, store: &str, extra: &[&str], env: &[(&str, &str)]) -> (Child, u16) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args([
            "serve",
            "cronslot.toml",
            "--store",
            store,
            "--listen",
            &listen,
        ])
        .args(extra)
        .current_dir(dir)
        .env_remove("CRONSLOT_ADMIN_TOKEN")
        .env_remove("CRONSLOT_TICK_SECRET")
        .env_remove("CRONSLOT_STORE")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start cronslot serve");
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if request(port, "GET", "/cronslot/health", None).is_some() {
            return (child, port);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("serve ends");
    panic!(
        "cronslot serve did not answer on {listen}: {}",
        text(&out.stderr)
    );
}

/// SIGTERM, then the output of a process that must exit 0.
pub(crate) fn stop(child: Child) -> Output {
    let pid = child.id().to_string();
    let kill = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(kill.success());
    let out = child.wait_with_output().expect("serve ends");
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(crate) fn json(a: &Answer) -> Value {
    serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("not JSON ({e}): {a:?}"))
}

pub(crate) fn call(port: u16, method: &str, path: &str, token: Option<&str>) -> Answer {
    let a = request(port, method, path, token)
        .unwrap_or_else(|| panic!("no answer to {method} {path}"));
    for secret in [ADMIN_TOKEN, TICK_SECRET] {
        assert!(
            !a.body.contains(secret) && !a.headers.iter().any(|h| h.contains(secret)),
            "{method} {path} shows a secret: {a:?}"
        );
    }
    a
}

pub(crate) fn job<'a>(status: &'a Value, name: &str) -> &'a Value {
    status["jobs"]
        .as_array()
        .and_then(|jobs| jobs.iter().find(|j| j["job"] == name))
        .unwrap_or_else(|| panic!("no job {name} in {status}"))
}

#[test]
fn serve_answers_the_admin_routes_and_ticks_over_http() {
    let dir = scratch("routes");
    let store = due_store(&dir, JOBS);
    with_room_in_the_minute(Duration::from_secs(40));
    let (child, port) = serve(
        &dir,
        &store,
        &[],
        &[
            ("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN),
            ("CRONSLOT_TICK_SECRET", TICK_SECRET),
        ],
    );

    // Every data route refuses a caller without the token, or with
    // another; health stays open.
    for path in ["/cronslot/status", "/cronslot/metrics", "/cronslot/dlq"] {
        assert_eq!(call(port, "GET", path, None).status, 401, "{path}");
        assert_eq!(call(port, "GET", path, Some("wrong")).status, 401, "{path}");
    }
    assert_eq!(
        call(port, "POST", "/cronslot/jobs/report/pause", None).status,
        401
    );
    assert_eq!(call(port, "GET", "/cronslot/health", None).status, 200);
    // The tick takes its own secret, not the admin token.
    assert_eq!(call(port, "POST", "/cronslot/tick", None).status, 401);
    assert_eq!(
        call(port, "POST", "/cronslot/tick", Some(ADMIN_TOKEN)).status,
        401
    );
    let put = call(port, "PUT", "/cronslot/tick", Some(TICK_SECRET));
    assert_eq!(put.status, 405);
    assert_eq!(put.header("allow"), Some("GET, POST"));
    assert_eq!(
        call(port, "GET", "/elsewhere", Some(ADMIN_TOKEN)).status,
        404
    );
    // The dashboard needs no token (its data does), under a strict policy.
    let root = call(port, "GET", "/", None);
    assert_eq!(root.status, 308);
    assert_eq!(root.header("location"), Some("/cronslot/"));
    let page = call(port, "GET", "/cronslot/", None);
    assert_eq!(page.status, 200, "{page:?}");
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        page.header("content-security-policy")
            .is_some_and(|p| p.contains("script-src 'self'")),
        "{page:?}"
    );
    assert!(page.body.contains("/cronslot/dashboard.js"), "{page:?}");
    let script = call(port, "GET", "/cronslot/dashboard.js", None);
    assert_eq!(script.status, 200);
    assert!(script.body.contains("sessionStorage"));
    assert_eq!(
        call(port, "GET", "/cronslot/jobs/report/next", None).status,
        401
    );
    let next = call(
        port,
        "GET",
        "/cronslot/jobs/report/next?count=2",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(
        json(&next)["slots"].as_array().map(Vec::len),
        Some(2),
        "{next:?}"
    );

    // A tick runs both due slots: one succeeds, one is dead at once.
    let tick = call(port, "POST", "/cronslot/tick", Some(TICK_SECRET));
    assert_eq!(tick.status, 500, "{tick:?}");
    let doc = json(&tick);
    assert_eq!(doc["runs"], 2, "{doc}");
    assert_eq!(doc["succeeded"], 1, "{doc}");
    assert_eq!(doc["failed_jobs"], serde_json::json!(["export"]), "{doc}");
    // A second tick in the same minute (GET, as some schedulers send)
    // runs nothing again.
    let again = call(port, "GET", "/cronslot/tick", Some(TICK_SECRET));
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(json(&again)["runs"], 0, "{again:?}");
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("report ran");
    assert_eq!(ran.lines().count(), 1, "{ran}");

    // Status and the dead letter, as the Worker shows them.
    let status = call(port, "GET", "/cronslot/status", Some(ADMIN_TOKEN));
    assert_eq!(status.status, 200);
    assert_eq!(status.header("content-type"), Some("application/json"));
    let status = json(&status);
    assert_eq!(job(&status, "report")["succeeded"], 1, "{status}");
    assert_eq!(job(&status, "export")["dead_letters"], 1, "{status}");
    let dlq = json(&call(port, "GET", "/cronslot/dlq", Some(ADMIN_TOKEN)));
    let letters = dlq["dead_letters"].as_array().expect("a list");
    assert_eq!(letters.len(), 1, "{dlq}");
    assert_eq!(letters[0]["job"], "export");
    let metrics = call(port, "GET", "/cronslot/metrics", Some(ADMIN_TOKEN));
    assert_eq!(metrics.status, 200);
    assert!(
        metrics
            .body
            .contains("cronslot_dead_letters{job=\"export\"} 1"),
        "{}",
        metrics.body
    );

    // Redrive it: the dead letter is gone from the store.
    let redrive = call(
        port,
        "POST",
        "/cronslot/jobs/export/redrive",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(redrive.status, 200, "{redrive:?}");
    assert_eq!(json(&redrive)["redriven"].as_array().map(Vec::len), Some(1));
    let dlq = json(&call(port, "GET", "/cronslot/dlq", Some(ADMIN_TOKEN)));
    assert_eq!(dlq["dead_letters"], serde_json::json!([]), "{dlq}");

    // Pause and resume, seen in status.
    let pause = call(
        port,
        "POST",
        "/cronslot/jobs/report/pause",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(json(&pause)["changed"], true, "{pause:?}");
    let status = json(&call(port, "GET", "/cronslot/status", Some(ADMIN_TOKEN)));
    assert_eq!(job(&status, "report")["paused"], true, "{status}");
    let resume = call(
        port,
        "POST",
        "/cronslot/jobs/report/resume",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(json(&resume)["paused"], false, "{resume:?}");

    // Bad input is an error that says what, never a crash.
    let unknown = call(port, "POST", "/cronslot/jobs/nope/pause", Some(ADMIN_TOKEN));
    assert_eq!(unknown.status, 404, "{unknown:?}");
    let bad = call(
        port,
        "POST",
        "/cronslot/jobs/report/backfill?from=yesterday&to=2026-01-01T00:00:00Z",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(bad.status, 400, "{bad:?}");
    assert!(bad.body.contains("from"), "{bad:?}");
    assert_eq!(
        call(port, "GET", "/cronslot/status", Some(ADMIN_TOKEN)).status,
        200
    );

    let out = stop(child);
    let log = text(&out.stderr);
    assert!(
        !log.contains(ADMIN_TOKEN) && !log.contains(TICK_SECRET),
        "{log}"
    );
}

#[test]
fn serve_fails_closed_without_its_secrets() {
    let dir = scratch("closed");
    let store = due_store(&dir, JOBS);
    let (child, port) = serve(&dir, &store, &[], &[]);
    assert_eq!(call(port, "GET", "/cronslot/health", None).status, 200);
    for (method, path) in [
        ("GET", "/cronslot/status"),
        ("GET", "/cronslot/dlq"),
        ("POST", "/cronslot/jobs/report/trigger"),
        ("POST", "/cronslot/tick"),
    ] {
        let a = call(port, method, path, Some("anything"));
        assert_eq!(a.status, 503, "{method} {path}: {a:?}");
    }
    let out = stop(child);
    assert!(!dir.join("ran.log").exists(), "nothing ran");
    let log = text(&out.stderr);
    assert!(log.contains("CRONSLOT_ADMIN_TOKEN is not set"), "{log}");
    assert!(log.contains("CRONSLOT_TICK_SECRET is not set"), "{log}");
}

#[test]
fn serve_run_also_runs_the_jobs_and_triggers_one_now() {
    let dir = scratch("run");
    let store = due_store(&dir, JOBS);
    with_room_in_the_minute(Duration::from_secs(40));
    let (child, port) = serve(
        &dir,
        &store,
        &["--run"],
        &[("CRONSLOT_ADMIN_TOKEN", ADMIN_TOKEN)],
    );
    // The runner claims the due slot by itself.
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline && !dir.join("ran.log").exists() {
        std::thread::sleep(Duration::from_millis(100));
    }
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("the runner ran report");
    assert_eq!(ran.lines().count(), 1, "{ran}");
    // A manual trigger of the same slot is refused: it ran already.
    let trigger = call(
        port,
        "POST",
        "/cronslot/jobs/report/trigger",
        Some(ADMIN_TOKEN),
    );
    assert_eq!(trigger.status, 409, "{trigger:?}");
    let out = stop(child);
    assert!(text(&out.stdout).contains("report"), "the run's summary");
    let ran = std::fs::read_to_string(dir.join("ran.log")).expect("ran");
    assert_eq!(ran.lines().count(), 1, "each slot once: {ran}");
}

#[test]
fn a_bad_listen_address_is_bad_input() {
    let dir = scratch("bad-listen");
    std::fs::write(dir.join("cronslot.toml"), JOBS).expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(["serve", "cronslot.toml", "--listen", "localhost"])
        .current_dir(&dir)
        .env_remove("CRONSLOT_STORE")
        .output()
        .expect("run cronslot");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--listen \"localhost\": expected IP:PORT"),
        "{}",
        text(&o.stderr)
    );
    assert!(!dir.join("cronslot.db").exists());
}
