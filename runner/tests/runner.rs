//! The local runner end to end: real SQLite files, real processes, a real
//! HTTP server on 127.0.0.1, and an accelerated clock, so that half an hour
//! of schedule passes in seconds.
//!
//! Set `CRONSLOT_LOG=debug` to see the runners' logs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cronslot_core::coord::CasCoordinator;
use cronslot_core::coord::Operator;
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runner::{Clock, JobError, Jobs, LogFormat, Runner, SqliteStore, Summary};
use jiff::{SignedDuration, Timestamp};

// ---------------------------------------------------------------- helpers

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("runner")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

/// Every test's clock starts half a minute before a whole minute, so the
/// first slot of a per-minute job is 00:01:00.
fn start() -> Timestamp {
    ts("2030-01-01T00:00:30Z")
}

fn specs(manifest: &str) -> Vec<JobSpec> {
    match parse_manifest(manifest, "test.toml") {
        Ok(m) => m.jobs,
        Err(e) => panic!("{e}"),
    }
}

fn logs() {
    if std::env::var("CRONSLOT_LOG").is_ok() {
        let clock = Clock::real();
        let _ = cronslot_runner::init_logging(LogFormat::Pretty, &clock);
    }
}

/// Runs `manifest` from `start()` for `run_for` of clock time.
fn run(
    dir: &Path,
    manifest: &str,
    jobs: Jobs,
    workers: u32,
    speed: f64,
    run_for: SignedDuration,
) -> Summary {
    run_from(start(), dir, manifest, jobs, workers, speed, run_for)
}

/// The runs of these tests take turns: each runs on an accelerated clock,
/// where a real pause (another test's threads on a loaded machine, a
/// panic's backtrace) is minutes of clock time, and would move its slots'
/// fates. One at a time, they time only themselves.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run_from(
    start: Timestamp,
    dir: &Path,
    manifest: &str,
    jobs: Jobs,
    workers: u32,
    speed: f64,
    run_for: SignedDuration,
) -> Summary {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    logs();
    let store = SqliteStore::open(dir.join("cronslot.db")).unwrap();
    let clock = Clock::accelerated_from(start, speed).unwrap();
    let began = Instant::now();
    let summary = Runner::new(store, specs(manifest), clock)
        .with_jobs(jobs)
        .workers(workers)
        .owner_prefix("test")
        .until(start + run_for)
        .run()
        .unwrap();
    eprintln!("{summary}(took {:?})", began.elapsed());
    assert!(summary.ok(), "{summary}");
    summary
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `job@00:01:00Z` … for `n` minutes from 00:01.
fn minute_slots(job: &str, n: i64) -> Vec<String> {
    (1..=n)
        .map(|m| {
            format!(
                "{job}@{}",
                (ts("2030-01-01T00:00:00Z") + SignedDuration::from_mins(m))
                    .strftime("%Y-%m-%dT%H:%M:%SZ")
            )
        })
        .collect()
}

/// A command that appends a line to `file`.
fn append(file: &Path, line: &str) -> String {
    format!(r#"["sh", "-c", "echo \"{line}\" >> '{}'"]"#, file.display())
}

// ------------------------------------------------------------------ tests

#[test]
fn three_workers_run_every_slot_exactly_once() {
    let dir = scratch("three_workers");
    let names = ["alpha", "beta", "gamma"];
    let mut manifest = String::from(
        r#"
[defaults]
lease = "10m"
# Generous: on a loaded machine starting `sh` can take a tenth of a real
# second, which is a minute of this clock.
timeout = "5m"
# Late slots still run (oldest first), so a loaded test machine that
# delays a worker cannot turn a slot into a gap.
catch_up = "all"
starting_deadline = "30m"
"#,
    );
    for name in names {
        manifest.push_str(&format!(
            "\n[[job]]\nname = \"{name}\"\nschedule = \"* * * * *\"\ncommand = {}\n",
            append(
                &dir.join(format!("{name}.log")),
                "$CRONSLOT_SLOT fence=$CRONSLOT_FENCE"
            )
        ));
    }
    let summary = run(
        &dir,
        &manifest,
        Jobs::new(),
        3,
        300.0,
        SignedDuration::from_mins(30),
    );

    for name in names {
        let slots: Vec<String> = lines(&dir.join(format!("{name}.log")))
            .iter()
            .map(|l| l.split(' ').next().unwrap_or_default().to_string())
            .collect();
        let unique: BTreeSet<&String> = slots.iter().collect();
        assert_eq!(
            unique.len(),
            slots.len(),
            "{name}: a slot ran twice: {slots:?}"
        );
        let mut sorted = slots.clone();
        sorted.sort();
        // Every minute from the first, no gaps. The runner stops claiming at
        // 00:30:30; on an overloaded machine (each `sh` taking a minute of
        // this clock) the last slots are still waiting then: not missed,
        // the next runner would take them.
        let n = sorted.len();
        assert!(n >= 20, "{name}: {sorted:?}");
        assert_eq!(
            sorted,
            minute_slots(name, n as i64),
            "{name}: every minute once, no gaps"
        );
        let job = summary.job(name).unwrap();
        let n = n as u64;
        assert_eq!(
            (job.slots_run, job.runs, job.succeeded),
            (n, n, n),
            "{job:?}"
        );
        assert_eq!(job.missed_total(), 0, "{job:?}");

        // Fences only grow: in claim order the file's fences ascend.
        let fences: Vec<u64> = lines(&dir.join(format!("{name}.log")))
            .iter()
            .filter_map(|l| l.split("fence=").nth(1)?.parse().ok())
            .collect();
        assert_eq!(fences.len(), slots.len());
        assert_eq!(
            fences.iter().collect::<BTreeSet<_>>().len(),
            slots.len(),
            "fences are unique"
        );
    }
    assert!(summary.slots_run_twice.is_empty());
    assert!(
        summary.duplicates_refused > 0,
        "three workers competed for every slot: {summary}"
    );
    assert!(summary.to_string().contains("slots run more than once: 0"));
}

#[test]
fn a_transient_failure_is_retried_on_the_same_slot() {
    let dir = scratch("transient");
    let log = dir.join("flaky.log");
    let manifest = format!(
        r#"
[defaults]
lease = "10m"
timeout = "5m"
retry = {{ max_attempts = 3, backoff = "5s", max_backoff = "20s" }}

[[job]]
name = "flaky"
schedule = "* * * * *"
command = ["sh", "-c", "if [ \"$CRONSLOT_ATTEMPT\" = 1 ]; then echo \"$CRONSLOT_SLOT attempt 1\" >> '{log}'; exit 75; fi; echo \"$CRONSLOT_SLOT attempt $CRONSLOT_ATTEMPT ok\" >> '{log}'"]
"#,
        log = log.display()
    );
    // The clocks of these tests start shortly before their first slot and
    // run slow enough that a loaded machine still claims every retry
    // before the runner stops (the last one has ~50 s of clock time, 0.4
    // real seconds, to spare).
    let summary = run_from(
        ts("2030-01-01T00:00:50Z"),
        &dir,
        &manifest,
        Jobs::new(),
        1,
        120.0,
        SignedDuration::from_secs(245),
    );
    let expected: Vec<String> = minute_slots("flaky", 4)
        .into_iter()
        .flat_map(|s| [format!("{s} attempt 1"), format!("{s} attempt 2 ok")])
        .collect();
    assert_eq!(lines(&log), expected);
    let job = summary.job("flaky").unwrap();
    assert_eq!(
        (
            job.slots_run,
            job.runs,
            job.succeeded,
            job.retries,
            job.dead
        ),
        (4, 8, 4, 4, 0),
        "{job:?}"
    );
}

#[test]
fn failures_end_in_the_dead_letter_list() {
    let dir = scratch("dead");
    let manifest = r#"
[defaults]
lease = "10m"
timeout = "5m"
retry = { max_attempts = 2, backoff = "2s", max_backoff = "2s" }

[[job]]
name = "broken"
schedule = "* * * * *"
command = ["sh", "-c", "echo 'export target unreachable' >&2; exit 3"]

[[job]]
name = "always-busy"
schedule = "* * * * *"
command = ["sh", "-c", "echo 'still busy' >&2; exit 75"]

[[job]]
name = "missing-program"
schedule = "* * * * *"
command = ["/nonexistent/cronslot-test-program"]
"#;
    let summary = run_from(
        ts("2030-01-01T00:00:50Z"),
        &dir,
        manifest,
        Jobs::new(),
        2,
        120.0,
        SignedDuration::from_secs(185),
    );

    let broken = summary.job("broken").unwrap();
    assert_eq!(
        (broken.runs, broken.retries, broken.dead),
        (3, 0, 3),
        "{broken:?}"
    );
    assert_eq!(broken.dead_letters.len(), 3);
    for d in &broken.dead_letters {
        assert_eq!(d.attempts, 1, "a permanent error is not retried");
        assert!(
            d.last_error
                .contains("exit status 3: export target unreachable"),
            "{}",
            d.last_error
        );
    }
    let busy = summary.job("always-busy").unwrap();
    assert_eq!((busy.runs, busy.retries, busy.dead), (6, 3, 3), "{busy:?}");
    for d in &busy.dead_letters {
        assert_eq!(d.attempts, 2);
        assert!(
            d.last_error
                .contains("exit status 75 (transient): still busy"),
            "{}",
            d.last_error
        );
    }
    let missing = summary.job("missing-program").unwrap();
    assert_eq!(missing.dead, 3);
    assert!(
        missing.dead_letters[0]
            .last_error
            .contains("could not start")
    );
    assert!(summary.to_string().contains("dead letters"));
}

/// Is `pid` a live (not zombie) process? Linux only: reads /proc.
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn a_command_past_its_timeout_is_killed_and_retried() {
    let dir = scratch("timeout");
    let pids = dir.join("pids");
    let manifest = format!(
        r#"
[defaults]
lease = "10m"
retry = {{ max_attempts = 2, backoff = "1s", max_backoff = "1s" }}

[[job]]
name = "slow"
schedule = "*/5 * * * *"
timeout = "10s"
# The shell starts a grandchild and waits for it: killing the shell alone
# would leave the sleep running.
command = ["sh", "-c", "sleep 30 & echo $! >> '{}'; wait"]
"#,
        pids.display()
    );
    let began = Instant::now();
    // Slot 00:05; each attempt is stopped after 10 s of clock time.
    let summary = run_from(
        ts("2030-01-01T00:04:40Z"),
        &dir,
        &manifest,
        Jobs::new(),
        1,
        60.0,
        SignedDuration::from_secs(75),
    );
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "nobody waited for the sleep"
    );
    let job = summary.job("slow").unwrap();
    assert_eq!((job.runs, job.retries, job.dead), (2, 1, 1), "{job:?}");
    let letter = &job.dead_letters[0];
    assert!(
        letter.last_error.contains("timed out after 10s"),
        "{}",
        letter.last_error
    );
    assert_eq!(letter.attempts, 2, "a timeout is transient: retried");
    let started = lines(&pids);
    assert_eq!(started.len(), 2);
    #[cfg(target_os = "linux")]
    for pid in started {
        let pid: u32 = pid.parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        while alive(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !alive(pid),
            "the grandchild {pid} was killed with its group"
        );
    }
}

/// What a function job saw, per attempt.
#[derive(Debug, Clone)]
struct Seen {
    slot: String,
    key: String,
    fence: u64,
    attempt: u32,
    effect: String,
}

#[test]
fn a_registered_function_gets_its_slot_and_the_effect_ledger() {
    let dir = scratch("function");
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let effects_done: Arc<Mutex<u32>> = Arc::default();
    let jobs = {
        let seen = Arc::clone(&seen);
        let effects_done = Arc::clone(&effects_done);
        Jobs::new().register("invoice", move |ctx| {
            let seen = Arc::clone(&seen);
            let effects_done = Arc::clone(&effects_done);
            async move {
                let key = ctx.idempotency_key();
                // The effect runs on the first attempt only; the retry gets
                // its recorded result back.
                let effect = ctx
                    .effect("send", || async {
                        *effects_done.lock().unwrap() += 1;
                        Ok(format!("sent {key}"))
                    })
                    .await?;
                seen.lock().unwrap().push(Seen {
                    slot: ctx.slot_id().to_string(),
                    key: ctx.idempotency_key(),
                    fence: ctx.fence(),
                    attempt: ctx.attempt(),
                    effect,
                });
                if ctx.attempt() == 1 {
                    return Err(JobError::transient("the printer jammed after sending"));
                }
                Ok(())
            }
        })
    };
    let manifest = r#"
[defaults]
lease = "10m"
retry = { max_attempts = 3, backoff = "2s", max_backoff = "2s" }

[[job]]
name = "invoice"
schedule = "*/2 * * * *"
"#;
    // A function job without its function is refused before anything runs,
    // with the words every platform uses (the runtime's `Jobs::check`).
    let with_unregistered =
        format!("{manifest}\n[[job]]\nname = \"unregistered\"\nschedule = \"*/2 * * * *\"\n");
    let store = SqliteStore::open_in_memory().unwrap();
    let runner =
        Runner::new(store, specs(&with_unregistered), Clock::real()).with_jobs(jobs.clone());
    assert_eq!(runner.unrunnable(), vec!["unregistered".to_string()]);
    let refused = runner.run().unwrap_err().to_string();
    assert!(
        refused.contains("job \"unregistered\" runs a Rust function, but none is registered"),
        "{refused}"
    );

    let summary = run_from(
        ts("2030-01-01T00:01:50Z"),
        &dir,
        manifest,
        jobs,
        2,
        120.0,
        SignedDuration::from_mins(4),
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    for pair in seen.chunks(2) {
        let (first, retry) = (&pair[0], &pair[1]);
        assert_eq!(first.slot, retry.slot, "the retry is of the same slot");
        assert_eq!(first.key, first.slot, "the idempotency key is the slot id");
        assert_eq!((first.attempt, retry.attempt), (1, 2));
        assert!(retry.fence > first.fence, "every claim has a higher fence");
        assert_eq!(first.effect, format!("sent {}", first.slot));
        assert_eq!(
            retry.effect, first.effect,
            "the recorded result, not a rerun"
        );
    }
    assert_eq!(seen[0].slot, "invoice@2030-01-01T00:02:00Z");
    assert_eq!(*effects_done.lock().unwrap(), 2, "once per slot");
    let invoice = summary.job("invoice").unwrap();
    assert_eq!((invoice.succeeded, invoice.retries), (2, 2));
}

#[test]
fn a_panicking_function_is_a_failed_run_not_a_dead_worker() {
    let dir = scratch("panic");
    let jobs = Jobs::new().register("panicky", |ctx| async move {
        if ctx.attempt() > 0 {
            panic!("a bug in the job");
        }
        Ok(())
    });
    // A panic is a crashed run: a transient failure, retried, then dead
    // when the attempts run out (the same on every platform).
    let manifest = r#"
[[job]]
name = "panicky"
schedule = "0 * * * *"
retry = { max_attempts = 2, backoff = "1s", max_backoff = "1s" }
"#;
    // One slot (01:00) in a window of five minutes of a slow clock:
    // printing the panic (and a backtrace, where RUST_BACKTRACE is set:
    // resolving it takes a second or more) takes real time, which must not
    // push the retry past the window. `run` asserts that no worker failed.
    let summary = run_from(
        ts("2030-01-01T00:59:50Z"),
        &dir,
        manifest,
        jobs,
        1,
        60.0,
        SignedDuration::from_mins(5),
    );
    let job = summary.job("panicky").unwrap();
    assert_eq!((job.runs, job.retries, job.dead), (2, 1, 1), "{job:?}");
    let error = &job.dead_letters[0].last_error;
    assert!(error.contains("panicked: a bug in the job"), "{error}");
}

/// A request as the test server saw it.
#[derive(Debug, Clone)]
struct Request {
    head: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// A tiny HTTP/1.1 server on 127.0.0.1: answers 503 to the first request
/// and 200 to the rest, recording each request's head. Stops when `stop`
/// fires.
fn serve(
    requests: Arc<Mutex<Vec<Request>>>,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> (u16, std::thread::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let mut stop = stop;
            loop {
                let (mut socket, _) = tokio::select! {
                    accepted = listener.accept() => accepted.unwrap(),
                    _ = &mut stop => return,
                };
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let n = {
                    let mut r = requests.lock().unwrap();
                    r.push(Request {
                        head: String::from_utf8_lossy(&head).into_owned(),
                    });
                    r.len()
                };
                let response: &[u8] = if n == 1 {
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy"
                } else {
                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok"
                };
                let _ = socket.write_all(response).await;
                let _ = socket.shutdown().await;
            }
        });
    });
    (port, thread)
}

#[test]
fn an_http_job_sends_its_slot_and_fence_and_retries_a_503() {
    let dir = scratch("http");
    let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let (port, server) = serve(Arc::clone(&requests), stopped);
    let manifest = format!(
        r#"
[defaults]
lease = "10m"
timeout = "5m"
retry = {{ max_attempts = 3, backoff = "2s", max_backoff = "2s" }}

[[job]]
name = "hook"
schedule = "* * * * *"
http = {{ url = "http://127.0.0.1:{port}/hook", method = "PUT", headers = {{ X-Team = "billing" }} }}
"#
    );
    let summary = run_from(
        ts("2030-01-01T00:00:50Z"),
        &dir,
        &manifest,
        Jobs::new(),
        2,
        120.0,
        SignedDuration::from_secs(125),
    );
    let _ = stop.send(());
    server.join().unwrap();

    let requests = requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let first_slot = "hook@2030-01-01T00:01:00Z";
    for (r, (key, attempt)) in requests.iter().zip([
        (first_slot, "1"),
        (first_slot, "2"),
        ("hook@2030-01-01T00:02:00Z", "1"),
    ]) {
        assert!(r.head.starts_with("PUT /hook HTTP/1.1"), "{}", r.head);
        assert_eq!(r.header("idempotency-key").as_deref(), Some(key));
        assert_eq!(r.header("cronslot-attempt").as_deref(), Some(attempt));
        assert_eq!(r.header("x-team").as_deref(), Some("billing"));
    }
    let fences: Vec<u64> = requests
        .iter()
        .map(|r| r.header("cronslot-fence").unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        fences,
        vec![1, 2, 3],
        "each attempt carries its claim's fence"
    );
    let job = summary.job("hook").unwrap();
    assert_eq!(
        (job.slots_run, job.runs, job.succeeded, job.retries),
        (2, 3, 2, 1),
        "{job:?}"
    );
}

#[test]
fn a_long_run_heartbeats_and_keeps_its_slot() {
    let dir = scratch("heartbeat");
    let deadlines: Arc<Mutex<Vec<(Timestamp, Timestamp)>>> = Arc::default();
    let jobs = {
        let deadlines = Arc::clone(&deadlines);
        // 2.5 leases long: without heartbeats the lease would expire and
        // the other worker would take the slot over.
        Jobs::new().register_with_timeout("long", Duration::from_secs(300), move |ctx| {
            let deadlines = Arc::clone(&deadlines);
            async move {
                let first = ctx.lease_deadline();
                ctx.sleep(Duration::from_secs(150)).await;
                deadlines
                    .lock()
                    .unwrap()
                    .push((first, ctx.lease_deadline()));
                Ok(())
            }
        })
    };
    let manifest = r#"
[defaults]
lease = "1m"

[[job]]
name = "long"
schedule = "*/5 * * * *"
"#;
    // One slot (00:05); the runner stops claiming at 00:06 and lets the
    // run finish at about 00:07:30.
    let summary = run_from(
        ts("2030-01-01T00:04:45Z"),
        &dir,
        manifest,
        jobs,
        2,
        60.0,
        SignedDuration::from_secs(75),
    );
    let job = summary.job("long").unwrap();
    assert_eq!(
        (job.runs, job.succeeded, job.lease_lost, job.dead),
        (1, 1, 0, 0),
        "{job:?}"
    );
    let deadlines = deadlines.lock().unwrap().clone();
    assert_eq!(deadlines.len(), 1);
    let (first, last) = deadlines[0];
    assert!(
        last > first + SignedDuration::from_secs(60),
        "heartbeats moved the lease on: {first} → {last}"
    );

    // The store agrees: one run, one success, fence 1 (never taken over).
    let store = SqliteStore::open(dir.join("cronslot.db")).unwrap();
    let spec = specs(manifest).remove(0);
    let state = cronslot_core::coord::exec::block_on(
        CasCoordinator::new(store, 1).status(&spec, ts("2030-01-01T00:09:00Z")),
    )
    .unwrap();
    assert_eq!(
        (state.fence, state.counters.runs, state.counters.succeeded),
        (1, 1, 1)
    );
}

/// The schedules of a dynamic job are served by the runner like any job:
/// three workers run each minute slot of a schedule exactly once, each
/// with the schedule's key and payload in its environment; a deleted
/// schedule runs nothing, a paused one neither.
#[test]
fn a_dynamic_jobs_schedules_run_once_per_slot_with_key_and_payload() {
    use cronslot_core::coord::Schedules;
    use cronslot_core::coord::decide::Precondition;
    use cronslot_core::coord::exec::block_on;
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};

    let dir = scratch("dynamic");
    let log = dir.join("runs.log");
    let manifest = format!(
        "[[job]]\nname = \"invoice\"\ndynamic = true\ncommand = {}\n",
        append(&log, "$CRONSLOT_SLOT $CRONSLOT_KEY $CRONSLOT_PAYLOAD")
    );
    let parsed = parse_manifest(&manifest, "test.toml").unwrap();
    let template = parsed.templates[0].clone();
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    logs();
    let store = SqliteStore::open(dir.join("cronslot.db")).unwrap();
    let writer = CasCoordinator::new(store.clone(), 1);
    let put = |key: &str, json: &str| {
        block_on(writer.put_schedule(
            &template,
            &ScheduleKey::new(key).unwrap(),
            ScheduleSpec::from_json(json).unwrap(),
            Precondition::None,
            start(),
        ))
        .unwrap()
    };
    put(
        "acme",
        r#"{"cron": "* * * * *", "payload": {"tenant":"acme"}}"#,
    );
    put("resting", r#"{"cron": "* * * * *", "paused": true}"#);
    put("gone", r#"{"cron": "* * * * *"}"#);
    block_on(writer.delete_schedule(
        &template,
        &ScheduleKey::new("gone").unwrap(),
        Precondition::None,
        start(),
    ))
    .unwrap();
    let clock = Clock::accelerated_from(start(), 60.0).unwrap();
    let summary = Runner::new(store, parsed.jobs, clock)
        .with_templates(parsed.templates)
        .workers(3)
        .owner_prefix("test")
        .until(start() + SignedDuration::from_secs(215))
        .run()
        .unwrap();
    assert!(summary.ok(), "{summary}");
    let mut ran = lines(&log);
    ran.sort();
    let expected: Vec<String> = minute_slots("invoice/acme", 4)
        .into_iter()
        .map(|slot| format!(r#"{slot} acme {{"tenant":"acme"}}"#))
        .collect();
    assert_eq!(
        ran, expected,
        "each slot of acme once; none of resting or gone"
    );
}

/// `max_running` bounds the runs' work going on in one process over all
/// its workers: four workers, a bound of two, 24 keyed runs enqueued at
/// once (each working 50 ms): never more than two at once, every run
/// once, and the burst drains (the places come back as runs end).
#[test]
fn max_running_bounds_the_runs_of_a_process_over_its_workers() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    const RUNS: usize = 24;
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    logs();
    let keys: Vec<String> = (0..RUNS).map(|i| format!("order-{i:02}")).collect();
    let (store, parsed) = keyed_runs_enqueued("max-running", "5m", &keys, Timestamp::now());
    let going = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let ran = Arc::new(Mutex::new(Vec::new()));
    let jobs = {
        let (going, most, ran) = (Arc::clone(&going), Arc::clone(&most), Arc::clone(&ran));
        Jobs::new().register("mail", move |ctx| {
            let now = going.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            ran.lock()
                .unwrap()
                .push(ctx.key().unwrap_or_default().to_string());
            let going = Arc::clone(&going);
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                going.fetch_sub(1, Ordering::SeqCst);
                Ok(())
            }
        })
    };
    let runner = Runner::new(store, Vec::new(), Clock::real())
        .with_templates(parsed.templates)
        .with_jobs(jobs)
        .workers(4)
        .max_running(2)
        .owner_prefix("test");
    let stop = runner.stop_handle();
    let running = std::thread::spawn(move || runner.run());
    let deadline = Instant::now() + Duration::from_secs(60);
    while ran.lock().unwrap().len() < RUNS && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.stop();
    let summary = running.join().unwrap().unwrap();
    assert!(summary.ok(), "{summary}");
    let mut keys = ran.lock().unwrap().clone();
    keys.sort();
    let expected: Vec<String> = (0..RUNS).map(|i| format!("order-{i:02}")).collect();
    assert_eq!(keys, expected, "every run once");
    assert_eq!(
        most.load(Ordering::SeqCst),
        2,
        "never more than two at once"
    );
}

/// A lease claimed ahead of a free place is kept alive while it waits for
/// its turn. One place, two keyed runs enqueued at once, each working
/// 100 s of a 60 s lease (clock time, 120 times real): runner A claims
/// both (the second ahead, waiting 100 s behind the first); runner B,
/// started on the same store once A's first run has begun, has no bound
/// and would take over any lease that ran out. Both runs are A's, each at
/// its first attempt: the waiting lease's heartbeats kept B off it.
#[test]
fn a_lease_claimed_ahead_is_kept_alive_while_it_waits_for_its_turn() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    logs();
    let begin = Timestamp::now();
    let keys = ["order-0".to_string(), "order-1".to_string()];
    let (store, parsed) = keyed_runs_enqueued("claim-ahead", "60s", &keys, begin);
    let ran: Arc<Mutex<Vec<(String, u32, String)>>> = Arc::new(Mutex::new(Vec::new()));
    let jobs = {
        let ran = Arc::clone(&ran);
        Jobs::new().register_with_timeout("mail", Duration::from_secs(300), move |ctx| {
            let ran = Arc::clone(&ran);
            async move {
                ran.lock().unwrap().push((
                    ctx.key().unwrap_or_default().to_string(),
                    ctx.attempt(),
                    ctx.owner().to_string(),
                ));
                ctx.sleep(Duration::from_secs(100)).await;
                Ok(())
            }
        })
    };
    let runner = |prefix: &str, bound: Option<u32>| {
        let clock = Clock::accelerated_from(begin, 120.0).unwrap();
        let runner = Runner::new(store.clone(), Vec::new(), clock)
            .with_templates(parsed.templates.clone())
            .with_jobs(jobs.clone())
            .owner_prefix(prefix);
        match bound {
            Some(n) => runner.max_running(n),
            None => runner,
        }
    };
    let a = runner("a", Some(1));
    let stop_a = a.stop_handle();
    let running_a = std::thread::spawn(move || a.run());
    let deadline = Instant::now() + Duration::from_secs(30);
    while ran.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let b = runner("b", None);
    let stop_b = b.stop_handle();
    let running_b = std::thread::spawn(move || b.run());
    // 200 s of clock time for both runs, and B's ticks meanwhile.
    while ran.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    stop_b.stop();
    stop_a.stop();
    let summary_a = running_a.join().unwrap().unwrap();
    let summary_b = running_b.join().unwrap().unwrap();
    assert!(summary_a.ok(), "{summary_a}");
    assert!(summary_b.ok(), "{summary_b}");
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    let runs: Vec<(&str, u32, bool)> = ran
        .iter()
        .map(|(key, attempt, owner)| (key.as_str(), *attempt, owner.starts_with("a-")))
        .collect();
    assert_eq!(
        runs,
        vec![("order-0", 1, true), ("order-1", 1, true)],
        "both runs A's, at their first attempt: {ran:?}"
    );
}

/// A fresh SQLite store (under `scratch(dir)`) of one dynamic job `mail`
/// with lease `lease`, and a keyed run of it enqueued at `now` for each
/// of `keys`.
fn keyed_runs_enqueued(
    dir: &str,
    lease: &str,
    keys: &[String],
    now: Timestamp,
) -> (SqliteStore, cronslot_core::manifest::Manifest) {
    use cronslot_core::coord::Runs;
    use cronslot_core::coord::exec::block_on;
    use cronslot_core::schedules::{RunRequest, ScheduleKey};

    let dir = scratch(dir);
    let text = format!("[[job]]\nname = \"mail\"\ndynamic = true\nlease = \"{lease}\"\n");
    let parsed = parse_manifest(&text, "test.toml").unwrap();
    let store = SqliteStore::open(dir.join("cronslot.db")).unwrap();
    let writer = CasCoordinator::new(store.clone(), 1);
    for key in keys {
        let key = ScheduleKey::new(key.as_str()).unwrap();
        let request = RunRequest {
            payload: None,
            at: None,
        };
        block_on(writer.enqueue_run(&parsed.templates[0], &key, &request, now)).unwrap();
    }
    (store, parsed)
}

/// A drain's grace period (`Runner::drain_grace`): once stopped, the
/// runner lets its running jobs go on for the grace and then stops them
/// without a word to the store: the run's lease stays as it was (no
/// failure recorded, as after a crash), and another runner, once the lease
/// has expired, runs the slot again with a higher fence.
#[test]
fn a_run_outlasting_the_drain_grace_is_left_to_its_lease_and_retried_elsewhere() {
    use cronslot_core::coord::StateStore;
    use cronslot_core::coord::exec::block_on;

    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    logs();
    let begin = Timestamp::now();
    let keys = ["order-0".to_string()];
    let (store, parsed) = keyed_runs_enqueued("drain-grace", "60s", &keys, begin);
    let ran: Arc<Mutex<Vec<(u32, u64, String)>>> = Arc::new(Mutex::new(Vec::new()));
    let jobs = {
        let ran = Arc::clone(&ran);
        Jobs::new().register("mail", move |ctx| {
            let ran = Arc::clone(&ran);
            async move {
                ran.lock()
                    .unwrap()
                    .push((ctx.attempt(), ctx.fence(), ctx.owner().to_string()));
                if ctx.attempt() == 1 {
                    // Far longer than the grace.
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
                Ok(())
            }
        })
    };
    let a = Runner::new(store.clone(), Vec::new(), Clock::real())
        .with_templates(parsed.templates.clone())
        .with_jobs(jobs.clone())
        .owner_prefix("a")
        .drain_grace(Duration::from_millis(500));
    let stop = a.stop_handle();
    let running = std::thread::spawn(move || a.run());
    let deadline = Instant::now() + Duration::from_secs(30);
    while ran.lock().unwrap().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let asked = Instant::now();
    stop.stop();
    running.join().unwrap().unwrap();
    let took = asked.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "the runner ended with its grace, not its job: {took:?}"
    );
    // Nothing was written for the run: its lease is A's, as claimed.
    let record = block_on(store.get("mail/order-0")).unwrap().unwrap().value;
    assert_eq!(record.leases.len(), 1, "{record:?}");
    assert!(record.leases[0].owner.starts_with("a-"), "{record:?}");
    assert_eq!((record.counters.runs, record.counters.failed), (1, 0));

    // Runner B's clock is past the lease: it takes the slot over.
    let later = Clock::accelerated_from(begin + SignedDuration::from_secs(75), 1.0).unwrap();
    let b = Runner::new(store.clone(), Vec::new(), later)
        .with_templates(parsed.templates.clone())
        .with_jobs(jobs)
        .owner_prefix("b");
    let stop = b.stop_handle();
    let running = std::thread::spawn(move || b.run());
    let deadline = Instant::now() + Duration::from_secs(30);
    while ran.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    stop.stop();
    running.join().unwrap().unwrap();
    let ran = ran.lock().unwrap().clone();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert_eq!(ran[1].0, 2, "the second attempt: {ran:?}");
    assert!(ran[1].1 > ran[0].1, "with a higher fence: {ran:?}");
    assert!(ran[1].2.starts_with("b-"), "{ran:?}");
}

/// A bound on runs does not starve the jobs behind one already served
/// elsewhere (issue 29's roll found it): two runners on one store, one
/// place each, two jobs every minute that each run 20 s of a minute. A
/// tick that claims the first job in vain (the other runner has it) must
/// not spend the place on it: both jobs run every minute.
#[test]
fn one_place_each_two_runners_and_every_job_of_every_minute_runs() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    logs();
    let dir = scratch("one-place-each");
    let text = "[defaults]\nlease = \"1m\"\nskew_margin = \"2s\"\n\
                [[job]]\nname = \"billing\"\nschedule = \"* * * * *\"\n\
                [[job]]\nname = \"ledger\"\nschedule = \"* * * * *\"\n";
    let parsed = parse_manifest(text, "test.toml").unwrap();
    let store = SqliteStore::open(dir.join("cronslot.db")).unwrap();
    let ran: Arc<Mutex<Vec<(String, Timestamp)>>> = Arc::new(Mutex::new(Vec::new()));
    let job = |ran: &Arc<Mutex<Vec<(String, Timestamp)>>>| {
        let ran = Arc::clone(ran);
        move |ctx: cronslot_runner::RunContext| {
            let ran = Arc::clone(&ran);
            async move {
                ran.lock()
                    .unwrap()
                    .push((ctx.job().to_string(), ctx.scheduled_at()));
                ctx.sleep(Duration::from_secs(20)).await;
                Ok(())
            }
        }
    };
    let jobs = Jobs::new()
        .register("billing", job(&ran))
        .register("ledger", job(&ran));
    // A minute a second, from just before a whole minute.
    let begin = ts("2026-03-02T09:00:50Z");
    let runner = |prefix: &str| {
        Runner::new(
            store.clone(),
            parsed.jobs.clone(),
            Clock::accelerated_from(begin, 60.0).unwrap(),
        )
        .with_jobs(jobs.clone())
        .max_running(1)
        .claim_ahead(0)
        .owner_prefix(prefix)
        .run_for(Duration::from_secs(5 * 60 + 30))
    };
    let (a, b) = (runner("a"), runner("b"));
    let running_a = std::thread::spawn(move || a.run());
    let running_b = std::thread::spawn(move || b.run());
    let summary_a = running_a.join().unwrap().unwrap();
    let summary_b = running_b.join().unwrap().unwrap();
    assert!(summary_a.ok(), "{summary_a}");
    assert!(summary_b.ok(), "{summary_b}");
    let mut ran = ran.lock().unwrap().clone();
    ran.sort();
    let minutes: Vec<Timestamp> = (1..=5)
        .map(|m| begin + SignedDuration::from_secs(10 + 60 * (m - 1)))
        .collect();
    for minute in &minutes {
        for job in ["billing", "ledger"] {
            assert!(
                ran.iter().any(|(j, slot)| j == job && slot == minute),
                "{job}'s slot {minute} did not run: {ran:?}"
            );
        }
    }
}
