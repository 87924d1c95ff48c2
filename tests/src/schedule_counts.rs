//! What a tick costs among many schedules of a dynamic job (issue 26,
//! "cost follows due work"), written once for every store: the wake index
//! names only the due schedules' records, so a tick with 10 due slots
//! among `n` schedules costs the mark's read and write, one read of each
//! due schedule (its claim starts from it) and each run's two writes: 32
//! requests (statements on SQL stores), whatever `n`. A tick with nothing
//! due costs the mark's two.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cronslot_core::coord::decide::{self, Precondition, ScheduleWrite};
use cronslot_core::coord::{
    CasCoordinator, EffectLedger, MAX_SCHEDULE_BATCH, SchedulePut, Schedules, StateStore, TickIndex,
};
use cronslot_core::manifest::{JobSpec, JobTemplate, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_runtime::{Jobs, Platform, TickOptions, TickPlan, VirtualPlatform, tick};
use jiff::Timestamp;

/// How many of the schedules are due in the tick measured.
pub const DUE: usize = 10;

/// The most requests a tick with [`DUE`] due slots may cost (the issue's
/// bound); the exact figure is asserted too.
pub const DUE_TICK_BOUND: u64 = 40;

/// Creates `n` schedules of the dynamic job `{ns}-many` ([`DUE`] of them
/// due at 10:00, the rest daily at 03:00), ticks before 10:00 (nothing
/// due) and after it (the due ones), and checks what each tick cost by
/// `counted` (requests so far) and that each due schedule ran
/// exactly once. `n` must be at least [`DUE`]. Returns what it measured
/// (the benchmark `schedule_tick_costs` prints it for 100,000).
/// `woken_read`: what reading a woken schedule's record costs the tick, 1
/// request, or 0 where the store returns the records with the index read
/// (PostgreSQL).
pub async fn tick_costs_follow_due_work<S>(
    store: &S,
    ns: &str,
    n: usize,
    woken_read: u64,
    counted: impl Fn() -> u64,
) -> TickCosts
where
    S: StateStore + EffectLedger + TickIndex + Clone + 'static,
{
    assert!(n >= DUE, "at least {DUE} schedules");
    let text = format!("[[job]]\nname = \"{ns}-many\"\ndynamic = true\nlease = \"5m\"\n");
    let manifest = parse_manifest(&text, "many.toml").unwrap();
    let template = Rc::new(manifest.templates[0].clone());
    let created = "2030-01-07T09:58:00Z".parse::<Timestamp>().unwrap();
    let due =
        ScheduleSpec::from_json(r#"{"cron": "0 10 * * *", "payload": {"due": true}}"#).unwrap();
    let later = ScheduleSpec::from_json(r#"{"cron": "0 3 * * *"}"#).unwrap();
    let writer = CasCoordinator::new(store.clone(), 7);
    let loading = Instant::now();
    // Spread the due ones over the key space.
    let is_due = |i: usize| i % (n / DUE) == 0 && i / (n / DUE) < DUE;
    // Written in bulk, a thousand a request.
    for start in (0..n).step_by(MAX_SCHEDULE_BATCH) {
        let puts = (start..n.min(start + MAX_SCHEDULE_BATCH))
            .map(|i| SchedulePut {
                key: ScheduleKey::new(format!("tenant-{i:07}")).unwrap(),
                spec: if is_due(i) {
                    due.clone()
                } else {
                    later.clone()
                },
                precondition: Precondition::None,
            })
            .collect();
        for written in writer.put_schedules(&template, puts, created).await {
            assert!(
                matches!(written, Ok(ScheduleWrite::Created { version: 1 })),
                "{written:?}"
            );
        }
    }

    let loaded_in = loading.elapsed();

    let ran: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let jobs = {
        let ran = Arc::clone(&ran);
        Jobs::new().register(&format!("{ns}-many"), move |ctx| {
            let ran = Arc::clone(&ran);
            async move {
                assert_eq!(ctx.payload(), Some(r#"{"due": true}"#));
                ran.lock().unwrap().push(ctx.slot_id().to_string());
                Ok(())
            }
        })
    };
    let ticks = Ticks::new(store, template, jobs, created);
    let tick_at = async |now: &str| {
        let before = counted();
        ticks.at(now.parse().unwrap()).await;
        counted() - before
    };
    // The store's first tick writes its mark.
    tick_at("2030-01-07T09:58:30Z").await;
    // The index's earliest wake after the idle tick's instant: the due
    // schedules' 10:00, where the store reads it with the index.
    let ten: Timestamp = "2030-01-07T10:00:00Z".parse().unwrap();
    let next_wake = store
        .tick_start("2030-01-07T09:59:30Z".parse().unwrap(), 1)
        .await
        .expect("the index")
        .next_wake;
    assert!(next_wake.is_none_or(|t| t == ten), "{next_wake:?}");
    let idle_started = Instant::now();
    let idle = tick_at("2030-01-07T09:59:30Z").await;
    let idle_time = idle_started.elapsed();
    assert_eq!(idle, 2, "a tick with nothing due among {n} schedules");
    let busy = tick_at("2030-01-07T10:00:05Z").await;
    let mut slots = std::mem::take(&mut *ran.lock().unwrap());
    slots.sort();
    let expected: Vec<String> = (0..n)
        .filter(|i| is_due(*i))
        .map(|i| format!("{ns}-many/tenant-{i:07}@2030-01-07T10:00:00Z"))
        .collect();
    assert_eq!(slots, expected, "each due schedule once");
    assert_eq!(
        busy,
        2 + (2 + woken_read) * DUE as u64,
        "a tick with {DUE} due among {n} schedules: the mark, each due record once (or \
         with the index read), each run's claim and completion"
    );
    assert!(busy <= DUE_TICK_BOUND);
    let again = tick_at("2030-01-07T10:01:05Z").await;
    assert_eq!(again, 2, "after the runs, nothing is due again");
    TickCosts {
        loaded_in,
        idle,
        idle_time,
        busy,
        next_wake,
    }
}

/// Ticks of one dynamic job's schedules on a virtual clock, as a runner
/// serves them: the runtime's tick over a coordinator of the store, the
/// job's function registered, and whether a job may have more due decided
/// on the record the claim wrote, without reading it again (as the runner
/// and the Lambda do).
struct Ticks<'s, S> {
    store: &'s S,
    plan: TickPlan,
    clock: VirtualPlatform,
    platform: Rc<dyn Platform>,
    coordinator: Rc<CasCoordinator<S>>,
    jobs: Jobs,
}

impl<'s, S> Ticks<'s, S>
where
    S: StateStore + EffectLedger + TickIndex + Clone + 'static,
{
    fn new(store: &'s S, template: Rc<JobTemplate>, jobs: Jobs, start: Timestamp) -> Self {
        let clock = VirtualPlatform::new(start);
        Ticks {
            store,
            plan: TickPlan::new(Vec::new(), |_| true).with_templates(vec![template]),
            platform: Rc::new(clock.clone()),
            clock,
            coordinator: Rc::new(CasCoordinator::new(store.clone(), 8)),
            jobs,
        }
    }

    /// One tick at `now`, which must serve every woken record and move
    /// the mark.
    async fn at(&self, now: Timestamp) {
        self.clock.set(now);
        let known = Rc::clone(&self.coordinator);
        let more_due = move |spec: &JobSpec, now: Timestamp| {
            known
                .known(&spec.record_name())
                .is_none_or(|r| decide::more_due(spec, &r.value, now))
        };
        let options = TickOptions {
            owner: "counts",
            max_jobs: None,
            retry_within: Duration::ZERO,
            more_due: Some(&more_due),
        };
        let report = tick(
            &self.plan,
            &self.coordinator,
            self.store,
            &self.jobs,
            &self.platform,
            &options,
        )
        .await
        .unwrap();
        assert!(report.unresolved.is_empty(), "{:?}", report.unresolved);
        assert!(report.mark_error.is_none(), "{:?}", report.mark_error);
    }
}

/// What [`tick_costs_follow_due_work`] measured.
#[derive(Debug, Clone, Copy)]
pub struct TickCosts {
    /// How long writing the schedules took (in bulk, 1,000 a request).
    pub loaded_in: Duration,
    /// The requests of a tick with nothing due.
    pub idle: u64,
    /// How long that tick took.
    pub idle_time: Duration,
    /// The index's next wake as that tick's read gave it: 10:00, or
    /// `None` where the store does not read it (DynamoDB).
    pub next_wake: Option<Timestamp>,
    /// The requests of a tick with [`DUE`] due.
    pub busy: u64,
}

/// What keyed runs cost (issue 27), written once for every store: an
/// enqueue at most one read and one write, a duplicate enqueue one read
/// and no write, a run one read and two writes (the tick reads the woken
/// record, the claim and the completion write it), a status read one
/// read. `counted` gives the requests so far as (reads, writes); a store
/// that counts only statements (SQLite) gives its total as reads and
/// passes `split: false`, and then the totals are asserted. `woken_read`
/// as for [`tick_costs_follow_due_work`]: where the index read returns the
/// woken record, a run costs no read of its own.
pub async fn keyed_run_costs<S>(
    store: &S,
    ns: &str,
    woken_read: u64,
    counted: impl Fn() -> (u64, u64),
    split: bool,
) where
    S: StateStore + EffectLedger + TickIndex + Clone + 'static,
{
    use cronslot_core::coord::Runs;
    use cronslot_core::coord::decide::Enqueued;
    use cronslot_core::schedules::{RunRequest, RunStatus};

    let name = format!("{ns}-runs");
    let text = format!("[[job]]\nname = \"{name}\"\ndynamic = true\nlease = \"5m\"\n");
    let manifest = parse_manifest(&text, "runs.toml").unwrap();
    let template = Rc::new(manifest.templates[0].clone());
    let key = ScheduleKey::new("order-123").unwrap();
    let request = RunRequest::from_json(r#"{"payload": {"order": 123}}"#).unwrap();
    let start = "2030-01-07T09:58:10Z".parse::<Timestamp>().unwrap();
    let check = |what: &str, before: (u64, u64), expected: (u64, u64)| {
        let now = counted();
        let cost = (now.0 - before.0, now.1 - before.1);
        if split {
            assert_eq!(cost, expected, "{what}: (reads, writes)");
        } else {
            assert_eq!(
                cost.0 + cost.1,
                expected.0 + expected.1,
                "{what}: requests (statements)"
            );
        }
    };

    let ran: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let jobs = {
        let ran = Arc::clone(&ran);
        Jobs::new().register(&name, move |ctx| {
            let ran = Arc::clone(&ran);
            async move {
                assert_eq!(ctx.payload(), Some(r#"{"order": 123}"#));
                ran.lock().unwrap().push(ctx.idempotency_key());
                Ok(())
            }
        })
    };
    let ticks = Ticks::new(store, Rc::clone(&template), jobs, start);
    let tick_at = async |now: Timestamp| ticks.at(now).await;
    // The store's first tick writes its mark; the next, with nothing due
    // and the mark younger than 30 s (`MARK_REFRESH`), costs the mark's
    // read alone.
    tick_at(start).await;
    let before = counted();
    tick_at("2030-01-07T09:58:20Z".parse().unwrap()).await;
    check(
        "a tick with nothing due, 10 s after the last",
        before,
        (1, 0),
    );

    let writer = CasCoordinator::new(store.clone(), 7);
    let enqueued_at = "2030-01-07T09:58:30Z".parse::<Timestamp>().unwrap();
    let before = counted();
    let created = writer
        .enqueue_run(&template, &key, &request, enqueued_at)
        .await
        .unwrap();
    assert!(matches!(created, Enqueued::Created(_)), "{created:?}");
    check("an enqueue", before, (1, 1));
    let before = counted();
    let again = writer
        .enqueue_run(&template, &key, &request, enqueued_at)
        .await
        .unwrap();
    assert!(matches!(again, Enqueued::Existing(_)), "{again:?}");
    check("a duplicate enqueue", before, (1, 0));

    let before = counted();
    tick_at("2030-01-07T09:58:40Z".parse().unwrap()).await;
    check(
        "a tick that runs the keyed run: the mark's read and write, the run's read (unless the \
         index read returned its record) and two writes",
        before,
        (1 + woken_read, 3),
    );
    assert_eq!(
        *ran.lock().unwrap(),
        [format!("{name}/order-123@2030-01-07T09:58:00Z")],
        "the run ran once, its idempotency key the run id"
    );
    let before = counted();
    let view = writer
        .run_status(&template, &key, "2030-01-07T09:58:50Z".parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(view.status, RunStatus::Succeeded);
    check("a status read", before, (1, 0));
    let before = counted();
    tick_at("2030-01-07T09:59:10Z".parse().unwrap()).await;
    check(
        "a tick after the run: nothing due again, the mark 30 s old and moved",
        before,
        (1, 1),
    );

    // The key is remembered 30 days after the run ended; then the record
    // wakes, and the tick that reads it deletes it: the sweep costs the
    // woken record's read and one conditional delete.
    let forget = view.remembered_until.expect("the run ended");
    let before = counted();
    tick_at(
        forget
            .checked_sub(jiff::SignedDuration::from_secs(60))
            .unwrap(),
    )
    .await;
    check("a tick before the key is forgotten", before, (1, 1));
    let still = writer
        .enqueue_run(
            &template,
            &key,
            &request,
            forget
                .checked_sub(jiff::SignedDuration::from_secs(60))
                .unwrap(),
        )
        .await
        .unwrap();
    assert!(
        matches!(still, Enqueued::Existing(_)),
        "remembered: {still:?}"
    );
    let before = counted();
    tick_at(
        forget
            .checked_add(jiff::SignedDuration::from_secs(5))
            .unwrap(),
    )
    .await;
    check(
        "the tick that forgets the key: the mark's read and write, the record's read (unless \
         the index read returned it) and delete",
        before,
        (1 + woken_read, 2),
    );
    assert_eq!(
        *ran.lock().unwrap(),
        [format!("{name}/order-123@2030-01-07T09:58:00Z")],
        "forgetting runs nothing"
    );
    let page = store
        .records_page(&format!("{name}/"), None, 10)
        .await
        .unwrap();
    assert!(page.is_empty(), "the record is deleted: {page:?}");
    assert_eq!(
        writer
            .run_status(
                &template,
                &key,
                forget
                    .checked_add(jiff::SignedDuration::from_secs(6))
                    .unwrap()
            )
            .await
            .unwrap(),
        None,
        "a forgotten key names no run"
    );
}
