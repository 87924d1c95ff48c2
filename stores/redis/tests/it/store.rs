//! What the Redis store does beyond the conformance suite: its request
//! counts, the server's clock, prefixes and hash tags, the wake index, the
//! scripts after a `SCRIPT FLUSH`, expiring ledger entries, the layout
//! key, corrupt keys. The tests every server store runs are written once
//! (`cronslot_tests::server_store`); here they are given Redis's figures
//! and its way of looking at the server.

use std::time::Duration;

use cronslot_core::conformance::at;
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, PutResult, StateStore, StoreErrorKind, TickIndex,
};
use cronslot_redis::{JudgeClock, RedisOptions, RedisStore, RequestCounts};
use cronslot_tests::redis::{Server, shared, unique};
use cronslot_tests::server_store::{self, state};
use jiff::Timestamp;

use crate::support::{Redis, block_on, fresh_store, fresh_url, open};

/// Every key under `prefix` on the shared server, in order, with what it
/// holds: all of a store there is to see.
fn dump(prefix: &str) -> String {
    let cli = |args: &[&str]| shared().cli(args);
    let keys = cli(&["KEYS", &format!("*{prefix}*")]);
    let mut keys: Vec<&str> = keys.lines().collect();
    keys.sort();
    keys.iter()
        .map(|key| {
            let held = match cli(&["TYPE", key]).as_str() {
                "hash" => cli(&["HGETALL", key]),
                "zset" => cli(&["ZRANGE", key, "0", "-1", "WITHSCORES"]),
                "string" => cli(&["GET", key]),
                other => panic!("{key}: a key of type {other}"),
            };
            format!("{key} = {held}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The figures of docs/performance.md (`server_store::request_counts_per_step`):
/// a run is one read and two scripts, a duplicate delivery one read, a
/// lost compare-and-set one script (which hands back the winner), an
/// effect's begin and finish one read and one script each; everything on
/// one connection.
#[test]
fn request_counts_are_exact() {
    // Opening: one script that checks (and writes) the layout, whether
    // the store is new or there.
    let opening = RequestCounts {
        reads: 0,
        writes: 0,
        grouped: 0,
        signals: 0,
        setup: 1,
        connections: 1,
    };
    server_store::request_counts_are_exact::<Redis>(opening, opening);
}

/// A tick among 10,000 schedules of a dynamic job, 10 due, costs 32
/// requests; with nothing due, 2 (`server_store::tick_costs_among_schedules`).
#[test]
fn a_tick_among_schedules_costs_what_is_due() {
    server_store::tick_costs_among_schedules::<Redis>(10_000);
}

/// Two handles whose callers' clocks are days and minutes apart agree,
/// because the server's `TIME` decides
/// (`server_store::the_server_clock_judges_leases`).
#[test]
fn the_server_clock_judges_leases() {
    server_store::the_server_clock_judges_leases::<Redis>();
}

/// Two prefixes are two stores that never see each other; a job's keys
/// carry the hash tag `{PREFIX:JOB}`, the deployment's `{PREFIX}`.
#[test]
fn prefixes_isolate_deployments_and_keys_carry_hash_tags() {
    let (p, q) = (unique("iso-p"), unique("iso-q"));
    let sp = block_on(open(&shared().url(&p), RedisOptions::default())).unwrap();
    let sq = block_on(open(&shared().url(&q), RedisOptions::default())).unwrap();
    block_on(server_store::locations_isolate_deployments(&sp, &sq));

    let mut s = state("same", 0);
    s.wake_at = Some(at(90));
    assert_eq!(
        block_on(sp.put("same", &s, None)).unwrap(),
        PutResult::Written(1)
    );
    assert_eq!(block_on(sq.get("same")).unwrap(), None);
    assert_eq!(block_on(sq.jobs()).unwrap(), vec!["j".to_string()]);
    assert_eq!(
        block_on(sp.jobs()).unwrap(),
        vec!["j".to_string(), "same".to_string()]
    );

    let cli = |args: &[&str]| shared().cli(args);
    assert_eq!(cli(&["TYPE", &format!("{{{p}:same}}:state")]), "hash");
    assert_eq!(cli(&["HGET", &format!("{{{p}:same}}:state"), "v"]), "1");
    assert_eq!(cli(&["TYPE", &format!("{{{p}}}:wakes")]), "zset");
    assert_eq!(cli(&["GET", &format!("{{{p}}}:layout")]), "2");
    // The name index holds every record, each at score 0 (byte order).
    assert_eq!(
        cli(&["ZRANGE", &format!("{{{p}}}:names"), "0", "-1", "WITHSCORES"]),
        "j\n0\nsame\n0"
    );
    // The score is the wake in microseconds since the epoch.
    let micros = at(90).as_microsecond().to_string();
    assert_eq!(cli(&["ZSCORE", &format!("{{{p}}}:wakes"), "same"]), micros);
    // Every key of the store is under its prefix; the effect is q's.
    let keys = |prefix: &str| {
        let keys = cli(&["KEYS", &format!("*{prefix}*")]);
        let mut keys: Vec<String> = keys.lines().map(str::to_string).collect();
        keys.sort();
        keys
    };
    assert_eq!(
        keys(&p),
        vec![
            format!("{{{p}:j}}:state"),
            format!("{{{p}:same}}:state"),
            format!("{{{p}}}:layout"),
            format!("{{{p}}}:names"),
            format!("{{{p}}}:wakes"),
        ]
    );
    assert_eq!(
        keys(&q),
        vec![
            format!("{{{q}:j}}:effect:j@x/e"),
            format!("{{{q}:j}}:state"),
            format!("{{{q}}}:layout"),
            format!("{{{q}}}:names"),
            format!("{{{q}}}:wakes"),
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

/// Opening without creation needs a store under the prefix (its layout
/// key); opening with creation writes it.
#[test]
fn opening_without_creation_needs_an_existing_store() {
    server_store::opening_without_creation_needs_an_existing_store::<Redis>(
        "no store under this prefix",
        |url| {
            let prefix = url.rsplit_once("prefix=").unwrap().1;
            shared().cli(&["EXISTS", &format!("{{{prefix}}}:layout")]) == "1"
        },
    );
}

/// A store of layout 1 (before the name index) is migrated when it is
/// opened: every record's name is indexed, the layout becomes 2, and
/// pages list the records written before and after.
#[test]
fn a_store_of_layout_1_gets_its_name_index_when_opened() {
    let store = fresh_store("layout1");
    let p = store.location().prefix().to_string();
    block_on(async {
        for job in ["a", "sched/k1", "sched/k2"] {
            store.put(job, &state(job, 0), None).await.unwrap();
        }
    });
    // Make it what a cronslot of layout 1 left: no name index.
    let cli = |args: &[&str]| shared().cli(args);
    cli(&["DEL", &format!("{{{p}}}:names")]);
    cli(&["SET", &format!("{{{p}}}:layout"), "1"]);
    assert_eq!(
        block_on(store.records_page("sched/", None, 10)).unwrap(),
        vec![],
        "without the index, nothing is listed"
    );

    let reopened = block_on(open(&shared().url(&p), RedisOptions::default())).unwrap();
    assert_eq!(cli(&["GET", &format!("{{{p}}}:layout")]), "2");
    assert_eq!(cli(&["ZCARD", &format!("{{{p}}}:names")]), "3");
    block_on(async {
        reopened
            .put("sched/k0", &state("sched/k0", 0), None)
            .await
            .unwrap();
        let page = reopened.records_page("sched/", None, 10).await.unwrap();
        let names: Vec<&str> = page.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["sched/k0", "sched/k1", "sched/k2"]);
    });
}

/// A layout from a newer cronslot is refused, with nothing written.
#[test]
fn a_layout_from_a_newer_cronslot_is_refused_and_nothing_written() {
    server_store::a_store_from_a_newer_cronslot_is_refused_and_nothing_written::<Redis>(
        |store| {
            let prefix = store.location().prefix();
            shared().cli(&["SET", &format!("{{{prefix}}}:layout"), "99"]);
        },
        |store| dump(store.location().prefix()),
        &["layout 99, written by a newer cronslot", "upgrade cronslot"],
    );
}

/// A layout key holding something else than a layout is another
/// program's: refused as corrupt.
#[test]
fn the_layout_key_guards_the_prefix() {
    let prefix = unique("foreign");
    shared().cli(&["SET", &format!("{{{prefix}}}:layout"), "hello"]);
    let e = block_on(open(&shared().url(&prefix), RedisOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Corrupt, "{e}");
    assert!(e.message().contains("another program"), "{e}");
    assert_eq!(dump(&prefix), format!("{{{prefix}}}:layout = hello"));
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

/// Jobs are listed in byte order, whatever their wakes
/// (`server_store::jobs_are_listed_in_byte_order`).
#[test]
fn jobs_are_listed_in_byte_order() {
    block_on(server_store::jobs_are_listed_in_byte_order(&fresh_store(
        "order",
    )));
}

/// Clones work from any thread and any runtime (or none): the store's
/// work runs on its own thread.
#[test]
fn clones_work_from_any_thread_and_runtime() {
    server_store::clones_work_from_any_thread_and_runtime(&fresh_store("threads"));
}

#[test]
fn the_store_is_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<RedisStore>();
}

/// A keyed run's costs, exact (issue 27): an enqueue one read and one
/// write, a duplicate one read, a run one read and two writes
/// (`server_store::keyed_run_costs_are_exact`).
#[test]
fn keyed_run_costs_are_exact() {
    server_store::keyed_run_costs_are_exact::<Redis>();
}
