//! What a tick costs the store, counted (issue 14): 10,000 tick-mode jobs,
//! 10 of them due each minute, ticked by the runner's single pass (what
//! `cronslot tick` runs) on SQLite and on PostgreSQL.
//!
//! - The first tick of a deployment writes the tick mark and the records
//!   of the jobs due in the minute before it: no other job gets a record
//!   before it first comes due.
//! - A tick with 10 jobs due costs 10 × (1 read + 2 writes) + 2.
//! - A tick with nothing due costs 1 statement (the mark read with the
//!   woken jobs) when the mark is younger than 30 s (`MARK_REFRESH`), 2
//!   when it is older (the mark moved too).
//! - A lease left by a crashed run is found through the wake index alone.

use std::sync::OnceLock;

use cronslot_core::coord::{CasCoordinator, Claim, Coordinator, Trigger};
use cronslot_core::manifest::{JobSpec, parse_manifest};
use cronslot_postgres::{JudgeClock, PgOptions, PgStore, parse_postgres_location_with_env};
use cronslot_runner::{Clock, Runner, RunnerStore, SqliteStore, Summary};
use cronslot_tests::postgres::{shared, unique};
use cronslot_tests::scale::{Mix, manifest};
use cronslot_tests::schedule_counts;
use jiff::{SignedDuration, Timestamp};

const JOBS: usize = 10_000;
const DUE: usize = 10;

fn specs() -> &'static [JobSpec] {
    static SPECS: OnceLock<Vec<JobSpec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        parse_manifest(
            &manifest(JOBS, Mix::DueEachMinute(DUE), false),
            "scale.toml",
        )
        .expect("the generated manifest is valid")
        .jobs
    })
}

/// A minute of a quiet June day, away from every zone's DST change and
/// from 03:17 in every zone the generator uses.
fn t0() -> Timestamp {
    "2026-06-15T12:00:30Z".parse().unwrap()
}

fn after(seconds: i64) -> Timestamp {
    t0() + SignedDuration::from_secs(seconds)
}

/// One single pass (what `cronslot tick` runs) at `at`.
fn tick<S: RunnerStore>(store: &S, at: Timestamp) -> Summary {
    let clock = Clock::accelerated_from(at, 1.0).unwrap();
    Runner::new(store.clone(), specs().to_vec(), clock)
        .single_pass()
        .run()
        .unwrap()
}

/// Statements each tick costs, in order: the first deployment, a minute
/// with 10 jobs due, a tick with nothing due, and a minute where a crashed
/// run's expired lease is woken besides the 10 due jobs.
fn costs<S: RunnerStore>(store: &S, statements: impl Fn() -> u64) {
    let mut last = statements();
    let mut spent = || {
        let now = statements();
        let d = now - last;
        last = now;
        d
    };

    // The first tick of a deployment: the mark, and the records of the
    // jobs due in the minute before it (the look-back that serves an
    // upgraded store's current slots); records start now, so nothing runs.
    let first = tick(store, t0());
    assert_eq!(first.slots_run(), 0, "{first}");
    assert_eq!(spent(), DUE as u64 * 2 + 2);

    let busy = tick(store, after(60));
    assert_eq!(busy.slots_run(), DUE as u64, "{busy}");
    assert!(busy.ok(), "{busy}");
    assert_eq!(
        spent(),
        DUE as u64 * 3 + 2,
        "10 × (1 read + 2 writes) + the mark"
    );

    let quiet = tick(store, after(75));
    assert_eq!(quiet.slots_run(), 0, "{quiet}");
    assert_eq!(
        spent(),
        1,
        "a tick with nothing due, 15 s after the last: the mark's read alone"
    );

    // An operator triggers a daily job by hand at 12:02 and its run
    // crashes (the lease is left behind). 9,990 jobs are not due when the
    // lease runs out, yet this one is found through its wake: first its
    // expiry (the attempt fails, a retry waits), then its retry.
    let daily = specs().iter().find(|s| s.name.as_str() == "j11").unwrap();
    let crashed_at = after(90);
    let c = CasCoordinator::new(store.clone(), 1);
    let claimed = cronslot_core::coord::exec::block_on(c.claim(
        daily,
        crashed_at,
        Trigger::Manual,
        "crashed",
    ));
    let Ok(Claim::Claimed(lease)) = claimed else {
        panic!("the manual trigger claims the current slot: {claimed:?}")
    };
    spent();
    let expired = lease.expires_at + SignedDuration::try_from(daily.skew_margin).unwrap();
    let woken = tick(store, expired + SignedDuration::from_secs(1));
    let early = woken.job("j11").map_or(0, |j| j.runs);
    // The retry's backoff is jittered from zero up: it may be due at once.
    assert_eq!(
        woken.slots_run(),
        DUE as u64 + early,
        "the minute jobs, caught up: {woken}"
    );
    spent();
    let retried = tick(store, expired + SignedDuration::from_secs(40));
    let later = retried.job("j11").map_or(0, |j| j.runs);
    assert_eq!(
        early + later,
        1,
        "the crashed slot runs once more: {woken}\n{retried}"
    );
    assert_eq!(retried.slots_run(), later, "{retried}");
    let cost = if later == 1 { 3 + 2 } else { 2 };
    assert_eq!(
        spent(),
        cost,
        "the woken job's run (if still waiting) and the mark"
    );
}

#[test]
fn sqlite_ticks_cost_what_is_due() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("tick-costs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("ticks.db")).unwrap();
    let counter = store.clone();
    costs(&store, move || counter.statements());
}

#[test]
fn postgres_ticks_cost_what_is_due() {
    let url = format!("{}&schema={}", shared().url("postgres"), unique("ticks"));
    let location = parse_postgres_location_with_env(&url, |_| None).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let store = runtime
        .block_on(PgStore::connect_with(location, PgOptions::default()))
        .unwrap()
        .judge_by(JudgeClock::Caller);
    let counter = store.clone();
    costs(&store, move || {
        let s = counter.requests();
        s.reads + s.writes
    });
}

// ------------------------------------------- schedules of dynamic jobs ----

/// Schedules in the store (issue 26): 100,000 on the memory store, 10 due;
/// SQLite's figure is the same with 10,000 (loading 100,000 takes it 80 s
/// here, too long for CI: the tick never lists them, so the figure does
/// not depend on how many there are). The server stores run the same
/// test (`server_store::tick_costs_among_schedules`).
const SCHEDULES: usize = 100_000;

#[test]
fn memory_schedule_ticks_cost_what_is_due() {
    let store = cronslot_core::coord::MemoryStore::new();
    let counter = store.clone();
    let costs = cronslot_core::coord::exec::block_on(schedule_counts::tick_costs_follow_due_work(
        &store,
        "mem",
        SCHEDULES,
        1,
        move || counter.reads() + counter.writes(),
    ));
    assert!(costs.next_wake.is_some(), "the index's next wake");
}

#[test]
fn sqlite_schedule_ticks_cost_what_is_due() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("schedule-tick-costs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("schedules.db")).unwrap();
    let counter = store.clone();
    let costs = cronslot_core::coord::exec::block_on(schedule_counts::tick_costs_follow_due_work(
        &store,
        "lite",
        SCHEDULES / 10,
        1,
        move || counter.statements(),
    ));
    assert!(costs.next_wake.is_some(), "the index's next wake");
}

// --------------------------------------------------------- keyed runs ----

/// What a keyed run costs (issue 27) on the memory store and on SQLite
/// (statements); the server stores run it too
/// (`server_store::keyed_run_costs_are_exact`).
#[test]
fn memory_keyed_runs_cost_one_read_and_a_write_each() {
    let store = cronslot_core::coord::MemoryStore::new();
    let counter = store.clone();
    cronslot_core::coord::exec::block_on(schedule_counts::keyed_run_costs(
        &store,
        "mem",
        1,
        move || (counter.reads(), counter.writes()),
        true,
    ));
}

#[test]
fn sqlite_keyed_runs_cost_one_read_and_a_write_each() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("keyed-run-costs");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = SqliteStore::open(dir.join("runs.db")).unwrap();
    let counter = store.clone();
    cronslot_core::coord::exec::block_on(schedule_counts::keyed_run_costs(
        &store,
        "lite",
        1,
        move || (counter.statements(), 0),
        false,
    ));
}
