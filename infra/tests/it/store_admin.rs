//! The store commands against a Worker's admin URL (`--store
//! http://127.0.0.1:PORT/cronslot --token-env VAR`).
//!
//! The "Worker" is a small HTTP server in this test process that serves
//! the real admin code (`cronslot_runtime::admin::route` / `execute` /
//! `trigger_run` / `trigger_reply`) over the core's memory store; state is
//! seeded through the library at past instants, and the binary is driven
//! as a user would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::rc::Rc;

use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, CoordError, Coordinator, FailOutcome, JobError, MemoryStore, StateStore,
    Trigger, encode_state, repair_wake,
};
use cronslot_core::manifest::{JobSpec, Manifest, parse_manifest};
use cronslot_runtime::admin::{self, AdminRequest, AdminRoute, Reply};
use cronslot_runtime::{Jobs, Platform, VirtualPlatform};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

const TOKEN: &str = "test-admin-token";
const TOKEN_VAR: &str = "CRONSLOT_TEST_ADMIN_TOKEN";

/// `every` runs every minute, `broken` too but dies on its first failure;
/// `hourly` and `hourly-broken` fire half an hour away from now (no slot
/// boundary falls inside a test). The server fails every run of a job
/// whose name starts with "broken" or ends with "-broken".
fn manifest_text() -> String {
    let minute = quiet_minute();
    format!(
        r#"
[defaults]
lease = "2m"
starting_deadline = "5m"

[[job]]
name = "every"
schedule = "* * * * *"

[[job]]
name = "broken"
schedule = "* * * * *"
retry = {{ max_attempts = 1 }}

[[job]]
name = "hourly"
schedule = "{minute} * * * *"

[[job]]
name = "hourly-broken"
schedule = "{minute} * * * *"
retry = {{ max_attempts = 1 }}
"#
    )
}

fn quiet_minute() -> i64 {
    let now = Timestamp::now().as_second();
    ((now / 60) + 30).rem_euclid(60)
}

fn minutes_ago(minutes: i64) -> Timestamp {
    let now = Timestamp::now();
    let floor = now.as_second() - now.as_second().rem_euclid(60);
    Timestamp::from_second(floor - minutes * 60).unwrap()
}

fn plus_secs(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_add(SignedDuration::from_secs(secs)).unwrap()
}

// ------------------------------------------------------------- the Worker

/// A running test Worker: its URL, its store and its manifest.
struct Worker {
    base: String,
    store: MemoryStore,
    manifest: Manifest,
}

impl Worker {
    fn start(manifest_text: &str) -> Worker {
        let manifest = parse_manifest(manifest_text, "cronslot.toml").unwrap();
        let store = MemoryStore::new();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let served = (store.clone(), manifest.clone());
        std::thread::spawn(move || {
            let (store, manifest) = served;
            let coord = Rc::new(CasCoordinator::new(store, 11));
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                serve(stream, &manifest, &coord);
            }
        });
        Worker {
            base: format!("http://127.0.0.1:{port}/cronslot"),
            store,
            manifest,
        }
    }

    fn coord(&self) -> CasCoordinator<MemoryStore> {
        CasCoordinator::new(self.store.clone(), 3)
    }

    fn spec(&self, job: &str) -> &JobSpec {
        self.manifest.job(job).unwrap()
    }

    /// A tick at `at` that finds nothing due: creates the job's record.
    fn create_record(&self, job: &str, at: Timestamp) {
        let claim = block_on(
            self.coord()
                .claim(self.spec(job), at, Trigger::Tick, "seed"),
        )
        .unwrap();
        assert!(matches!(claim, Claim::Idle(_)), "{claim:?}");
    }

    /// The slot two minutes ago succeeded (`every`) or died (`broken`).
    fn run_two_minutes_ago(&self, job: &str, succeed: bool) -> Timestamp {
        let c = self.coord();
        let spec = self.spec(job);
        self.create_record(job, plus_secs(minutes_ago(3), 10));
        let slot = minutes_ago(2);
        let Claim::Claimed(lease) =
            block_on(c.claim(spec, plus_secs(slot, 5), Trigger::Tick, "seed")).unwrap()
        else {
            panic!("nothing claimed")
        };
        assert_eq!(lease.slot, slot);
        if succeed {
            block_on(c.complete(spec, lease.fence, None, plus_secs(slot, 20))).unwrap();
        } else {
            let fate = block_on(c.fail(
                spec,
                lease.fence,
                "exit status 1",
                true,
                plus_secs(slot, 20),
            ))
            .unwrap();
            assert_eq!(fate, FailOutcome::Dead);
        }
        slot
    }
}

/// One HTTP/1.1 request per connection, answered with `Connection: close`.
fn serve(stream: TcpStream, manifest: &Manifest, coord: &Rc<CasCoordinator<MemoryStore>>) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("").to_string();
    let mut authorization = None;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("authorization") {
                authorization = Some(value.trim().to_string());
            } else if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target.as_str(), None),
    };
    let request = AdminRequest {
        method: &method,
        path,
        query,
        authorization: authorization.as_deref(),
        if_match: None,
        if_none_match: None,
        body: None,
    };
    let reply = match admin::route("/cronslot", manifest, &request, Some(TOKEN)) {
        None => Reply {
            status: 404,
            content_type: "text/plain",
            headers: Vec::new(),
            body: "not found".to_string(),
        },
        Some(Err(reply)) => reply,
        Some(Ok(AdminRoute::Trigger { job })) => {
            let spec = Rc::new(manifest.job(job.as_str()).unwrap().clone());
            let fails = job.as_str().starts_with("broken") || job.as_str().ends_with("-broken");
            let jobs = Jobs::new().register(job.as_str(), move |_| async move {
                if fails {
                    Err(JobError::permanent("the job exploded"))
                } else {
                    Ok(())
                }
            });
            let platform: Rc<dyn Platform> = Rc::new(VirtualPlatform::new(Timestamp::now()));
            let outcome = block_on(admin::trigger_run(
                &spec,
                coord,
                "test-worker",
                &jobs,
                &platform,
            ));
            admin::trigger_reply(&spec, &outcome)
        }
        Some(Ok(AdminRoute::Repair { after })) => block_on(admin::repair_page(
            manifest,
            after.as_deref(),
            |spec| async move {
                repair_wake(coord.store(), spec.name.as_str())
                    .await
                    .map_err(CoordError::Store)
            },
        )),
        Some(Ok(route)) => block_on(admin::execute(&route, manifest, &**coord, Timestamp::now())),
    };
    let mut out = format!(
        "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.content_type,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        out.push_str(&format!("{name}: {value}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&reply.body);
    let mut stream = stream;
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
}

// ---------------------------------------------------------------- the CLI

fn scratch(name: &str, manifest: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("store_admin")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cronslot.toml"), manifest).unwrap();
    dir
}

/// Runs `cronslot ARGS --store URL --token-env VAR` with VAR = `token`
/// (unset when `None`).
fn cronslot(dir: &Path, store: &str, token: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_cronslot"));
    cmd.args(args)
        .args(["--store", store, "--token-env", TOKEN_VAR])
        .current_dir(dir)
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY");
    match token {
        Some(t) => cmd.env(TOKEN_VAR, t),
        None => cmd.env_remove(TOKEN_VAR),
    };
    cmd.output().expect("run cronslot")
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

#[track_caller]
fn assert_ok(o: &Output) {
    assert_eq!(code(o), 0, "stdout: {}\nstderr: {}", stdout(o), stderr(o));
}

// ------------------------------------------------------------------ tests

#[test]
fn status_reads_the_workers_records() {
    let text = manifest_text();
    let worker = Worker::start(&text);
    let dir = scratch("status", &text);
    let slot = worker.run_two_minutes_ago("every", true);

    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["status", "--format", "json"],
    );
    assert_ok(&o);
    let v = json(&o);
    assert_eq!(v["store"], worker.base);
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 4);
    let every = &jobs[0];
    assert_eq!(every["job"], "every");
    assert_eq!(every["recorded"], true);
    assert_eq!(every["fence"], 1);
    assert_eq!(every["last_success_slot"], slot.to_string());
    assert_eq!(every["health"], "ok");
    assert_eq!(jobs[1]["recorded"], false);
    assert_eq!(v["not_in_manifest"], serde_json::json!([]));

    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["status", "--job", "every"],
    );
    assert_ok(&o);
    let out = stdout(&o);
    assert!(out.contains(&format!("store {}", worker.base)), "{out}");
    assert!(out.contains(&format!("every@{slot}")), "{out}");
    assert!(out.contains("health        ok"), "{out}");
}

#[test]
fn pause_and_resume_go_to_the_worker() {
    let text = manifest_text();
    let worker = Worker::start(&text);
    let dir = scratch("pause", &text);
    worker.run_two_minutes_ago("every", true);

    let o = cronslot(&dir, &worker.base, Some(TOKEN), &["pause", "every"]);
    assert_ok(&o);
    assert!(stdout(&o).contains("paused job every"), "{}", stdout(&o));
    let state = block_on(
        worker
            .coord()
            .status(worker.spec("every"), Timestamp::now()),
    )
    .unwrap();
    assert!(state.paused);

    let o = cronslot(&dir, &worker.base, Some(TOKEN), &["pause", "every"]);
    assert_ok(&o);
    assert!(stdout(&o).contains("already paused"), "{}", stdout(&o));

    let o = cronslot(&dir, &worker.base, Some(TOKEN), &["resume", "every"]);
    assert_ok(&o);
    assert!(stdout(&o).contains("resumed job every"), "{}", stdout(&o));
    let state = block_on(
        worker
            .coord()
            .status(worker.spec("every"), Timestamp::now()),
    )
    .unwrap();
    assert!(!state.paused);
}

#[test]
fn dead_letters_are_listed_and_redriven() {
    let text = manifest_text();
    let worker = Worker::start(&text);
    let dir = scratch("dlq", &text);
    let slot = worker.run_two_minutes_ago("broken", false);

    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["dlq", "list", "--format", "json"],
    );
    assert_ok(&o);
    let v = json(&o);
    let letters = v["dead_letters"].as_array().unwrap();
    assert_eq!(letters.len(), 1, "{v}");
    assert_eq!(letters[0]["job"], "broken");
    assert_eq!(letters[0]["last_error"], "exit status 1");

    let slot_text = slot.to_string();
    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["dlq", "redrive", "broken", "--slot", &slot_text],
    );
    assert_ok(&o);
    assert!(
        stdout(&o).contains("redrove 1 dead letter"),
        "{}",
        stdout(&o)
    );
    let state = block_on(
        worker
            .coord()
            .status(worker.spec("broken"), Timestamp::now()),
    )
    .unwrap();
    assert!(state.dead.is_empty());
    assert_eq!(state.pending.len(), 1);

    // Not a dead letter any more: bad input, explained.
    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["dlq", "redrive", "broken", "--slot", &slot_text],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a dead letter"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn backfill_goes_to_the_worker() {
    let text = manifest_text();
    let worker = Worker::start(&text);
    let dir = scratch("backfill", &text);
    worker.run_two_minutes_ago("every", true);
    let from = minutes_ago(10).to_string();
    let to = minutes_ago(5).to_string();

    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &[
            "backfill",
            "every",
            "--from",
            &from,
            "--to",
            &to,
            "--dry-run",
        ],
    );
    assert_ok(&o);
    assert!(
        stdout(&o).contains("would queue 6 slots of job every"),
        "{}",
        stdout(&o)
    );

    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["backfill", "every", "--from", &from, "--to", &to],
    );
    assert_ok(&o);
    assert!(
        stdout(&o).contains("queued 6 slots of job every"),
        "{}",
        stdout(&o)
    );
    let state = block_on(
        worker
            .coord()
            .status(worker.spec("every"), Timestamp::now()),
    )
    .unwrap();
    assert_eq!(state.counters.backfilled, 6);

    // The Worker's refusals keep their exit code (bad input: 2).
    let future = plus_secs(Timestamp::now(), 3600).to_string();
    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["backfill", "every", "--from", &from, "--to", &future],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(stderr(&o).contains("in the future"), "{}", stderr(&o));
    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["backfill", "every", "--from", &to, "--to", &from],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn trigger_asks_the_worker_to_run_the_job() {
    let text = manifest_text();
    let worker = Worker::start(&text);
    let dir = scratch("trigger", &text);
    let before = plus_secs(minutes_ago(45), 0);
    worker.create_record("hourly", before);
    worker.create_record("hourly-broken", before);

    let o = cronslot(&dir, &worker.base, Some(TOKEN), &["trigger", "hourly"]);
    assert_ok(&o);
    assert!(stdout(&o).contains("succeeded"), "{}", stdout(&o));
    let state = block_on(
        worker
            .coord()
            .status(worker.spec("hourly"), Timestamp::now()),
    )
    .unwrap();
    let success = state.last_success.expect("recorded");
    assert_eq!(success.owner, "test-worker");

    // The slot ran: nothing to do, exit 1.
    let o = cronslot(&dir, &worker.base, Some(TOKEN), &["trigger", "hourly"]);
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    assert!(stderr(&o).contains("already resolved"), "{}", stderr(&o));
    // --format json: the Worker's own document, printed though nothing ran.
    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["trigger", "hourly", "--format", "json"],
    );
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    assert_eq!(v["job"], "hourly");
    assert_eq!(v["outcome"], "not_claimed");
    assert!(v["idle"].is_object(), "{v}");
    assert!(stderr(&o).contains("already resolved"), "{}", stderr(&o));

    // A failing run: exit 1, and the slot is a dead letter; with --format
    // json the document says so too, and stderr is the text output's.
    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["trigger", "hourly-broken", "--format", "json"],
    );
    assert_eq!(code(&o), 1, "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    assert_eq!(v["outcome"], "failed");
    assert_eq!(v["error"], "the job exploded");
    assert_eq!(v["permanent"], true);
    assert_eq!(v["fate"], "Dead");
    assert!(v.get("duration_ms").is_none(), "{v}");
    let err = stderr(&o);
    assert!(
        err.contains("failed (permanent): the job exploded"),
        "{err}"
    );
    assert!(err.contains("dlq redrive hourly-broken"), "{err}");
}

#[test]
fn a_wrong_token_is_refused() {
    let text = manifest_text();
    let worker = Worker::start(&text);
    let dir = scratch("token", &text);
    for args in [
        &["status"][..],
        &["pause", "every"],
        &["dlq", "list"],
        &["trigger", "hourly"],
    ] {
        let o = cronslot(&dir, &worker.base, Some("not-the-token"), args);
        assert_eq!(code(&o), 1, "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains("token refused"), "{err}");
        assert!(err.contains(TOKEN_VAR), "{err}");
        assert!(
            !err.contains("not-the-token"),
            "the token is never printed: {err}"
        );
    }
    // Nothing changed.
    let state = block_on(
        worker
            .coord()
            .status(worker.spec("every"), Timestamp::now()),
    )
    .unwrap();
    assert!(!state.paused);
}

#[test]
fn bad_admin_urls_and_tokens_are_bad_input() {
    let text = manifest_text();
    let dir = scratch("bad", &text);
    let cases: &[(&str, Option<&str>, &str)] = &[
        ("https://jobs.example.com/cronslot", None, "is not set"),
        ("https://jobs.example.com/cronslot", Some(" "), "is empty"),
        (
            "http://jobs.example.com/cronslot",
            Some(TOKEN),
            "unencrypted",
        ),
        (
            "https://user:pw@jobs.example.com/cronslot",
            Some(TOKEN),
            "credentials",
        ),
        (
            "https://jobs.example.com/cronslot?x=1",
            Some(TOKEN),
            "query",
        ),
        ("https://", Some(TOKEN), "not a valid URL"),
        ("sqlite:cronslot.db", Some(TOKEN), "only an https:// store"),
    ];
    for (store, token, says) in cases {
        let o = cronslot(&dir, store, *token, &["status"]);
        assert_eq!(code(&o), 2, "{store}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{store}: {}", stderr(&o));
    }
    // Without --token-env at all.
    let o = Command::new(env!("CARGO_BIN_EXE_cronslot"))
        .args(["status", "--store", "https://jobs.example.com/cronslot"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(code(&o), 2);
    assert!(stderr(&o).contains("needs --token-env"), "{}", stderr(&o));
}

#[test]
fn an_unreachable_worker_is_named() {
    let text = manifest_text();
    let dir = scratch("unreachable", &text);
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!("http://127.0.0.1:{port}/cronslot");
    let o = cronslot(&dir, &base, Some(TOKEN), &["status"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cannot connect to {base}/status")),
        "{err}"
    );
}

#[test]
fn a_wrong_prefix_is_explained() {
    let text = manifest_text();
    let worker = Worker::start(&text);
    let dir = scratch("prefix", &text);
    let wrong = worker.base.replace("/cronslot", "/admin");
    let o = cronslot(&dir, &wrong, Some(TOKEN), &["status"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("no cronslot admin routes"),
        "{}",
        stderr(&o)
    );
}

/// `init` on a Worker's admin URL repairs, page by page, the records
/// written before objects kept their wake: here 95 jobs (three pages),
/// one record with a waiting retry and no wake, one that does not decode.
#[test]
fn init_repairs_the_wakes_of_records_from_before_alarms() {
    let minute = quiet_minute();
    let mut text = String::from("[defaults]\nlease = \"2m\"\nstarting_deadline = \"5m\"\n");
    for i in 0..95 {
        text.push_str(&format!(
            "\n[[job]]\nname = \"job-{i:03}\"\nschedule = \"{minute} * * * *\"\n"
        ));
    }
    let worker = Worker::start(&text);
    // job-050 failed its slot two minutes ago and waits for a retry; its
    // record, as an older cronslot wrote it, has no wake.
    let spec = worker.spec("job-050");
    let c = worker.coord();
    let slot = minutes_ago(2);
    let Claim::Claimed(lease) =
        block_on(c.claim(spec, plus_secs(slot, 5), Trigger::Manual, "seed")).unwrap()
    else {
        panic!("nothing claimed")
    };
    let fate = block_on(c.fail(
        spec,
        lease.fence,
        "exit status 1",
        false,
        plus_secs(slot, 20),
    ));
    assert!(matches!(fate, Ok(FailOutcome::RetryAt(_))), "{fate:?}");
    let mut record = block_on(worker.store.get("job-050"))
        .unwrap()
        .unwrap()
        .value;
    let retry = record.pending[0].not_before;
    record.wake_at = None;
    worker.store.put_raw("job-050", &encode_state(&record));
    worker.store.put_raw("job-070", "{not json");

    let dir = scratch("repair", &text);
    let o = cronslot(&dir, &worker.base, Some(TOKEN), &["init"]);
    assert_ok(&o);
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(
        lines[0],
        format!(
            "{}: ready (95 job objects checked; records from before objects kept their wake \
             given one: 1; unreadable, left as they are: 1)",
            worker.base
        )
    );
    assert_eq!(lines[1], format!("  job-050: wakes at {retry}"));
    assert!(lines[2].starts_with("  job-070: unreadable: "), "{out}");
    let repaired = block_on(worker.store.get("job-050"))
        .unwrap()
        .unwrap()
        .value;
    assert_eq!(repaired.wake_at, Some(retry));
    assert_eq!(repaired.pending, record.pending);
    // Again: nothing left to repair.
    let o = cronslot(&dir, &worker.base, Some(TOKEN), &["init"]);
    assert_ok(&o);
    assert!(
        stdout(&o).contains(
            "(95 job objects checked; records from before objects kept their wake given one: 0;"
        ),
        "{}",
        stdout(&o)
    );
    // --format json: the same as one document.
    let o = cronslot(
        &dir,
        &worker.base,
        Some(TOKEN),
        &["init", "--format", "json"],
    );
    assert_ok(&o);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("one JSON document");
    assert_eq!(v["kind"], "worker");
    assert_eq!(v["store"], worker.base.as_str());
    assert_eq!(v["checked"], 95);
    assert_eq!(v["repaired"], serde_json::json!([]));
    assert_eq!(v["unreadable"][0]["job"], "job-070", "{v}");
    assert!(v.get("created").is_none(), "{v}");
    // Without the token, nothing is repaired and the refusal is explained.
    let o = cronslot(&dir, &worker.base, Some("wrong"), &["init"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("token refused"), "{}", stderr(&o));
}
