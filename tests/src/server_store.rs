//! What the server stores' tests share, written once: the tests whose
//! body is the same on PostgreSQL and Redis (and, where a test needs no
//! URL and no server clock, on DynamoDB) up to the store, generic over it,
//! and called from each store's own test files with that store's setup.
//!
//! What is particular to a store comes in two ways:
//! - a [`Harness`], which each store's tests implement on a type of their
//!   own: how to reach the binary's shared server, how to parse a URL
//!   without reading the environment, how to count the store's requests;
//! - arguments, for the figures and phrases that legitimately differ (what
//!   opening costs, what a refusal says, how the store checks that nothing
//!   was written).
//!
//! Every test runs against a real server, as the store's own tests do: a
//! store that breaks fails it. The tests that change a server server-wide
//! (a crash here) take a private server of the test's own, never the
//! shared one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fmt;
use std::future::Future;
use std::time::{Duration, Instant};

use cronslot_core::conformance::{at, job};
use cronslot_core::coord::decide::{Precondition, ScheduleWrite};
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, EffectBegin, EffectFinish, EffectLedger, JobState, Lease,
    LocationError, PutResult, StateStore, StoreError, StoreErrorKind, TickIndex, Trigger,
};
use cronslot_core::coord::{ScheduleQuery, Schedules};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_store_kit::{JudgeClock, OpenOptions, RequestCounts, UrlStore};
use jiff::{SignedDuration, Timestamp};

/// What the shared tests need to know of one server store.
pub trait Harness {
    /// The store.
    type Store: UrlStore + fmt::Debug;

    /// The namespace of the tests' job specs (`pg`, `redis`).
    const NS: &'static str;

    /// What a tick's read of a woken schedule's record costs: 1 request,
    /// or 0 where the store returns the records with the index read.
    const WOKEN_READ: u64;

    /// The URL of a new, empty place on the test binary's shared server
    /// (a schema, a key prefix), named after `tag`.
    fn fresh_url(tag: &str) -> String;

    /// Parses `url`, reading the variables the store reads for what the
    /// URL leaves out (`PGPASSWORD`, `REDISCLI_AUTH`) from `env` only.
    fn parse_with_env(
        url: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<<Self::Store as UrlStore>::Location, LocationError>;

    /// The store's own `connect(url)`: parsing (with the environment)
    /// and opening.
    fn connect(url: &str) -> impl Future<Output = Result<Self::Store, StoreError>>;

    /// The requests the store (and its clones) sent so far.
    fn requests(store: &Self::Store) -> RequestCounts;

    /// The same store, judging leases by `judge`.
    fn judge_by(store: Self::Store, judge: JudgeClock) -> Self::Store;
}

/// A private server of one test, which it may crash and start again.
pub trait Crashable {
    /// Kills the server at once (nothing flushed beyond what it already
    /// made durable).
    fn crash(&self);

    /// Starts it again on the same port and data.
    fn restart(&self);
}

impl Crashable for crate::postgres::Server {
    fn crash(&self) {
        crate::postgres::Server::crash(self);
    }

    fn restart(&self) {
        crate::postgres::Server::restart(self);
    }
}

impl Crashable for crate::redis::Server {
    fn crash(&self) {
        crate::redis::Server::crash(self);
    }

    fn restart(&self) {
        crate::redis::Server::restart(self);
    }
}

// ------------------------------------------------------------- helpers ----

/// Runs `f` on a fresh current-thread runtime (a server store's work
/// happens on its own thread; this one only waits).
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(f)
}

/// Opens `url` with `options`, reading no environment variable (a
/// password in the environment must not change a test).
pub async fn open<H: Harness>(url: &str, options: OpenOptions) -> Result<H::Store, StoreError> {
    let location =
        H::parse_with_env(url, &|_| None).unwrap_or_else(|e| panic!("test URL {url}: {e}"));
    H::Store::open_at(&location, options).await
}

/// A store in a new place on the shared server, judging leases by the
/// caller's clock (the virtual time of the tests).
pub fn fresh_store<H: Harness>(tag: &str) -> H::Store {
    block_on(open::<H>(
        &H::fresh_url(tag),
        OpenOptions::default().judge(JudgeClock::Caller),
    ))
    .expect("opening a fresh store")
}

/// A claim that must get an answer.
pub async fn claim<C: Coordinator>(
    c: &C,
    spec: &JobSpec,
    now: Timestamp,
    trigger: Trigger,
    owner: &str,
) -> Claim {
    c.claim(spec, now, trigger, owner)
        .await
        .unwrap_or_else(|e| panic!("claim of {} at {now}: {e}", spec.name.as_str()))
}

/// The lease of a claim that must have claimed.
pub fn lease(c: Claim) -> Lease {
    match c {
        Claim::Claimed(lease) => lease,
        Claim::Idle(idle) => panic!("expected a claim, got idle: {idle:?}"),
    }
}

/// A claim that must have found nothing to run.
pub fn idle(c: Claim) {
    assert!(matches!(c, Claim::Idle(_)), "expected idle, got {c:?}");
}

/// Reads and writes of a count.
pub fn rw(d: RequestCounts) -> (u64, u64) {
    (d.reads, d.writes)
}

/// A job's record as the tests write it: created at `seconds`.
pub fn state(job: &str, seconds: i64) -> JobState {
    JobState::new(job, "0000000000000000", at(seconds), false)
}

/// Retries `f` until it succeeds, at most `limit` (the first operations
/// after a restart or a cut may find the old connection gone).
pub fn eventually<T, E: fmt::Display>(limit: Duration, mut f: impl FnMut() -> Result<T, E>) -> T {
    let start = Instant::now();
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if start.elapsed() < limit => {
                eprintln!("retrying: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("still failing after {limit:?}: {e}"),
        }
    }
}

/// A loopback port nothing listens on (as far as one can tell): where a
/// server is unreachable.
pub use crate::local_server::free_port;

// ------------------------------------------------------------- secrets ----

/// The password the error tests use: it must never show.
pub const SECRET: &str = "Qz7-kumquat-Secret-91";
/// A wrong password: it must never show either.
pub const WRONG: &str = "Wx3-wrong-Guess-44";

/// Fails if [`SECRET`] or [`WRONG`] shows in any of `texts`.
pub fn assert_hidden(what: &str, texts: &[String]) {
    for text in texts {
        for secret in [SECRET, WRONG] {
            assert!(
                !text.contains(secret),
                "{what}: the password shows in: {text}"
            );
        }
    }
}

/// Every way an error is shown: `Display`, `Debug`, its message, and the
/// same of a clone.
pub fn shown(e: &StoreError) -> Vec<String> {
    let store: StoreError = e.clone();
    vec![
        e.to_string(),
        format!("{e:?}"),
        e.message().to_string(),
        store.to_string(),
        format!("{store:?}"),
    ]
}

// --------------------------------------------------------------- store ----

/// The figures of docs/performance.md, on any store whose reads and
/// writes `counted` tells (totals so far): creating a job's record is one
/// read and one write; a run one read and two conditional writes; a
/// duplicate delivery, after the run or while it holds its lease, one
/// read and no write; an effect's begin through the coordinator two reads
/// (the job's record, to check the lease, and the entry) and one write,
/// its finish one read and one write; the ledger's own begin one read and
/// one write, and asking again for an effect already done one read; a
/// lost compare-and-set, a lost creation and a write expecting a record
/// that is not there one write each, which hands back what is there.
pub async fn request_counts_per_step<S>(store: &S, ns: &str, counted: impl Fn() -> (u64, u64))
where
    S: StateStore + EffectLedger + Clone,
{
    let since = |s: (u64, u64)| {
        let now = counted();
        (now.0 - s.0, now.1 - s.1)
    };
    let a = CasCoordinator::new(store.clone(), 1);
    let b = CasCoordinator::new(store.clone(), 2);
    let spec = job(ns, "counted", "schedule = \"* * * * *\"\nlease = \"1m\"");
    let name = spec.name.as_str().to_string();
    let hold = Duration::from_secs(30);

    // Creating the record: the claim reads (nothing there) and inserts.
    let s = counted();
    idle(claim(&a, &spec, at(0), Trigger::Tick, "a").await);
    assert_eq!(since(s), (1, 1), "creation");

    // One full run: claim (read + write) and completion (write).
    let s = counted();
    let run = lease(claim(&a, &spec, at(61), Trigger::Tick, "a").await);
    a.complete(&spec, run.fence, None, at(62)).await.unwrap();
    assert_eq!(since(s), (1, 2), "a run");

    // A duplicate delivery of the slot that ran: one read, no write.
    let s = counted();
    idle(claim(&b, &spec, at(63), Trigger::Slot(run.slot), "b").await);
    assert_eq!(since(s), (1, 0), "a duplicate after the run");

    // A duplicate while the run holds its lease: one read, no write.
    let live = lease(claim(&a, &spec, at(121), Trigger::Tick, "a").await);
    let s = counted();
    idle(claim(&b, &spec, at(122), Trigger::Tick, "b").await);
    assert_eq!(since(s), (1, 0), "a duplicate during the run");

    // An effect through the coordinator: begin reads the job's record
    // (is the lease live?) and the ledger entry, and writes the entry;
    // finish reads and writes the entry.
    let key = format!("{name}@{}/send", live.slot);
    let s = counted();
    let begun = a
        .begin_effect(&spec, &key, "a", live.fence, at(123), hold)
        .await
        .unwrap();
    assert_eq!(begun, EffectBegin::Acquired);
    assert_eq!(since(s), (2, 1), "begin_effect");
    let s = counted();
    let finished = a
        .finish_effect(&key, live.fence, "sent", at(124))
        .await
        .unwrap();
    assert_eq!(finished, EffectFinish::Recorded);
    assert_eq!(since(s), (1, 1), "finish_effect");

    // The store's ledger alone: one read and one write per begin and per
    // finish.
    let other = format!("{name}@{}/other", live.slot);
    let s = counted();
    let begun = store
        .begin_effect(&other, "a", live.fence, at(125), hold)
        .await
        .unwrap();
    assert_eq!(begun, EffectBegin::Acquired);
    assert_eq!(since(s), (1, 1), "the ledger's begin");
    let s = counted();
    let finished = store
        .finish_effect(&other, live.fence, "done", at(125))
        .await
        .unwrap();
    assert_eq!(finished, EffectFinish::Recorded);
    assert_eq!(since(s), (1, 1), "the ledger's finish");
    // Asking again for an effect already done: one read, no write.
    let s = counted();
    let again = store
        .begin_effect(&key, "b", live.fence + 1, at(126), hold)
        .await
        .unwrap();
    assert_eq!(
        again,
        EffectBegin::AlreadyDone {
            result: "sent".into()
        }
    );
    assert_eq!(since(s), (1, 0), "an effect already done");

    // A lost compare-and-set hands back the current record in the same
    // request: one write, no read.
    let current = store.get(&name).await.unwrap().unwrap();
    let s = counted();
    let lost = store
        .put(&name, &current.value, Some(current.version - 1))
        .await
        .unwrap();
    assert_eq!(lost, PutResult::Conflict(Some(Box::new(current.clone()))));
    assert_eq!(since(s), (0, 1), "a lost write");
    // And a lost creation too.
    let s = counted();
    let lost = store.put(&name, &current.value, None).await.unwrap();
    assert_eq!(lost, PutResult::Conflict(Some(Box::new(current))));
    assert_eq!(since(s), (0, 1), "a lost creation");
    // A write that expects a record where there is none: nothing to hand
    // back.
    let s = counted();
    let missing = store
        .put("nobody", &state("nobody", 0), Some(3))
        .await
        .unwrap();
    assert_eq!(missing, PutResult::Conflict(None));
    assert_eq!(since(s), (0, 1), "no record");
    assert_eq!(store.get("nobody").await.unwrap(), None);

    schedule_request_counts(store, ns, &counted).await;
}

/// What writing a dynamic job's schedules costs (issue 26): creating one,
/// one read and one write; upserting the same spec again, one read and no
/// write; a change, one read and one write; a run of a schedule, as a
/// job's (one read, two writes); a delete, one read and one write.
async fn schedule_request_counts<S>(store: &S, ns: &str, counted: &impl Fn() -> (u64, u64))
where
    S: StateStore + EffectLedger + Clone,
{
    let since = |s: (u64, u64)| {
        let now = counted();
        (now.0 - s.0, now.1 - s.1)
    };
    let text = format!(
        "[[job]]\nname = \"{ns}-tenants\"\ndynamic = true\ncommand = [\"true\"]\nlease = \"1m\"\n"
    );
    let template = parse_manifest(&text, "counts.toml")
        .unwrap()
        .templates
        .remove(0);
    let key = ScheduleKey::new("tenant-1").unwrap();
    let spec = |json: &str| ScheduleSpec::from_json(json).unwrap();
    let c = CasCoordinator::new(store.clone(), 3);
    let hourly = r#"{"cron":"0 * * * *","payload":{"plan":"pro"}}"#;

    let s = counted();
    let w = c
        .put_schedule(&template, &key, spec(hourly), Precondition::None, at(0))
        .await
        .unwrap();
    assert_eq!(w, ScheduleWrite::Created { version: 1 });
    assert_eq!(since(s), (1, 1), "creating a schedule");

    let s = counted();
    let w = c
        .put_schedule(&template, &key, spec(hourly), Precondition::None, at(1))
        .await
        .unwrap();
    assert_eq!(w, ScheduleWrite::Unchanged { version: 1 });
    assert_eq!(since(s), (1, 0), "an unchanged upsert");

    let changed = r#"{"cron":"30 * * * *","payload":{"plan":"pro"}}"#;
    let s = counted();
    let w = c
        .put_schedule(
            &template,
            &key,
            spec(changed),
            Precondition::Version(1),
            at(2),
        )
        .await
        .unwrap();
    assert_eq!(w, ScheduleWrite::Changed { version: 2 });
    assert_eq!(since(s), (1, 1), "a change");

    let runs = template.for_schedule(&key, &spec(changed)).unwrap();
    let s = counted();
    let run = lease(claim(&c, &runs, at(30 * 60 + 1), Trigger::Tick, "a").await);
    c.complete(&runs, run.fence, None, at(30 * 60 + 2))
        .await
        .unwrap();
    assert_eq!(since(s), (1, 2), "a run of a schedule");

    let s = counted();
    let w = c
        .delete_schedule(&template, &key, Precondition::None, at(30 * 60 + 3))
        .await
        .unwrap();
    assert_eq!(w, ScheduleWrite::Deleted { version: 3 });
    assert_eq!(since(s), (1, 1), "a delete");
}

/// What a page of a schedule listing costs on a store that pages in name
/// order (SQLite, PostgreSQL, Redis): one read, whatever the page holds,
/// and one for the last page too; nothing is written.
pub async fn a_listing_page_is_one_read<S>(store: &S, ns: &str, counted: impl Fn() -> (u64, u64))
where
    S: StateStore + EffectLedger + Clone,
{
    let since = |s: (u64, u64)| {
        let now = counted();
        (now.0 - s.0, now.1 - s.1)
    };
    let text = format!("[[job]]\nname = \"{ns}-listed\"\ndynamic = true\ncommand = [\"true\"]\n");
    let template = parse_manifest(&text, "counts.toml")
        .unwrap()
        .templates
        .remove(0);
    let c = CasCoordinator::new(store.clone(), 3);
    for i in 0..5 {
        let key = ScheduleKey::new(format!("k-{i}")).unwrap();
        let spec = ScheduleSpec::from_json(r#"{"cron":"0 9 * * *"}"#).unwrap();
        c.put_schedule(&template, &key, spec, Precondition::None, at(0))
            .await
            .unwrap();
    }
    let query = |after: Option<&str>| ScheduleQuery {
        limit: 3,
        after: after.map(str::to_string),
        ..ScheduleQuery::default()
    };
    let s = counted();
    let page = c.list_schedules(&template, &query(None)).await.unwrap();
    assert_eq!(
        (page.schedules.len(), page.cursor.as_deref()),
        (3, Some("k-2"))
    );
    assert_eq!(since(s), (1, 0), "a full page");
    let s = counted();
    let page = c
        .list_schedules(&template, &query(Some("k-2")))
        .await
        .unwrap();
    assert_eq!((page.schedules.len(), page.cursor.as_deref()), (2, None));
    assert_eq!(since(s), (1, 0), "the last page");
}

/// [`schedule_counts::tick_costs_follow_due_work`] with `n` schedules on a
/// fresh store of the shared server: a tick with 10 due among them costs
/// 32 requests (22 where the index read returns the records), one with
/// nothing due 2.
///
/// [`schedule_counts::tick_costs_follow_due_work`]: crate::schedule_counts::tick_costs_follow_due_work
pub fn tick_costs_among_schedules<H: Harness>(n: usize) {
    let store = block_on(open::<H>(
        &H::fresh_url("schedule_ticks"),
        OpenOptions::default().judge(JudgeClock::Caller),
    ))
    .unwrap();
    let counter = store.clone();
    let costs = block_on(crate::schedule_counts::tick_costs_follow_due_work(
        &store,
        H::NS,
        n,
        H::WOKEN_READ,
        move || {
            let (reads, writes) = rw(H::requests(&counter));
            reads + writes
        },
    ));
    assert!(
        costs.next_wake.is_some(),
        "the tick's read says when the index's next wake is"
    );
}

/// [`request_counts_per_step`] on a fresh store of the shared server,
/// with what opening it costs: `opening` creating it, `reopening` opening
/// it again; and all of it on one connection.
pub fn request_counts_are_exact<H: Harness>(opening: RequestCounts, reopening: RequestCounts) {
    let url = H::fresh_url("counts");
    let store = block_on(open::<H>(
        &url,
        OpenOptions::default().judge(JudgeClock::Caller),
    ))
    .unwrap();
    assert_eq!(H::requests(&store), opening, "opening a new store");
    let again = block_on(open::<H>(&url, OpenOptions::default())).unwrap();
    assert_eq!(H::requests(&again), reopening, "opening it again");
    block_on(request_counts_per_step(&store, H::NS, || {
        rw(H::requests(&store))
    }));
    block_on(a_listing_page_is_one_read(&store, H::NS, || {
        rw(H::requests(&store))
    }));
    assert_eq!(
        H::requests(&store).connections,
        1,
        "one connection throughout"
    );
}

/// Two handles whose callers' clocks are days and minutes apart agree,
/// because the server's clock decides: a caller far behind still claims
/// the due slot, a caller far ahead cannot take over a lease the server
/// counts live. The same claim judged by the caller's clock would. A tick
/// judged by the server plans up to the server's now.
pub fn the_server_clock_judges_leases<H: Harness>() {
    let url = H::fresh_url("clock");
    let store = block_on(open::<H>(&url, OpenOptions::default())).unwrap();
    assert!(store.judges_by_server_clock(), "the default: {store:?}");
    let other = block_on(open::<H>(&url, OpenOptions::default())).unwrap();
    let spec = job(
        H::NS,
        "clocked",
        "schedule = \"* * * * *\"\nlease = \"1m\"\nskew_margin = \"5s\"",
    );
    let name = spec.name.as_str();
    let real = Timestamp::now();
    let minutes = SignedDuration::from_mins;
    // Created ten minutes ago (by this machine's clock, the server's too).
    let created = real.checked_sub(minutes(10)).unwrap();
    let fresh = JobState::new(name, &spec.spec_hash(), created, false);
    assert_eq!(
        block_on(store.put(name, &fresh, None)).unwrap(),
        PutResult::Written(1)
    );
    assert!(store.clock_offset().is_none(), "nothing read yet");

    // Server a's clock is two days behind: by it the job does not exist
    // yet; by the server's, the last minute's slot is due.
    let a = CasCoordinator::new(store.clone(), 1);
    let behind = real.checked_sub(SignedDuration::from_hours(48)).unwrap();
    let run = lease(block_on(claim(&a, &spec, behind, Trigger::Tick, "a")));
    assert!(
        run.slot > real.checked_sub(minutes(2)).unwrap() && run.slot <= Timestamp::now(),
        "the latest slot by the server's clock: {run:?} (real now {real})"
    );
    assert!(
        run.claimed_at >= real.checked_sub(SignedDuration::from_secs(1)).unwrap(),
        "claimed at the server's now: {run:?}"
    );

    // Server b's clock is five minutes ahead: by it the lease expired;
    // by the server's it has not, so b takes nothing over.
    let b = CasCoordinator::new(other.clone(), 2);
    let ahead = real.checked_add(minutes(5)).unwrap();
    idle(block_on(claim(&b, &spec, ahead, Trigger::Tick, "b")));

    // Judged by b's own clock, the same claim would take the slot over.
    let c = CasCoordinator::new(H::judge_by(other.clone(), JudgeClock::Caller), 3);
    let taken = lease(block_on(claim(&c, &spec, ahead, Trigger::Tick, "c")));
    assert!(taken.fence > run.fence, "{taken:?} after {run:?}");

    // This machine is the server's: the measured offset is about zero.
    for store in [&store, &other] {
        let offset = store.clock_offset().expect("measured on the last read");
        assert!(
            offset.abs() < SignedDuration::from_millis(500),
            "clock offset {offset:?}"
        );
    }

    // A tick judged by the server plans up to the server's now.
    let start = block_on(store.tick_start(behind, 10)).unwrap();
    assert!(
        start.now >= real && start.now <= Timestamp::now(),
        "tick_start answers the server's instant: {}",
        start.now
    );
}

/// Two stores in two places of one server (two schemas, two prefixes)
/// never see each other's records or effects.
pub async fn locations_isolate_deployments<S: StateStore + EffectLedger>(a: &S, b: &S) {
    let t = at(0);
    let state = |job: &str| JobState::new(job, "0000000000000000", t, false);
    assert_eq!(
        a.put("j", &state("j"), None).await.unwrap(),
        PutResult::Written(1)
    );
    assert_eq!(b.get("j").await.unwrap(), None);
    assert!(b.jobs().await.unwrap().is_empty());
    assert_eq!(
        b.put("j", &state("j"), None).await.unwrap(),
        PutResult::Written(1)
    );
    let again = a.get("j").await.unwrap().unwrap();
    assert_eq!(again.version, 1, "b's write is not a's");
    assert_eq!(
        a.put("j", &again.value, Some(1)).await.unwrap(),
        PutResult::Written(2)
    );
    assert_eq!(a.jobs().await.unwrap(), vec!["j".to_string()]);
    assert_eq!(b.jobs().await.unwrap(), vec!["j".to_string()]);
    assert_eq!(
        b.begin_effect("j@x/e", "w", 1, t, Duration::from_secs(9))
            .await
            .unwrap(),
        EffectBegin::Acquired
    );
    assert_eq!(a.read_effect("j@x/e").await.unwrap(), None);
}

/// Without creation allowed, opening a place of the server that holds no
/// store fails as `Other`, saying `says`, and creates nothing (`exists`,
/// asked of the URL, tells from the server); opening with creation then
/// creates it, and opening without creation finds it. Answers the store
/// that created it and the one that found it.
pub fn opening_without_creation_needs_an_existing_store<H: Harness>(
    says: &str,
    exists: impl Fn(&str) -> bool,
) -> (H::Store, H::Store) {
    let url = H::fresh_url("nocreate");
    let without = OpenOptions::default().create(false);
    let e = block_on(open::<H>(&url, without)).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains(says), "{e}");
    assert!(!exists(&url), "opening without creation created {url}");
    let created = block_on(open::<H>(&url, OpenOptions::default())).unwrap();
    assert!(exists(&url), "opening created nothing at {url}");
    let found = block_on(open::<H>(&url, without)).unwrap();
    (created, found)
}

/// A store that a newer cronslot wrote (`make_newer` marks it so, as
/// that cronslot would) is refused on opening as `Other`, saying each of
/// `says`, and nothing is written (`snapshot` reads everything of the
/// store from the server). Answers the store (opened before it was
/// marked) and the snapshot, for the store's own further checks.
pub fn a_store_from_a_newer_cronslot_is_refused_and_nothing_written<H: Harness>(
    make_newer: impl FnOnce(&H::Store),
    snapshot: impl Fn(&H::Store) -> String,
    says: &[&str],
) -> (H::Store, String) {
    let url = H::fresh_url("newer");
    let store = block_on(open::<H>(&url, OpenOptions::default())).unwrap();
    assert_eq!(
        block_on(store.put("j", &state("j", 0), None)).unwrap(),
        PutResult::Written(1)
    );
    make_newer(&store);
    let before = snapshot(&store);
    let e = block_on(open::<H>(&url, OpenOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    for needle in says {
        assert!(e.message().contains(needle), "{needle:?} in {e}");
    }
    assert_eq!(snapshot(&store), before, "nothing written");
    (store, before)
}

/// Jobs are listed in the order of Rust's strings (bytes), as every store
/// lists them, whatever their wakes; effects are no jobs.
pub async fn jobs_are_listed_in_byte_order<S: StateStore + EffectLedger>(store: &S) {
    assert!(store.jobs().await.unwrap().is_empty());
    let names = [
        ("b", Some(1)),
        ("a", Some(2)),
        ("B", None),
        ("é", Some(0)),
        ("a-1", None),
        ("a_1", Some(3)),
        ("a-2", None),
        ("c", Some(0)),
    ];
    for (name, wake) in names {
        let mut s = state(name, 0);
        s.wake_at = wake.map(at);
        assert_eq!(
            store.put(name, &s, None).await.unwrap(),
            PutResult::Written(1)
        );
        let effect = format!("{name}@2026-01-05T00:00:00Z/x");
        store
            .begin_effect(&effect, "o", 1, at(0), Duration::from_secs(5))
            .await
            .unwrap();
    }
    let mut expected: Vec<String> = names.iter().map(|(n, _)| n.to_string()).collect();
    expected.sort();
    assert_eq!(store.jobs().await.unwrap(), expected);
}

/// Clones work from many threads at once, each on a runtime of its own
/// that ends after each call (a current-thread one, a multi-thread one),
/// or on none (the core's spinning executor): the store's work runs on
/// its own thread.
pub fn clones_work_from_any_thread_and_runtime<S>(store: &S)
where
    S: StateStore + Clone + Send + 'static,
{
    const THREADS: u64 = 8;
    const PUTS: u64 = 5;
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                let job = format!("t{i}");
                let s = state(&job, i as i64);
                // A runtime per call: it ends before the next one starts.
                for version in 0..PUTS {
                    let expected = (version > 0).then_some(version);
                    let written = block_on(store.put(&job, &s, expected)).unwrap();
                    assert_eq!(written, PutResult::Written(version + 1));
                }
                // No runtime at all, or a multi-thread one.
                let last = store.put(&job, &s, Some(PUTS));
                let written = if i % 2 == 0 {
                    cronslot_core::coord::exec::block_on(last)
                } else {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(1)
                        .enable_all()
                        .build()
                        .unwrap()
                        .block_on(last)
                };
                assert_eq!(written.unwrap(), PutResult::Written(PUTS + 1));
                cronslot_core::coord::exec::block_on(store.get(&job))
                    .unwrap()
                    .unwrap()
                    .version
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap(), PUTS + 1);
    }
    assert_eq!(
        block_on(store.jobs()).unwrap().len(),
        THREADS as usize,
        "every thread's job"
    );
}

// -------------------------------------------------------------- errors ----

/// A server that does not answer at `url` (which holds [`SECRET`]):
/// `Unavailable`, the message starting with `starts_with` (the store as
/// messages name it, password hidden), saying to check the server, with
/// no code, and never the password.
pub fn an_unreachable_server_is_unavailable<H: Harness>(url: &str, starts_with: &str) {
    let e = block_on(open::<H>(url, OpenOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Unavailable, "{e}");
    assert!(e.message().starts_with(starts_with), "{e}");
    assert!(
        e.message().contains("check that the server is running"),
        "{e}"
    );
    assert_eq!(e.code(), None, "{e}");
    assert_hidden("unreachable", &shown(&e));
}

/// Where a server asks for a password: how to reach it, and what its
/// refusals say.
pub struct Passwords<'a> {
    /// The URL of a user whose password is [`SECRET`], with `password` in
    /// it (`None`: with none).
    pub url: &'a dyn Fn(Option<&str>) -> String,
    /// The variable a password the URL leaves out is read from
    /// (`PGPASSWORD`).
    pub variable: &'a str,
    /// How messages name the user, the password hidden
    /// (`postgres://role:***@`).
    pub redacted: String,
    /// The code of a refused password (`28P01`).
    pub refused_code: Option<&'a str>,
    /// What a refused password's message says beyond "check both".
    pub refused_says: &'a [&'a str],
    /// The code of a missing password (`NOAUTH`).
    pub missing_code: Option<&'a str>,
}

/// A wrong password, none, and a wrong one from the environment variable
/// are refused as `Other` with what to check, and never shown.
pub fn passwords_are_checked_and_never_shown<H: Harness>(p: Passwords<'_>) {
    let refused = |what: &str, e: &StoreError| {
        assert_eq!(e.kind(), &StoreErrorKind::Other, "{what}: {e}");
        assert_eq!(e.code(), p.refused_code, "{what}: {e}");
        assert!(e.message().contains("check both"), "{what}: {e}");
        for needle in p.refused_says {
            assert!(e.message().contains(needle), "{what}: {needle:?} in {e}");
        }
        assert_hidden(what, &shown(e));
    };

    let e = block_on(open::<H>(&(p.url)(Some(WRONG)), OpenOptions::default())).unwrap_err();
    refused("a wrong password", &e);
    assert!(e.message().contains(&p.redacted), "{e}");

    // No password at all, where the server asks for one.
    let e = block_on(open::<H>(&(p.url)(None), OpenOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert_eq!(e.code(), p.missing_code, "{e}");
    assert!(
        e.message()
            .contains("asks for a password the store does not have"),
        "{e}"
    );
    assert!(e.message().contains(p.variable), "{e}");
    assert_hidden("no password", &shown(&e));

    // The variable, when the URL has no password.
    let location = H::parse_with_env(&(p.url)(None), &|v| {
        (v == p.variable).then(|| WRONG.to_string())
    })
    .unwrap();
    let e = block_on(H::Store::open_at(&location, OpenOptions::default())).unwrap_err();
    refused(p.variable, &e);
}

/// URLs of other stores (and of no store) are refused by the store's
/// parser and by its `connect`, saying `says`, with the password hidden.
pub fn a_url_of_another_store_is_refused<H: Harness>(says: &str) {
    let urls = [
        format!("mysql://u:{SECRET}@h/db"),
        "sqlite:cronslot.db".to_string(),
        format!("dynamodb://table?region=x&password={SECRET}"),
        format!("postgres://u:{SECRET}@h/db"),
        format!("redis://:{SECRET}@h/0"),
        format!("u:{SECRET}@h"),
    ];
    let ours = |url: &str| {
        H::Store::SCHEMES
            .iter()
            .any(|scheme| url.starts_with(&format!("{scheme}:")))
    };
    for url in urls.iter().filter(|url| !ours(url)) {
        let e = H::parse_with_env(url, &|_| None).unwrap_err();
        assert!(e.message.contains(says), "{url}: {e}");
        assert_hidden(
            "parser",
            &[e.message.clone(), e.input.clone(), format!("{e:?}")],
        );
        let e = block_on(H::connect(url)).unwrap_err();
        assert_eq!(e.kind(), &StoreErrorKind::Other, "{url}: {e}");
        assert!(e.message().contains(says), "{url}: {e}");
        assert_hidden("connect", &shown(&e));
    }
}

/// A user (at `url`, with [`SECRET`]) that lacks a permission the store
/// needs is refused as `Other` with `code`, saying each of `says` (what to
/// grant), and never the password. Answers the error.
pub fn a_user_without_a_permission_is_told_what_to_grant<H: Harness>(
    url: &str,
    code: &str,
    says: &[&str],
) -> StoreError {
    let e = block_on(open::<H>(url, OpenOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert_eq!(e.code(), Some(code), "{e}");
    for needle in says {
        assert!(e.message().contains(needle), "{needle:?} in {e}");
    }
    assert_hidden("a missing permission", &shown(&e));
    e
}

// -------------------------------------------------------------- faults ----

/// A crash of `server` (the test's own, at `url`; taken by value, so the
/// shared server, which is only lent, cannot be given): while it is down, calls
/// fail as unavailable (or, for a write, ambiguous), never with a wrong
/// answer; after the restart every acknowledged write is there (a
/// completed run, and a claim whose lease is still live, so a second
/// claimer is refused the slot that would otherwise run twice), and the
/// store reconnects by itself: on the first call after the restart when
/// `reconnects_at_once`, else within a few seconds.
pub fn an_acknowledged_claim_survives_a_crash<H: Harness>(
    server: impl Crashable,
    url: &str,
    reconnects_at_once: bool,
) {
    let store = block_on(open::<H>(
        url,
        OpenOptions::default().judge(JudgeClock::Caller),
    ))
    .unwrap();
    let spec = job(H::NS, "crash", "schedule = \"* * * * *\"\nlease = \"5m\"");
    let name = spec.name.as_str();
    let a = CasCoordinator::new(store.clone(), 1);
    let live = block_on(async {
        idle(claim(&a, &spec, at(0), Trigger::Tick, "a").await);
        let run = lease(claim(&a, &spec, at(61), Trigger::Tick, "a").await);
        a.complete(&spec, run.fence, None, at(62)).await.unwrap();
        lease(claim(&a, &spec, at(121), Trigger::Tick, "a").await)
    });
    let before = block_on(store.get(name)).unwrap().unwrap();
    assert_eq!(before.value.counters.succeeded, 1, "{before:?}");
    assert_eq!(before.value.leases.len(), 1, "{before:?}");

    server.crash();
    let e = block_on(store.get(name)).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Unavailable, "{e}");
    let e = block_on(store.put(name, &before.value, Some(before.version))).unwrap_err();
    assert!(
        matches!(
            e.kind,
            StoreErrorKind::Unavailable | StoreErrorKind::Ambiguous
        ),
        "{e}"
    );
    let e = block_on(a.claim(&spec, at(181), Trigger::Tick, "a")).unwrap_err();
    assert!(e.is_transient(), "{e}");

    server.restart();
    let after = if reconnects_at_once {
        block_on(store.get(name)).unwrap()
    } else {
        eventually(Duration::from_secs(10), || block_on(store.get(name)))
    };
    assert_eq!(
        after.as_ref(),
        Some(&before),
        "the completed run and the live claim survived the crash"
    );
    let b = CasCoordinator::new(store.clone(), 2);
    let again = block_on(claim(&b, &spec, at(122), Trigger::Slot(live.slot), "b"));
    assert!(
        matches!(again, Claim::Idle(_)),
        "the slot was claimed before the crash; after it: {again:?}"
    );
    block_on(a.complete(&spec, live.fence, None, at(123))).unwrap();
    let next = lease(block_on(claim(&a, &spec, at(181), Trigger::Tick, "a")));
    assert!(next.fence > live.fence, "{next:?} after {live:?}");
}

/// [`schedule_counts::keyed_run_costs`] on a fresh store of the shared
/// server: an enqueue costs one read and one write, a duplicate one read,
/// a run one read (none where the index read returns its record) and two
/// writes, a status read one read.
///
/// [`schedule_counts::keyed_run_costs`]: crate::schedule_counts::keyed_run_costs
pub fn keyed_run_costs_are_exact<H: Harness>() {
    let store = block_on(open::<H>(
        &H::fresh_url("keyed_runs"),
        OpenOptions::default().judge(JudgeClock::Caller),
    ))
    .unwrap();
    let counter = store.clone();
    block_on(crate::schedule_counts::keyed_run_costs(
        &store,
        H::NS,
        H::WOKEN_READ,
        move || rw(H::requests(&counter)),
        true,
    ));
}
