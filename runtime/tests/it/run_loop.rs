//! The run loop on the core's memory store and a virtual clock: each
//! outcome of the one vocabulary, the panic and time-limit policies,
//! heartbeats, and the policy for an outcome the store does not take.

use std::rc::Rc;
use std::time::Duration;

use cronslot_core::coord::Operator;
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, Fault, Lease, MemoryStore, Trigger,
};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_runtime::http::{HttpFailure, HttpRequest, HttpResponse};
use cronslot_runtime::{
    JobError, Jobs, LocalFuture, Outcome, Platform, RunReport, ServeOptions, VirtualPlatform,
    run_lease, serve,
};
use jiff::Timestamp;

fn at(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn spec(extra: &str) -> Rc<JobSpec> {
    let text = format!("[[job]]\nname = \"job\"\nschedule = \"* * * * *\"\n{extra}\n");
    Rc::new(parse_manifest(&text, "t.toml").unwrap().jobs.remove(0))
}

struct World {
    store: MemoryStore,
    coordinator: Rc<CasCoordinator<MemoryStore>>,
    clock: VirtualPlatform,
    platform: Rc<dyn Platform>,
}

impl World {
    /// A job whose record exists, with the clock at its first slot.
    fn new(spec: &JobSpec) -> World {
        let store = MemoryStore::new();
        let coordinator = Rc::new(CasCoordinator::new(store.clone(), 5));
        let clock = VirtualPlatform::new(at("2026-01-05T00:00:30Z"));
        let created = block_on(coordinator.claim(spec, clock.now(), Trigger::Tick, "w"));
        assert!(matches!(created, Ok(Claim::Idle(_))), "{created:?}");
        clock.set(at("2026-01-05T00:01:00Z"));
        World {
            store,
            coordinator,
            platform: Rc::new(clock.clone()),
            clock,
        }
    }

    fn claim(&self, spec: &JobSpec) -> Lease {
        match block_on(
            self.coordinator
                .claim(spec, self.clock.now(), Trigger::Tick, "w"),
        ) {
            Ok(Claim::Claimed(lease)) => lease,
            other => panic!("{other:?}"),
        }
    }

    fn run(&self, spec: &Rc<JobSpec>, jobs: &Jobs) -> RunReport {
        let lease = self.claim(spec);
        block_on(run_lease(
            &self.coordinator,
            spec,
            lease,
            jobs,
            &self.platform,
        ))
    }
}

#[test]
fn a_success_is_recorded_with_the_runs_result() {
    let spec = spec("");
    let w = World::new(&spec);
    let jobs = Jobs::new().register("job", |ctx| async move {
        assert_eq!(ctx.idempotency_key(), "job@2026-01-05T00:01:00Z");
        assert_eq!((ctx.attempt(), ctx.fence()), (1, 1));
        assert_eq!(ctx.deadline(), at("2026-01-05T00:16:00Z"), "the lease");
        Ok(())
    });
    let report = w.run(&spec, &jobs);
    assert_eq!(report.outcome, Outcome::Succeeded);
    assert_eq!(report.outcome.as_str(), "succeeded");
    assert_eq!(report.error(), None);
    let fields = report.fields();
    assert_eq!(fields["slot"], "job@2026-01-05T00:01:00Z");
    assert_eq!(fields["outcome"], "succeeded");
    let state = block_on(w.coordinator.status(&spec, w.clock.now())).unwrap();
    assert!(state.last_success.is_some() && state.leases.is_empty());
}

#[test]
fn a_panic_is_a_transient_failure_and_a_permanent_error_a_dead_letter() {
    let spec = spec("retry = { max_attempts = 3, backoff = \"10s\" }");
    let w = World::new(&spec);
    let jobs = Jobs::new().register("job", |ctx| async move {
        if ctx.attempt() == 1 {
            panic!("a bug");
        }
        Err(JobError::permanent("bad input"))
    });
    let report = w.run(&spec, &jobs);
    assert!(
        matches!(report.outcome, Outcome::Retrying { .. }),
        "{report:?}"
    );
    assert_eq!(report.outcome.as_str(), "retrying");
    let error = report.job_error.clone().unwrap();
    assert!(!error.is_permanent());
    assert_eq!(error.message(), "the job panicked: a bug");
    w.clock.set(report.retry_at().unwrap());
    let report = w.run(&spec, &jobs);
    assert_eq!(report.outcome, Outcome::Dead);
    assert_eq!(report.error().as_deref(), Some("bad input"));
}

#[test]
fn a_run_past_its_time_limit_is_stopped_and_retried() {
    let spec = spec("retry = { past_next_slot = true }");
    let w = World::new(&spec);
    let jobs = Jobs::new().register_with_timeout("job", Duration::from_secs(90), |_| async {
        std::future::pending::<()>().await;
        Ok(())
    });
    let report = w.run(&spec, &jobs);
    assert!(
        matches!(report.outcome, Outcome::Retrying { .. }),
        "{report:?}"
    );
    assert_eq!(
        report.error().as_deref(),
        Some("timed out after 1m30s and was stopped")
    );
}

#[test]
fn heartbeats_keep_the_lease_of_a_run_longer_than_it() {
    // The lease is one minute; the run may take five: without heartbeats
    // its lease would expire and its outcome be refused.
    let spec = spec("lease = \"1m\"\nretry = { past_next_slot = true }");
    let w = World::new(&spec);
    let jobs = Jobs::new().register_with_timeout("job", Duration::from_secs(300), |_| async {
        std::future::pending::<()>().await;
        Ok(())
    });
    let report = w.run(&spec, &jobs);
    assert!(
        matches!(report.outcome, Outcome::Retrying { .. }),
        "the failure was recorded, so the lease held: {report:?}"
    );
    assert_eq!(
        report.ran_until.duration_since(report.started).as_secs(),
        300
    );
    // A heartbeat every 20 s, each one write.
    assert!(w.store.writes() >= 15, "{}", w.store.writes());
}

#[test]
fn a_superseded_run_is_lease_lost_and_records_nothing() {
    let spec = spec("lease = \"1m\"\nskew_margin = \"1s\"");
    let w = World::new(&spec);
    let stale = w.claim(&spec);
    // By a clock two minutes ahead of this one the lease has expired:
    // that claimer takes the slot's retry, while here the lease looks
    // live and its work starts.
    let newer = match block_on(w.coordinator.claim(
        &spec,
        at("2026-01-05T00:03:00Z"),
        Trigger::Tick,
        "ahead",
    )) {
        Ok(Claim::Claimed(lease)) => lease,
        other => panic!("{other:?}"),
    };
    assert!(newer.fence > stale.fence);
    let jobs = Jobs::new().register("job", |_| async { Ok(()) });
    let report = block_on(run_lease(&w.coordinator, &spec, stale, &jobs, &w.platform));
    assert_eq!(report.outcome, Outcome::LeaseLost);
    assert_eq!(report.outcome.as_str(), "lease_lost");
    assert!(
        report
            .error()
            .unwrap()
            .starts_with("the success was not recorded: refused"),
        "{report:?}"
    );
}

/// A lease that ran out before its work could start (the process was
/// paused between its claim and now) never starts its work: a newer claim
/// may hold the slot with a greater fence.
#[test]
fn a_lease_that_ran_out_before_its_start_does_not_start() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let spec = spec("lease = \"1m\"\nskew_margin = \"1s\"");
    let w = World::new(&spec);
    let stale = w.claim(&spec);
    w.clock.set(at("2026-01-05T00:03:00Z"));
    let started = Arc::new(AtomicUsize::new(0));
    let jobs = {
        let started = Arc::clone(&started);
        Jobs::new().register("job", move |_| {
            started.fetch_add(1, Ordering::SeqCst);
            async { Ok(()) }
        })
    };
    let writes = w.store.writes();
    let report = block_on(run_lease(&w.coordinator, &spec, stale, &jobs, &w.platform));
    assert_eq!(report.outcome, Outcome::LeaseLost);
    assert_eq!(started.load(Ordering::SeqCst), 0, "the work never started");
    assert!(
        report
            .error()
            .unwrap()
            .starts_with("the lease ran out before the run could start"),
        "{report:?}"
    );
    assert_eq!(w.store.writes(), writes, "nothing recorded");
}

#[test]
fn an_outcome_the_store_does_not_take_is_retried_until_the_lease_ends() {
    let spec = spec("lease = \"1m\"\nskew_margin = \"5s\"");
    let w = World::new(&spec);
    let lease = w.claim(&spec);
    let expires = lease.expires_at;
    w.store.inject(&[Fault::Unavailable; 200]);
    let jobs = Jobs::new().register("job", |_| async { Ok(()) });
    let report = block_on(run_lease(&w.coordinator, &spec, lease, &jobs, &w.platform));
    assert_eq!(report.outcome, Outcome::Unrecorded);
    assert!(report.store_error.as_ref().unwrap().is_transient());
    // Tried every 2 s until the lease and its skew margin ran out.
    let gave_up = report.ended.duration_since(expires).as_secs();
    assert!((4..=5).contains(&gave_up), "{gave_up}");
}

#[test]
fn serve_runs_due_slots_and_waits_for_a_retry_due_soon() {
    let spec = spec("retry = { max_attempts = 2, backoff = \"5s\", max_backoff = \"5s\" }");
    let w = World::new(&spec);
    let jobs = Jobs::new().register("job", |ctx| async move {
        if ctx.attempt() == 1 {
            Err(JobError::transient("flaky"))
        } else {
            Ok(())
        }
    });
    let options = ServeOptions {
        owner: "event",
        trigger: Trigger::Tick,
        retry_within: Duration::from_secs(30),
        more_due: None,
    };
    let served = block_on(serve(&w.coordinator, &spec, &jobs, &w.platform, &options));
    let outcomes: Vec<&str> = served.runs.iter().map(|r| r.outcome.as_str()).collect();
    assert_eq!(outcomes, ["retrying", "succeeded"]);
    assert!(
        w.clock.slept() <= Duration::from_secs(5),
        "{:?}",
        w.clock.slept()
    );
    assert!(matches!(
        served.idle,
        Some((Trigger::Tick, cronslot_core::coord::Idle::NothingDue { .. }))
    ));
    // Without the wait, the failed run ends the call.
    w.clock.set(at("2026-01-05T00:02:00Z"));
    let options = ServeOptions {
        retry_within: Duration::ZERO,
        ..options
    };
    let served = block_on(serve(&w.coordinator, &spec, &jobs, &w.platform, &options));
    assert_eq!(served.runs.len(), 1);
    assert!(served.idle.is_none());
}

/// The network of an http job: answers 503 with a long body.
struct Unavailable(std::cell::RefCell<Vec<HttpRequest>>);

impl Platform for Unavailable {
    fn name(&self) -> &'static str {
        "a test platform"
    }
    fn now(&self) -> Timestamp {
        at("2026-01-05T00:01:00Z")
    }
    fn sleep(&self, _: Duration) -> LocalFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
    fn send_http(
        &self,
        request: HttpRequest,
    ) -> LocalFuture<'static, Result<HttpResponse, HttpFailure>> {
        self.0.borrow_mut().push(request);
        Box::pin(std::future::ready(Ok(HttpResponse {
            status: 503,
            body: format!("down for maintenance {}", "x".repeat(400)).into_bytes(),
        })))
    }
}

#[test]
fn an_http_job_sends_the_slots_identity_and_judges_the_status() {
    let spec = spec(
        "http = { url = \"https://example.com/hook\", method = \"POST\", headers = { X-Team = \"billing\" } }",
    );
    let w = World::new(&spec);
    let lease = w.claim(&spec);
    let network = Rc::new(Unavailable(Default::default()));
    let platform: Rc<dyn Platform> = network.clone();
    let report = block_on(run_lease(
        &w.coordinator,
        &spec,
        lease,
        &Jobs::new(),
        &platform,
    ));
    assert!(matches!(report.outcome, Outcome::Retrying { .. }));
    let error = report.error().unwrap();
    assert!(
        error.starts_with("HTTP 503 from https://example.com/hook: down for maintenance xxx"),
        "{error}"
    );
    assert!(error.len() <= 340, "{}", error.len());
    let sent = network.0.borrow();
    let headers: Vec<(&str, &str)> = sent[0]
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        headers,
        [
            ("X-Team", "billing"),
            ("Idempotency-Key", "job@2026-01-05T00:01:00Z"),
            ("Cronslot-Fence", "1"),
            ("Cronslot-Attempt", "1"),
            ("Cronslot-Scheduled-At", "2026-01-05T00:01:00Z"),
            ("User-Agent", cronslot_runtime::http::USER_AGENT),
            ("Content-Length", "0"),
        ]
    );
}

#[test]
fn the_registry_is_checked_against_the_manifest_and_the_platform() {
    let manifest = parse_manifest(
        r#"
[[job]]
name = "report"
schedule = "0 * * * *"

[[job]]
name = "cleanup"
schedule = "*/5 * * * *"
command = ["./cleanup.sh"]

[[job]]
name = "hook"
schedule = "0 * * * *"
http = { url = "https://example.com/" }
"#,
        "m.toml",
    )
    .unwrap();
    let jobs = Jobs::new()
        .register("repot", |_| async { Ok(()) })
        .register("hook", |_| async { Ok(()) })
        .register("hook", |_| async { Ok(()) });
    let platform = VirtualPlatform::new(at("2026-01-05T00:00:00Z"));
    let e = jobs.check(&manifest.jobs, &platform).unwrap_err();
    assert_eq!(
        e.problems(),
        [
            "job \"hook\" is registered more than once; register each job's function once",
            "job \"report\" runs a Rust function, but none is registered under that name; register one (Jobs::register) or give the job an http request in the manifest",
            "job \"cleanup\" is a command job, and a virtual platform has no processes to run it; use a Rust function or an http job",
            "job \"hook\" is an http job, but a function is also registered under its name",
            "a function is registered for \"repot\", but the manifest has no such job",
        ]
    );
    assert!(
        e.to_string()
            .starts_with("the jobs do not match the manifest:\n- ")
    );
}

/// A slot of a dynamic job's schedule reaches an http job as
/// `Cronslot-Key` and a JSON body with the schedule's payload, whatever
/// the manifest's own `Content-Type`; the slot id names the schedule.
#[test]
fn an_http_schedule_slot_sends_its_key_and_payload() {
    use cronslot_core::coord::Schedules;
    use cronslot_core::coord::decide::Precondition;
    use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
    let template = parse_manifest(
        "[[job]]\nname = \"remind\"\ndynamic = true\n\
         http = { url = \"https://example.com/remind\", headers = { Content-Type = \"text/plain\" } }\n",
        "t.toml",
    )
    .unwrap()
    .templates
    .remove(0);
    let coordinator = Rc::new(CasCoordinator::new(MemoryStore::new(), 3));
    let key = ScheduleKey::new("user:42").unwrap();
    let created = at("2026-01-05T00:00:30Z");
    block_on(
        coordinator.put_schedule(
            &template,
            &key,
            ScheduleSpec::from_json(
                r#"{"cron": "* * * * *", "payload": {"user": 42, "text": "stand up"}}"#,
            )
            .unwrap(),
            Precondition::None,
            created,
        ),
    )
    .unwrap();
    let now = at("2026-01-05T00:01:00Z");
    let spec = Rc::new(
        block_on(coordinator.schedule_for_claim(&template, &key, now))
            .unwrap()
            .unwrap(),
    );
    let Claim::Claimed(lease) =
        block_on(coordinator.claim(&spec, now, Trigger::Tick, "t")).unwrap()
    else {
        panic!("the 00:01 slot is due");
    };
    let network = Rc::new(Unavailable(Default::default()));
    let platform: Rc<dyn Platform> = network.clone();
    block_on(run_lease(
        &coordinator,
        &spec,
        lease,
        &Jobs::new(),
        &platform,
    ));
    let sent = network.0.borrow();
    let header = |name: &str| {
        sent[0]
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(header("Cronslot-Key"), ["user:42"]);
    assert_eq!(
        header("Content-Type"),
        ["application/json"],
        "the body is cronslot's"
    );
    assert_eq!(
        header("Idempotency-Key"),
        ["remind/user:42@2026-01-05T00:01:00Z"]
    );
    let body = sent[0].body.as_deref().unwrap();
    assert_eq!(header("Content-Length"), [body.len().to_string().as_str()]);
    let doc: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(
        doc,
        serde_json::json!({
            "job": "remind",
            "key": "user:42",
            "slot": "remind/user:42@2026-01-05T00:01:00Z",
            "payload": {"user": 42, "text": "stand up"},
        })
    );
}
