//! What the Redis store does beyond the conformance suite: its request
//! counts, the server's clock, prefixes and hash tags, the wake index, the
//! scripts after a `SCRIPT FLUSH`, expiring ledger entries, the layout
//! key, corrupt keys.

use std::time::Duration;

use cronslot_core::conformance::{at, job};
use cronslot_core::coord::{
    CasCoordinator, Claim, Coordinator, EffectBegin, EffectFinish, EffectLedger, JobState, Lease,
    PutResult, StateStore, StoreErrorKind, TickIndex, Trigger,
};
use cronslot_core::manifest::JobSpec;
use cronslot_redis::{JudgeClock, RedisOptions, RedisStore, RequestCounts};
use cronslot_tests::redis::{Server, shared, unique};
use jiff::{SignedDuration, Timestamp};

use crate::support::{block_on, fresh_store, fresh_url, open};

async fn claim<C: Coordinator>(
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

fn lease(c: Claim) -> Lease {
    match c {
        Claim::Claimed(lease) => lease,
        Claim::Idle(idle) => panic!("expected a claim, got idle: {idle:?}"),
    }
}

fn idle(c: Claim) {
    assert!(matches!(c, Claim::Idle(_)), "expected idle, got {c:?}");
}

fn rw(d: RequestCounts) -> (u64, u64) {
    (d.reads, d.writes)
}

fn state(job: &str, seconds: i64) -> JobState {
    JobState::new(job, "0000000000000000", at(seconds), false)
}

/// A run is one read and two scripts, a duplicate delivery one read, a
/// lost compare-and-set one script (which hands back the winner), an
/// effect's begin and finish one read and one script each; everything on
/// one connection.
#[test]
fn request_counts_are_exact() {
    let store = fresh_store("counts");
    assert_eq!(
        store.requests(),
        RequestCounts {
            reads: 0,
            writes: 0,
            setup: 1,
            connections: 1
        },
        "opening: one script that checks (and writes) the layout"
    );
    let a = CasCoordinator::new(store.clone(), 1);
    let b = CasCoordinator::new(store.clone(), 2);
    let spec = job(
        "redis",
        "counted",
        "schedule = \"* * * * *\"\nlease = \"1m\"",
    );
    let name = spec.name.as_str().to_string();
    block_on(async {
        let s = store.requests();
        idle(claim(&a, &spec, at(0), Trigger::Tick, "a").await);
        assert_eq!(rw(store.requests().since(&s)), (1, 1), "creation");

        let s = store.requests();
        let run = lease(claim(&a, &spec, at(61), Trigger::Tick, "a").await);
        a.complete(&spec, run.fence, None, at(62)).await.unwrap();
        assert_eq!(rw(store.requests().since(&s)), (1, 2), "a run");

        let s = store.requests();
        idle(claim(&b, &spec, at(63), Trigger::Slot(run.slot), "b").await);
        assert_eq!(rw(store.requests().since(&s)), (1, 0), "a duplicate");

        let live = lease(claim(&a, &spec, at(121), Trigger::Tick, "a").await);
        let key = format!("{name}@{}/send", live.slot);
        let s = store.requests();
        let begun = store
            .begin_effect(&key, "a", live.fence, at(123), Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(begun, EffectBegin::Acquired);
        assert_eq!(rw(store.requests().since(&s)), (1, 1), "the ledger's begin");
        let s = store.requests();
        let finished = store
            .finish_effect(&key, live.fence, "sent", at(124))
            .await
            .unwrap();
        assert_eq!(finished, EffectFinish::Recorded);
        assert_eq!(rw(store.requests().since(&s)), (1, 1), "finish");
        let s = store.requests();
        let again = store
            .begin_effect(&key, "b", live.fence + 1, at(126), Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(
            again,
            EffectBegin::AlreadyDone {
                result: "sent".into()
            }
        );
        assert_eq!(rw(store.requests().since(&s)), (1, 0), "already done");

        let current = store.get(&name).await.unwrap().unwrap();
        let s = store.requests();
        let lost = store
            .put(&name, &current.value, Some(current.version - 1))
            .await
            .unwrap();
        assert_eq!(lost, PutResult::Conflict(Some(Box::new(current.clone()))));
        assert_eq!(rw(store.requests().since(&s)), (0, 1), "a lost write");
        let s = store.requests();
        let lost = store.put(&name, &current.value, None).await.unwrap();
        assert_eq!(lost, PutResult::Conflict(Some(Box::new(current))));
        assert_eq!(rw(store.requests().since(&s)), (0, 1), "a lost creation");
        let s = store.requests();
        let missing = store.put("nobody", &state("nobody", 0), Some(3)).await;
        assert_eq!(missing.unwrap(), PutResult::Conflict(None));
        assert_eq!(rw(store.requests().since(&s)), (0, 1), "no record");
    });
    assert_eq!(store.requests().connections, 1, "one connection throughout");
}

/// Two handles whose callers' clocks are days and minutes apart agree,
/// because the server's `TIME` decides: a caller far behind still claims
/// the due slot, a caller far ahead cannot take over a lease the server
/// counts live. The same claim judged by the caller's clock would.
#[test]
fn the_server_clock_judges_leases() {
    let url = fresh_url("clock");
    let store = block_on(open(&url, RedisOptions::default())).unwrap();
    assert_eq!(store.judge_clock(), JudgeClock::Server);
    let other = block_on(open(&url, RedisOptions::default())).unwrap();
    let spec = job(
        "redis",
        "clocked",
        "schedule = \"* * * * *\"\nlease = \"1m\"\nskew_margin = \"5s\"",
    );
    let name = spec.name.as_str();
    let real = Timestamp::now();
    let minutes = SignedDuration::from_mins;
    let created = real.checked_sub(minutes(10)).unwrap();
    let fresh = JobState::new(name, &spec.spec_hash(), created, false);
    assert_eq!(
        block_on(store.put(name, &fresh, None)).unwrap(),
        PutResult::Written(1)
    );
    assert!(store.clock_offset().is_none(), "nothing read yet");

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

    let b = CasCoordinator::new(other.clone(), 2);
    let ahead = real.checked_add(minutes(5)).unwrap();
    idle(block_on(claim(&b, &spec, ahead, Trigger::Tick, "b")));

    let c = CasCoordinator::new(other.clone().judge_by(JudgeClock::Caller), 3);
    let taken = lease(block_on(claim(&c, &spec, ahead, Trigger::Tick, "c")));
    assert!(taken.fence > run.fence, "{taken:?} after {run:?}");

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

/// Two prefixes are two stores that never see each other; a job's keys
/// carry the hash tag `{PREFIX:JOB}`, the deployment's `{PREFIX}`.
#[test]
fn prefixes_isolate_deployments_and_keys_carry_hash_tags() {
    let (p, q) = (unique("iso-p"), unique("iso-q"));
    let sp = block_on(open(&shared().url(&p), RedisOptions::default())).unwrap();
    let sq = block_on(open(&shared().url(&q), RedisOptions::default())).unwrap();
    let mut s = state("same", 0);
    s.wake_at = Some(at(90));
    assert_eq!(
        block_on(sp.put("same", &s, None)).unwrap(),
        PutResult::Written(1)
    );
    assert_eq!(block_on(sq.get("same")).unwrap(), None);
    assert_eq!(block_on(sq.jobs()).unwrap(), Vec::<String>::new());
    assert_eq!(block_on(sp.jobs()).unwrap(), vec!["same".to_string()]);

    let cli = |args: &[&str]| shared().cli(args);
    assert_eq!(cli(&["TYPE", &format!("{{{p}:same}}:state")]), "hash");
    assert_eq!(cli(&["HGET", &format!("{{{p}:same}}:state"), "v"]), "1");
    assert_eq!(cli(&["TYPE", &format!("{{{p}}}:wakes")]), "zset");
    assert_eq!(cli(&["GET", &format!("{{{p}}}:layout")]), "1");
    // The score is the wake in microseconds since the epoch.
    let micros = at(90).as_microsecond().to_string();
    assert_eq!(cli(&["ZSCORE", &format!("{{{p}}}:wakes"), "same"]), micros);
    // Every key of the store is under its prefix.
    let keys = cli(&["KEYS", &format!("*{p}*")]);
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort();
    assert_eq!(
        keys,
        vec![
            format!("{{{p}:same}}:state"),
            format!("{{{p}}}:layout"),
            format!("{{{p}}}:wakes"),
        ]
    );
}

/// The wake index follows every write of the record, in the same script:
/// a wake is indexed, a record without one is listed but never woken, a
/// lost write changes nothing.
#[test]
fn the_wake_index_is_written_with_the_record() {
    let store = fresh_store("wakes");
    let wakes = format!("{{{}}}:wakes", store.location().prefix());
    let score = |job: &str| shared().cli(&["ZSCORE", &wakes, job]);
    block_on(async {
        let mut s = state("w", 0);
        s.wake_at = Some(at(30));
        assert_eq!(
            store.put("w", &s, None).await.unwrap(),
            PutResult::Written(1)
        );
        assert_eq!(score("w"), at(30).as_microsecond().to_string());
        assert_eq!(
            store.tick_start(at(30), 10).await.unwrap().woken,
            vec!["w".to_string()]
        );
        assert!(store.tick_start(at(29), 10).await.unwrap().woken.is_empty());

        // A lost write leaves the index alone.
        let mut other = s.clone();
        other.wake_at = Some(at(5));
        assert!(matches!(
            store.put("w", &other, Some(7)).await.unwrap(),
            PutResult::Conflict(Some(_))
        ));
        assert_eq!(score("w"), at(30).as_microsecond().to_string());

        // No wake: listed, never woken.
        s.wake_at = None;
        assert_eq!(
            store.put("w", &s, Some(1)).await.unwrap(),
            PutResult::Written(2)
        );
        assert_eq!(score("w"), "inf");
        assert!(
            store
                .tick_start(Timestamp::MAX, 10)
                .await
                .unwrap()
                .woken
                .is_empty()
        );
        assert_eq!(store.jobs().await.unwrap(), vec!["w".to_string()]);

        // A fraction of a microsecond is floored, as PostgreSQL does.
        let fine: Timestamp = "2026-01-05T00:00:10.0000019Z".parse().unwrap();
        s.wake_at = Some(fine);
        store.put("w", &s, Some(2)).await.unwrap();
        let floored: Timestamp = "2026-01-05T00:00:10.000001Z".parse().unwrap();
        assert_eq!(score("w"), floored.as_microsecond().to_string());
        store.tick_end(fine).await.unwrap();
        assert_eq!(
            store.tick_start(at(0), 1).await.unwrap().mark,
            Some(floored)
        );
    });
}

/// The scripts run by their SHA1; after `SCRIPT FLUSH` (a restart, a
/// failover to a replica that never saw them) the server answers
/// `NOSCRIPT`, and redis-rs loads the script and runs it again: the
/// caller never sees it.
///
/// On a server of its own: `SCRIPT FLUSH` empties the script cache of the
/// whole server, and a flush between another test's reload and its second
/// `EVALSHA` fails that test's write.
#[test]
fn writes_survive_script_flush() {
    let server = Server::start();
    let store = block_on(open(&server.url("noscript"), RedisOptions::default()))
        .expect("opening a store")
        .judge_by(JudgeClock::Caller);
    block_on(async {
        assert_eq!(
            store.put("j", &state("j", 0), None).await.unwrap(),
            PutResult::Written(1)
        );
        server.cli(&["SCRIPT", "FLUSH"]);
        assert_eq!(
            store.put("j", &state("j", 1), Some(1)).await.unwrap(),
            PutResult::Written(2)
        );
        server.cli(&["SCRIPT", "FLUSH"]);
        store.tick_end(at(60)).await.unwrap();
        assert_eq!(store.tick_start(at(0), 1).await.unwrap().mark, Some(at(60)));
        server.cli(&["SCRIPT", "FLUSH"]);
        let begun = store
            .begin_effect("j@x/e", "w", 1, at(0), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(begun, EffectBegin::Acquired);
    });
}

/// Ledger entries expire by themselves: a done entry the retention after
/// it was done, an entry in progress the retention after its hold lapses
/// (measured from the write, by the server's clock, so a caller's virtual
/// clock does not matter).
#[test]
fn ledger_entries_expire_after_the_retention() {
    let url = fresh_url("expire");
    let store = block_on(open(
        &url,
        RedisOptions::default().effect_retention(Duration::from_millis(800)),
    ))
    .unwrap()
    .judge_by(JudgeClock::Caller);
    let prefix = store.location().prefix().to_string();
    let pttl = |key: &str| -> i64 {
        shared()
            .cli(&["PTTL", &format!("{{{prefix}:j}}:effect:{key}")])
            .parse()
            .unwrap()
    };
    block_on(async {
        // In progress, held 60 s: kept for the hold and the retention.
        let begun = store
            .begin_effect("j@s/held", "w", 1, at(0), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(begun, EffectBegin::Acquired);
        let ttl = pttl("j@s/held");
        assert!((59_000..=60_800).contains(&ttl), "PTTL {ttl}");

        // Done: kept for the retention from now.
        store
            .begin_effect("j@s/done", "w", 1, at(0), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            store
                .finish_effect("j@s/done", 1, "r", at(1))
                .await
                .unwrap(),
            EffectFinish::Recorded
        );
        let ttl = pttl("j@s/done");
        assert!((1..=800).contains(&ttl), "PTTL {ttl}");
        assert!(store.read_effect("j@s/done").await.unwrap().is_some());
    });
    std::thread::sleep(Duration::from_millis(1200));
    block_on(async {
        assert_eq!(
            store.read_effect("j@s/done").await.unwrap(),
            None,
            "expired"
        );
        assert!(
            store.read_effect("j@s/held").await.unwrap().is_some(),
            "still held"
        );
        // Gone means never done: a new run may do it (the retention must
        // outlast every retry of a slot).
        let begun = store
            .begin_effect("j@s/done", "w", 2, at(2), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(begun, EffectBegin::Acquired);
    });
}

/// Opening without creation needs a store under the prefix; a layout from
/// a newer cronslot, or a layout key holding something else, is refused
/// with nothing written.
#[test]
fn the_layout_key_guards_the_prefix() {
    let url = fresh_url("layout");
    let e = block_on(open(&url, RedisOptions::default().create(false))).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(e.message().contains("no store under this prefix"), "{e}");
    block_on(open(&url, RedisOptions::default())).unwrap();
    block_on(open(&url, RedisOptions::default().create(false))).unwrap();

    let prefix = unique("newer");
    shared().cli(&["SET", &format!("{{{prefix}}}:layout"), "99"]);
    let e = block_on(open(&shared().url(&prefix), RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Other, "{e}");
    assert!(
        e.message()
            .contains("layout 99, written by a newer cronslot"),
        "{e}"
    );

    let prefix = unique("foreign");
    shared().cli(&["SET", &format!("{{{prefix}}}:layout"), "hello"]);
    let e = block_on(open(&shared().url(&prefix), RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Corrupt, "{e}");
    assert!(e.message().contains("another program"), "{e}");
}

/// Keys that do not hold what the store wrote are reported as corrupt,
/// naming the job or the effect.
#[test]
fn undecodable_keys_are_corrupt() {
    let store = fresh_store("corrupt");
    let p = store.location().prefix().to_string();
    let cli = |args: &[&str]| shared().cli(args);
    cli(&[
        "HSET",
        &format!("{{{p}:bad}}:state"),
        "v",
        "1",
        "s",
        "{not json",
    ]);
    cli(&["HSET", &format!("{{{p}:half}}:state"), "v", "1"]);
    cli(&["SET", &format!("{{{p}:str}}:state"), "x"]);
    cli(&[
        "HSET",
        &format!("{{{p}:e}}:effect:e@s/x"),
        "rev",
        "1",
        "r",
        "[]",
    ]);
    block_on(async {
        for job in ["bad", "half", "str"] {
            let e = store.get(job).await.unwrap_err();
            assert_eq!(e.kind, StoreErrorKind::Corrupt, "{job}: {e}");
            assert!(
                e.message.starts_with("Redis store redis://127.0.0.1:"),
                "{e}"
            );
        }
        let e = store.get("half").await.unwrap_err();
        assert!(e.message.contains("job \"half\""), "{e}");
        let e = store.get("str").await.unwrap_err();
        assert!(e.message.contains("WRONGTYPE"), "{e}");
        let e = store.read_effect("e@s/x").await.unwrap_err();
        assert_eq!(e.kind, StoreErrorKind::Corrupt, "{e}");
        assert!(e.message.contains("effect \"e@s/x\""), "{e}");
        // A record stored under another job's name is refused on the way in.
        let e = store.put("one", &state("two", 0), None).await.unwrap_err();
        assert_eq!(e.kind, StoreErrorKind::Other, "{e}");
    });
}

/// Jobs are listed in byte order, whatever their wakes.
#[test]
fn jobs_are_listed_in_byte_order() {
    let store = fresh_store("order");
    block_on(async {
        for (name, wake) in [
            ("b", Some(1)),
            ("a-2", None),
            ("a", Some(2)),
            ("c", Some(0)),
        ] {
            let mut s = state(name, 0);
            s.wake_at = wake.map(at);
            store.put(name, &s, None).await.unwrap();
        }
        assert_eq!(store.jobs().await.unwrap(), vec!["a", "a-2", "b", "c"]);
    });
}

/// Clones work from any thread and any runtime (or none): the store's
/// work runs on its own thread.
#[test]
fn clones_work_from_any_thread_and_runtime() {
    let store = fresh_store("threads");
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let store = store.clone();
            std::thread::spawn(move || {
                let name = format!("t{i}");
                let s = state(&name, 0);
                let written = if i % 2 == 0 {
                    cronslot_core::coord::exec::block_on(store.put(&name, &s, None))
                } else {
                    tokio::runtime::Builder::new_multi_thread()
                        .worker_threads(1)
                        .enable_all()
                        .build()
                        .unwrap()
                        .block_on(store.put(&name, &s, None))
                };
                assert_eq!(written.unwrap(), PutResult::Written(1));
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(block_on(store.jobs()).unwrap().len(), 4);
}

#[test]
fn the_store_is_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<RedisStore>();
}
