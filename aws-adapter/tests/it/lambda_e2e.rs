//! End to end: the `aws-jobs` example served by `cargo lambda watch`,
//! invoked with `cargo lambda invoke --data-file` (fixtures from
//! tests/fixtures/, with the slot set to the current minute), its state in
//! DynamoDB on moto, its webhooks hitting a server in this test.
//!
//! Never skipped: without cargo-lambda or moto the test fails and says to
//! run scripts/setup. The table is per test run (moto is shared by the
//! test binary).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use cronslot_aws::dynamo::DynamoStore;
use cronslot_core::coord::{JobState, StateStore, TickIndex, format_instant};
use cronslot_core::manifest::parse_manifest;
use jiff::Timestamp;
use serde_json::Value;

/// A table of this run's own (the moto server is the test binary's).
fn table() -> String {
    format!("cronslot-e2e-{}", std::process::id())
}

/// Runs `program` under `sh`, in a process group of its own; when this
/// guard is dropped (or this test process dies, closing the pipe) the
/// whole group is stopped: `cargo lambda watch` and the function it
/// spawned.
struct Guarded {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    log: PathBuf,
}

const GUARD: &str = r#""$@" </dev/null & child=$!
stop() { trap '' TERM; kill -TERM 0 2>/dev/null; }
trap stop EXIT INT HUP
while read -r _line; do :; done
stop"#;

impl Guarded {
    fn start(name: &str, program: &Path, args: &[String], cwd: &Path) -> Guarded {
        let log = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("e2e-{name}-{}.log", std::process::id()));
        let file = std::fs::File::create(&log).expect("log file");
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(GUARD)
            .arg(name)
            .arg(program)
            .args(args)
            .current_dir(cwd)
            .env("PATH", search_path())
            .stdin(Stdio::piped())
            .stdout(file.try_clone().expect("log"))
            .stderr(file)
            .process_group(0);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", program.display()));
        let stdin = child.stdin.take();
        Guarded {
            name: name.to_string(),
            child,
            stdin,
            log,
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let start = text.len().saturating_sub(6000);
        let start = (start..text.len())
            .find(|i| text.is_char_boundary(*i))
            .unwrap_or(0);
        format!(
            "--- {} log ({}) ---\n{}",
            self.name,
            self.log.display(),
            &text[start..]
        )
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `port` accepts connections (a TCP probe: an HTTP request
    /// to the watch port would count as an invocation).
    fn wait_for_port(&mut self, port: u16, limit: Duration) {
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "{} exited with {status} before listening\n{}",
                    self.name,
                    self.log_tail()
                );
            }
            assert!(
                started.elapsed() < limit,
                "{} did not open port {port} in {limit:?}\n{}",
                self.name,
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The virtualenv `scripts/setup` creates.
fn venv_bin() -> Option<PathBuf> {
    let venv = std::env::var_os("CRONSLOT_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("XDG_CACHE_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))
                .map(|c| c.join("cronslot/venv"))
        })?;
    Some(venv.join("bin"))
}

/// `PATH` with the virtualenv first (cargo-lambda runs zig and Python from
/// there).
fn search_path() -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = venv_bin().into_iter().collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).expect("PATH")
}

/// A tool on `PATH` (virtualenv first). Panics with the fix when it is
/// missing.
fn tool(name: &str) -> PathBuf {
    for dir in std::env::split_paths(&search_path()) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!("{name} not found on PATH or in the cronslot virtualenv: run scripts/setup");
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// The webhooks the example's http jobs call: `/ping` always answers 200,
/// `/flaky` answers 503 to its first request and 200 after.
#[derive(Clone, Default)]
struct Hooks {
    requests: Arc<Mutex<Vec<Request>>>,
}

/// A request's path and headers (names lowercased).
type Request = (String, BTreeMap<String, String>);

impl Hooks {
    fn start() -> (Hooks, String) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let hooks = Hooks::default();
        let kept = hooks.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                kept.answer(stream);
            }
        });
        (hooks, base)
    }

    fn answer(&self, mut stream: TcpStream) {
        let mut reader = BufReader::new(stream.try_clone().expect("stream"));
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut headers = BTreeMap::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let seen_before = {
            let mut requests = self.requests.lock().expect("lock");
            let n = requests.iter().filter(|(p, _)| *p == path).count();
            requests.push((path.clone(), headers));
            n
        };
        let status = if path == "/flaky" && seen_before == 0 {
            503
        } else {
            200
        };
        let body = format!("{path} {status}");
        let _ = write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    }

    fn count(&self, path: &str) -> usize {
        self.requests
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p == path)
            .count()
    }

    fn headers(&self, path: &str) -> Vec<BTreeMap<String, String>> {
        self.requests
            .lock()
            .expect("lock")
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, h)| h.clone())
            .collect()
    }
}

/// The manifest the function reads instead of its embedded one
/// (`CRONSLOT_MANIFEST`): the same function job, webhooks pointing here,
/// every minute, with a lease covering the emulator's 10-minute timeout.
/// The example is built without a TOML parser, so the file it reads is
/// precompiled, as its build script precompiles its own manifest.
fn manifest(base: &str) -> String {
    let text = manifest_toml(base);
    match parse_manifest(&text, "cronslot.toml") {
        Ok(m) => m.to_precompiled("cronslot.toml"),
        Err(e) => panic!("the test's manifest is invalid:\n{e}"),
    }
}

fn manifest_toml(base: &str) -> String {
    format!(
        r#"
[defaults]
lease = "11m"
starting_deadline = "1h"
# Retries may outlive the next slot: the test must not depend on which
# second of the minute it runs in.
retry = {{ max_attempts = 3, backoff = "1s", max_backoff = "1s", past_next_slot = true }}

[[job]]
name = "nightly-report"
schedule = "0 2 * * *"
timezone = "Europe/Berlin"
trigger = "dedicated"

[[job]]
name = "ping-webhook"
schedule = "* * * * *"
trigger = "dedicated"
timeout = "5s"
http = {{ url = "{base}/ping", method = "POST" }}

[[job]]
name = "flaky-hook"
schedule = "* * * * *"
trigger = "dedicated"
timeout = "5s"
http = {{ url = "{base}/flaky", method = "POST" }}

[[job]]
name = "tick-hook"
schedule = "* * * * *"
timeout = "5s"
http = {{ url = "{base}/tick", method = "POST" }}
"#
    )
}

fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The current minute: a slot of every `* * * * *` job, due now.
/// The current minute, once at least 30 seconds of it remain (waiting for
/// the next one otherwise), so the first deliveries of each job below land
/// inside it.
fn current_minute_with_room() -> String {
    let into_minute = Timestamp::now().as_second().rem_euclid(60);
    if into_minute > 30 {
        std::thread::sleep(Duration::from_secs((61 - into_minute) as u64));
    }
    this_minute()
}

fn this_minute() -> String {
    let now = Timestamp::now().as_second();
    let minute = Timestamp::from_second(now - now.rem_euclid(60)).expect("minute");
    format_instant(minute)
}

/// What `cargo lambda watch` logs when the function process ends (a build
/// error, a failed start).
const FUNCTION_EXITED: &str = "command exited";

struct Invoked {
    ok: bool,
    output: String,
}

struct Lambda {
    cargo_lambda: PathBuf,
    port: u16,
    dir: PathBuf,
    files: u32,
}

impl Lambda {
    /// Writes `payload` to a file and sends it with `cargo lambda invoke
    /// --data-file`, waiting at most `limit` (the first call compiles).
    fn invoke(&mut self, payload: &Value, limit: Duration, watch: &Guarded) -> Invoked {
        self.files += 1;
        let file = self.dir.join(format!("event-{}.json", self.files));
        std::fs::write(&file, payload.to_string()).expect("event file");
        let mut child = Command::new(&self.cargo_lambda)
            .args(["lambda", "invoke", "aws-jobs", "-A", "127.0.0.1", "-P"])
            .arg(self.port.to_string())
            .arg("--data-file")
            .arg(&file)
            .env("PATH", search_path())
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cargo lambda invoke");
        let started = Instant::now();
        let crashes = watch.log().matches(FUNCTION_EXITED).count();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if watch.log().matches(FUNCTION_EXITED).count() > crashes {
                // The function did not build or start: the invocation would
                // wait for it forever.
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "the function exited while {} was pending\n{}",
                    file.display(),
                    watch.log_tail()
                );
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "cargo lambda invoke {} took over {limit:?}\n{}",
                    file.display(),
                    watch.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut output = String::new();
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_string(&mut output);
        }
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut output);
        }
        Invoked {
            ok: status.success(),
            output,
        }
    }
}

fn store(endpoint: &str) -> DynamoStore {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "e2e"))
        .endpoint_url(endpoint)
        .build();
    DynamoStore::new(aws_sdk_dynamodb::Client::from_conf(config), table())
}

fn state(rt: &tokio::runtime::Runtime, store: &DynamoStore, job: &str) -> JobState {
    rt.block_on(store.get(job))
        .unwrap_or_else(|e| panic!("reading {job}: {e}"))
        .unwrap_or_else(|| panic!("{job} has no record"))
        .value
}

fn scheduler_event(job: &str, slot: &str) -> Value {
    let mut event = fixture("scheduler.json");
    event["cronslot"]["job"] = Value::from(job);
    event["cronslot"]["scheduled_time"] = Value::from(slot);
    event
}

#[test]
fn the_example_lambda_runs_each_slot_once_against_dynamodb() {
    let cargo_lambda = tool("cargo-lambda");
    let work =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("lambda-e2e-{}", std::process::id()));
    std::fs::create_dir_all(&work).expect("work dir");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    // The shared emulator of the test crates (MOTO_SERVER, PATH, or the
    // virtualenv; a missing one fails the test).
    let endpoint = cronslot_tests::moto::moto().endpoint.clone();
    let store = store(&endpoint);
    rt.block_on(store.create_table()).expect("create the table");

    let (hooks, base) = Hooks::start();
    let manifest_path = work.join("cronslot.json");
    std::fs::write(&manifest_path, manifest(&base)).expect("manifest");

    let port = free_port();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/aws-jobs");
    let env_vars = [
        format!("CRONSLOT_TABLE={}", table()),
        format!("CRONSLOT_DYNAMODB_ENDPOINT={endpoint}"),
        format!("CRONSLOT_MANIFEST={}", manifest_path.display()),
        "AWS_REGION=us-east-1".to_string(),
        "AWS_ACCESS_KEY_ID=test".to_string(),
        "AWS_SECRET_ACCESS_KEY=test".to_string(),
        "AWS_EC2_METADATA_DISABLED=true".to_string(),
    ];
    let mut args: Vec<String> = [
        "lambda",
        "watch",
        "--ignore-changes",
        "-A",
        "127.0.0.1",
        "-P",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(port.to_string());
    for var in &env_vars {
        args.push("--env-var".into());
        args.push(var.clone());
    }
    let mut watch = Guarded::start("watch", &cargo_lambda, &args, &example);
    watch.wait_for_port(port, Duration::from_secs(120));
    let mut lambda = Lambda {
        cargo_lambda,
        port,
        dir: work.clone(),
        files: 0,
    };
    // The first invocation waits for the function to compile.
    let first_call = Duration::from_secs(1200);
    let call = Duration::from_secs(60);

    // The first invocation compiles the function (minutes on a cold
    // machine): warm it up with an invalid event, so that the slot below is
    // still the current one when its first delivery arrives. Otherwise newer
    // slots would be due by then and `catch_up = "latest"` would rightly run
    // the newest instead.
    let warm_up = lambda.invoke(&fixture("unknown-job.json"), first_call, &watch);
    assert!(!warm_up.ok, "an unknown job must fail:\n{}", warm_up.output);

    // The same Scheduler event three times: one run, one request.
    let slot = current_minute_with_room();
    let ping = scheduler_event("ping-webhook", &slot);
    for i in 0..3 {
        let r = lambda.invoke(&ping, call, &watch);
        assert!(
            r.ok,
            "delivery {i} of ping-webhook@{slot} failed:\n{}\n{}",
            r.output,
            watch.log_tail()
        );
    }
    assert_eq!(
        hooks.count("/ping"),
        1,
        "three deliveries, one request\n{}",
        watch.log_tail()
    );
    let sent = &hooks.headers("/ping")[0];
    assert_eq!(
        sent.get("idempotency-key"),
        Some(&format!("ping-webhook@{slot}"))
    );
    assert!(sent.contains_key("cronslot-fence"));
    let ping_state = state(&rt, &store, "ping-webhook");
    assert_eq!(
        (ping_state.counters.runs, ping_state.counters.succeeded),
        (1, 1)
    );

    // A Rule event for the same slot is the same slot.
    let mut rule = fixture("rule.json");
    rule["time"] = Value::from(slot.clone());
    rule["resources"] =
        serde_json::json!(["arn:aws:events:us-east-1:123456789012:rule/cronslot-ping-webhook"]);
    let r = lambda.invoke(&rule, call, &watch);
    assert!(r.ok, "rule event: {}", r.output);
    assert_eq!(hooks.count("/ping"), 1);

    // The table's first tick writes its tick mark, and looks back a
    // minute: the every-minute job's record is created, and its slot from
    // before it existed does not run.
    let mut tick = fixture("tick-scheduler.json");
    tick["cronslot"]["scheduled_time"] = Value::from(slot.clone());
    let r = lambda.invoke(&tick, call, &watch);
    assert!(r.ok, "tick: {}", r.output);
    let start = rt
        .block_on(store.tick_start(Timestamp::now(), 10))
        .unwrap_or_else(|e| panic!("reading the tick mark: {e}"));
    assert!(start.mark.is_some(), "the first tick writes the mark");
    let tick_state = state(&rt, &store, "tick-hook");
    assert_eq!(tick_state.counters.runs, 0);

    // A failing run: an error, then the re-delivery (after the 1 s
    // backoff) runs the retry and succeeds.
    let flaky = scheduler_event("flaky-hook", &slot);
    let r = lambda.invoke(&flaky, call, &watch);
    assert!(!r.ok, "a 503 must fail the invocation:\n{}", r.output);
    assert!(r.output.contains("cronslot.RunFailed"), "{}", r.output);
    std::thread::sleep(Duration::from_millis(1500));
    let r = lambda.invoke(&flaky, call, &watch);
    assert!(
        r.ok,
        "the re-delivery must succeed:\n{}\n{}",
        r.output,
        watch.log_tail()
    );
    assert_eq!(hooks.count("/flaky"), 2);
    let attempts: Vec<String> = hooks
        .headers("/flaky")
        .iter()
        .filter_map(|h| h.get("cronslot-attempt").cloned())
        .collect();
    assert_eq!(attempts, ["1", "2"]);
    let flaky_state = state(&rt, &store, "flaky-hook");
    assert_eq!(
        (flaky_state.counters.failed, flaky_state.counters.succeeded),
        (1, 1)
    );

    // Malformed and unknown-job payloads: errors, refused as invalid.
    for name in [
        "malformed-bad-time.json",
        "malformed-not-object.json",
        "unknown-job.json",
    ] {
        let r = lambda.invoke(&fixture(name), call, &watch);
        assert!(!r.ok, "{name} must fail:\n{}", r.output);
        assert!(
            r.output.contains("cronslot.InvalidEvent"),
            "{name}: {}",
            r.output
        );
    }

    // The function's log: one run line per run, with the EMF metadata.
    let runs: Vec<Value> = watch
        .log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["msg"] == "run")
        .collect();
    assert_eq!(
        runs.len(),
        3,
        "ping once, flaky twice\n{}",
        watch.log_tail()
    );
    assert!(
        runs.iter()
            .all(|r| r["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "cronslot")
    );
    drop(watch);
}
