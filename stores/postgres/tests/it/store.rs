//! What the PostgreSQL store does beyond the conformance suite: its
//! statement counts, the database's clock, schemas, creation under
//! concurrency, the ledger's sweep, corrupt rows. The tests every server
//! store runs are written once (`cronslot_tests::server_store`); here they
//! are given PostgreSQL's figures and its way of looking at the server.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use cronslot_core::conformance::at;
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, JobState, Origin, PendingRun, PutResult, StateStore,
    StoreErrorKind, TickIndex, encode_state,
};
use cronslot_postgres::{JudgeClock, PgOptions, PgStore, RequestCounts};
use cronslot_tests::postgres::{shared, unique};
use cronslot_tests::server_store::{self, rw};
use jiff::SignedDuration;

use crate::support::{Pg, block_on, fresh_store, fresh_url, open};

/// The figures of docs/performance.md (`server_store::request_counts_per_step`):
/// a run is one read and two conditional writes, a duplicate delivery one
/// read and no write, a lost compare-and-set one statement, an effect's
/// begin and finish one read and one write each (plus, through the
/// coordinator, the read of the job's record that checks the run still
/// holds its lease), all on one connection of the pool.
#[test]
fn statement_counts_are_exact() {
    server_store::request_counts_are_exact::<Pg>(
        // Creating the schema: one look at the catalog, then one
        // transaction (BEGIN, the advisory lock, a second look, CREATE
        // SCHEMA, the migration table, migrations 1 to 3 with a row each,
        // COMMIT), on one connection.
        RequestCounts {
            reads: 0,
            writes: 0,
            grouped: 0,
            signals: 0,
            setup: 13,
            connections: 1,
        },
        // Opening an existing schema: the catalog and the version, two
        // reads.
        RequestCounts {
            reads: 0,
            writes: 0,
            grouped: 0,
            signals: 0,
            setup: 2,
            connections: 1,
        },
    );
}

/// A tick among 10,000 schedules of a dynamic job, 10 due, costs 32
/// requests; with nothing due, 2 (`server_store::tick_costs_among_schedules`).
#[test]
fn a_tick_among_schedules_costs_what_is_due() {
    server_store::tick_costs_among_schedules::<Pg>(10_000);
}

/// Two handles whose callers' clocks are days and minutes apart agree,
/// because the database's clock decides
/// (`server_store::the_server_clock_judges_leases`).
#[test]
fn the_database_clock_judges_leases() {
    server_store::the_server_clock_judges_leases::<Pg>();
}

/// Two schemas in one database are two stores that never see each other,
/// each with its own tables.
#[test]
fn schemas_isolate_deployments() {
    let db = shared().fresh_database("iso");
    let url = |schema: &str| format!("{}&schema={schema}", shared().url(&db));
    let a = block_on(open(&url("team_a"), PgOptions::default())).unwrap();
    let b = block_on(open(&url("team_b"), PgOptions::default())).unwrap();
    block_on(server_store::locations_isolate_deployments(&a, &b));
    let tables = shared().psql(
        &db,
        "SELECT string_agg(table_schema || '.' || table_name, ',' ORDER BY table_schema, table_name) \
         FROM information_schema.tables WHERE table_schema LIKE 'team_%'",
    );
    assert_eq!(
        tables,
        "team_a.effects,team_a.job_state,team_a.schema_migrations,team_a.tick_mark,\
         team_b.effects,team_b.job_state,team_b.schema_migrations,team_b.tick_mark"
    );
}

/// Several processes (here threads, each with a store of its own) opening
/// a new schema at once: it is created once, and every one of them opens.
#[test]
fn concurrent_first_use_creates_the_schema_once() {
    const OPENERS: usize = 6;
    let url = fresh_url("race");
    let barrier = Arc::new(Barrier::new(OPENERS));
    let openers: Vec<_> = (0..OPENERS)
        .map(|_| {
            let (url, barrier) = (url.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                block_on(open(&url, PgOptions::default())).map(|s| s.opened().clone())
            })
        })
        .collect();
    let reports: Vec<_> = openers
        .into_iter()
        .map(|t| {
            t.join()
                .unwrap()
                .unwrap_or_else(|e| panic!("an opener failed: {e}"))
        })
        .collect();
    let created: Vec<_> = reports.iter().filter(|r| !r.already_there()).collect();
    assert_eq!(created.len(), 1, "{reports:?}");
    assert!(created[0].created_schema());
    assert_eq!(created[0].applied(), &[1, 2, 3]);
    let schema = reports[0].schema();
    assert_eq!(
        shared().psql(
            "postgres",
            &format!("SELECT count(*), max(version) FROM {schema}.schema_migrations")
        ),
        "3|3"
    );
    // And `init` on an existing schema, from several tasks at once,
    // reports it already there.
    let store = block_on(open(&url, PgOptions::default())).unwrap();
    let inits = (0..4).map(|_| store.init()).collect();
    for report in block_on(cronslot_core::coord::exec::join_all(inits)) {
        assert!(report.as_ref().unwrap().already_there(), "{report:?}");
    }
    let report = block_on(store.init()).unwrap();
    assert_eq!(
        report.to_string(),
        format!("schema {schema:?} already there, at version 3")
    );
}

/// Without creation allowed, opening a missing schema fails and creates
/// nothing; opening with creation (or `init`) then creates it.
#[test]
fn opening_without_creation_needs_an_existing_schema() {
    let (created, found) = server_store::opening_without_creation_needs_an_existing_store::<Pg>(
        "holds no cronslot tables",
        |url| {
            let schema = url.rsplit_once("schema=").unwrap().1;
            shared().psql(
                "postgres",
                &format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}'"),
            ) == "1"
        },
    );
    assert!(!created.opened().already_there());
    assert!(created.opened().created_schema());
    assert!(found.opened().already_there());
}

/// One sweep deletes at most its limit; holds that lapsed go first, done
/// effects only after their retention, live holds never.
#[test]
fn sweeps_are_bounded() {
    const LIMIT: u32 = 5;
    const EXTRA: u32 = 3;
    let store = fresh_store("sweep");
    let old = at(0);
    let hold = Duration::from_secs(30);
    block_on(async {
        for i in 0..LIMIT + EXTRA {
            let began = store
                .begin_effect(&format!("j@{old}/lapsed-{i}"), "w", 1, old, hold)
                .await
                .unwrap();
            assert_eq!(began, EffectBegin::Acquired);
        }
        // Done at `old`: kept for the retention (30 days).
        let done = format!("j@{old}/done");
        store.begin_effect(&done, "w", 1, old, hold).await.unwrap();
        assert_eq!(
            store.finish_effect(&done, 1, "ok", old).await.unwrap(),
            EffectFinish::Recorded
        );
        // A hold that is still live a day later.
        let live = format!("j@{old}/live");
        let day = SignedDuration::from_hours(24);
        let later = old.checked_add(day).unwrap();
        store
            .begin_effect(&live, "w", 2, later, Duration::from_secs(3600))
            .await
            .unwrap();

        let s = store.requests();
        assert_eq!(
            store.sweep_effects(later, LIMIT).await.unwrap(),
            u64::from(LIMIT)
        );
        assert_eq!(rw(store.requests().since(&s)), (0, 1), "one statement");
        assert_eq!(
            store.sweep_effects(later, LIMIT).await.unwrap(),
            u64::from(EXTRA)
        );
        assert_eq!(store.sweep_effects(later, LIMIT).await.unwrap(), 0);
        assert_eq!(store.sweep_effects(later, 0).await.unwrap(), 0);
        assert!(store.read_effect(&done).await.unwrap().is_some());
        assert!(store.read_effect(&live).await.unwrap().is_some());
        // 31 days on, the done effect's retention is over (and the live
        // hold lapsed long ago).
        let month = old.checked_add(day * 31).unwrap();
        assert_eq!(store.sweep_effects(month, LIMIT).await.unwrap(), 2);
        assert!(store.read_effect(&done).await.unwrap().is_none());
    });
}

/// A periodic sweeper runs batches until one comes back short, at most
/// the batches it is given, one statement each.
#[test]
fn sweeping_expired_entries_runs_bounded_batches() {
    let store = fresh_store("sweep_expired");
    let old = at(0);
    let later = old.checked_add(SignedDuration::from_hours(1)).unwrap();
    block_on(async {
        for i in 0..7 {
            store
                .begin_effect(
                    &format!("j@{old}/e{i}"),
                    "w",
                    1,
                    old,
                    Duration::from_secs(1),
                )
                .await
                .unwrap();
        }
        let s = store.requests();
        assert_eq!(store.sweep_expired(later, 2, 2).await.unwrap(), 4);
        assert_eq!(rw(store.requests().since(&s)), (0, 2), "two batches");
        let s = store.requests();
        assert_eq!(store.sweep_expired(later, 2, 10).await.unwrap(), 3);
        assert_eq!(
            rw(store.requests().since(&s)),
            (0, 2),
            "the second is short"
        );
        assert_eq!(store.sweep_expired(later, 2, 10).await.unwrap(), 0);
    });
}

/// The retention is an option.
#[test]
fn effect_retention_is_configurable() {
    let store = block_on(open(
        &fresh_url("retention"),
        PgOptions::default().effect_retention(Duration::from_secs(60)),
    ))
    .unwrap();
    let old = at(0);
    block_on(async {
        store
            .begin_effect("j@x/e", "w", 1, old, Duration::from_secs(1))
            .await
            .unwrap();
        store.finish_effect("j@x/e", 1, "ok", old).await.unwrap();
        assert_eq!(store.sweep_effects(at(59), 10).await.unwrap(), 0);
        assert_eq!(store.sweep_effects(at(61), 10).await.unwrap(), 1);
    });
}

/// Rows that cannot be decoded are corrupt, named by store and job.
#[test]
fn undecodable_rows_are_corrupt() {
    let store = fresh_store("corrupt");
    let schema = store.location().schema().to_string();
    shared().psql(
        "postgres",
        &format!(
            "INSERT INTO {schema}.job_state (job, version, state) VALUES ('bad', 1, 'not json');
             INSERT INTO {schema}.effects (key, rev, record, expires_at)
               VALUES ('bad@x/e', 1, '{{\"key\": \"other\"}}', now())"
        ),
    );
    let e = block_on(store.get("bad")).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Corrupt);
    assert!(
        e.message
            .starts_with("PostgreSQL store postgres://postgres@127.0.0.1:"),
        "{e}"
    );
    assert!(e.message.contains("bad"), "{e}");
    let e = block_on(store.read_effect("bad@x/e")).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Corrupt, "{e}");
    // A record of the wrong job is refused before it is written.
    let state = JobState::new("other", "0000000000000000", at(0), false);
    let e = block_on(store.put("bad", &state, Some(1))).unwrap_err();
    assert_eq!(e.kind, StoreErrorKind::Other, "{e}");
}

/// Jobs are listed in the order of Rust's strings (bytes), as every store
/// lists them (`server_store::jobs_are_listed_in_byte_order`).
#[test]
fn jobs_are_listed_in_byte_order() {
    block_on(server_store::jobs_are_listed_in_byte_order(&fresh_store(
        "order",
    )));
}

/// Clones share one pool and one background thread; calls from many
/// threads, each with a runtime of its own that ends, keep working, and
/// the pool stays within its bound.
#[test]
fn clones_work_from_any_thread_and_runtime() {
    let store = fresh_store("threads");
    server_store::clones_work_from_any_thread_and_runtime(&store);
    assert!(store.requests().connections <= cronslot_postgres::DEFAULT_MAX_CONNECTIONS as u64);
}

/// `PgStore` can be shared across threads.
#[test]
fn the_store_is_send_and_sync() {
    fn check<T: Send + Sync + Clone + 'static>() {}
    check::<PgStore>();
}

/// A Unix socket host: the socket's directory, percent-encoded, as libpq
/// writes it.
#[test]
fn a_unix_socket_host() {
    let dir = shared().socket_dir().to_string_lossy().replace('/', "%2F");
    let url = format!(
        "postgres://postgres@{dir}:{}/postgres?schema={}",
        shared().port,
        unique("sock")
    );
    let store = block_on(open(&url, PgOptions::default())).unwrap();
    assert!(
        store
            .location()
            .to_string()
            .starts_with("postgres://postgres@%2F")
    );
    let state = JobState::new("j", "0000000000000000", at(0), false);
    assert_eq!(
        block_on(store.put("j", &state, None)).unwrap(),
        PutResult::Written(1)
    );
}

/// `sslmode=prefer` (the default) on a server without TLS: plain TCP.
#[test]
fn prefer_falls_back_to_plain_tcp() {
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres?schema={}",
        shared().port,
        unique("prefer")
    );
    let store = block_on(open(&url, PgOptions::default())).unwrap();
    assert_eq!(
        store.location().sslmode(),
        cronslot_postgres::SslMode::Prefer
    );
    assert!(block_on(store.jobs()).unwrap().is_empty());
}

/// Tables recorded as created but gone are not quietly made again empty
/// (that would run slots that already ran): the store refuses to open.
#[test]
fn a_schema_missing_a_table_is_refused() {
    let url = fresh_url("dropped");
    let store = block_on(open(&url, PgOptions::default())).unwrap();
    let schema = store.location().schema().to_string();
    shared().psql("postgres", &format!("DROP TABLE {schema}.job_state"));
    let e = block_on(open(&url, PgOptions::default())).unwrap_err();
    assert_eq!(e.kind(), &StoreErrorKind::Corrupt, "{e}");
    assert!(e.message().contains("lacks table job_state"), "{e}");
}

/// A schema at store version 1 (before the wake index), as an older
/// cronslot left it, is migrated when opened: its records load, the wake
/// column and the tick mark appear, and the next write indexes a wake.
/// Opening without creation refuses it until `init` migrates it.
#[test]
fn a_version_1_schema_is_migrated() {
    let schema = unique("v1");
    let url = format!("{}&schema={schema}", shared().url("postgres"));
    let record = cronslot_core::conformance::schema_1_record("j");
    // A record with a retry waiting: the migration gives it its wake.
    let mut retrying = JobState::new("retrying", "hash", at(0), false);
    retrying.pending.push(PendingRun {
        slot: at(0),
        attempt: 2,
        not_before: at(90),
        retry_until: None,
        last_error: None,
        checkpoint: None,
        origin: Origin::Schedule,
        version: None,
    });
    shared().psql(
        "postgres",
        &format!(
            "CREATE SCHEMA {schema};
             CREATE TABLE {schema}.schema_migrations (version integer PRIMARY KEY,
                 applied_at timestamptz NOT NULL DEFAULT now(), applied_by text NOT NULL);
             INSERT INTO {schema}.schema_migrations (version, applied_by) VALUES (1, 'cronslot-postgres 0.1.0');
             CREATE TABLE {schema}.job_state (job text COLLATE \"C\" PRIMARY KEY,
                 version bigint NOT NULL CHECK (version >= 1), state text NOT NULL,
                 updated_at timestamptz NOT NULL DEFAULT now());
             CREATE TABLE {schema}.effects (key text COLLATE \"C\" PRIMARY KEY,
                 rev bigint NOT NULL CHECK (rev >= 1), record text NOT NULL,
                 expires_at timestamptz NOT NULL, updated_at timestamptz NOT NULL DEFAULT now());
             INSERT INTO {schema}.job_state (job, version, state) VALUES ('j', 1, '{}');
             INSERT INTO {schema}.job_state (job, version, state) VALUES ('retrying', 1, '{}');",
            record.replace('\'', "''"),
            encode_state(&retrying).replace('\'', "''")
        ),
    );
    let refused = block_on(open(&url, PgOptions::default().create(false))).unwrap_err();
    assert!(refused.message().contains("cronslot init"), "{refused}");

    let store = block_on(open(&url, PgOptions::default()))
        .unwrap()
        .judge_by(JudgeClock::Caller);
    assert_eq!(store.opened().applied(), &[2, 3]);
    let got = block_on(store.get("j")).unwrap().unwrap();
    assert_eq!(got.version, 1);
    let start = block_on(store.tick_start(at(0), 10)).unwrap();
    assert_eq!((start.mark, start.woken.len()), (None, 0));
    let repaired = block_on(store.get("retrying")).unwrap().unwrap();
    assert_eq!(
        (repaired.version, repaired.value.wake_at),
        (2, Some(at(90)))
    );
    assert_eq!(
        block_on(store.tick_start(at(90), 10)).unwrap().woken,
        vec!["retrying".to_string()]
    );
    let mut waking = got.value.clone();
    waking.wake_at = Some(at(0));
    block_on(store.put("j", &waking, Some(1))).unwrap();
    assert_eq!(
        block_on(store.tick_start(at(0), 10)).unwrap().woken,
        vec!["j".to_string()]
    );
}

/// A keyed run's costs, exact (issue 27): an enqueue one read and one
/// write, a duplicate one read, a run one read and two writes
/// (`server_store::keyed_run_costs_are_exact`).
#[test]
fn keyed_run_costs_are_exact() {
    server_store::keyed_run_costs_are_exact::<Pg>();
}

/// Conditional writes sent at once go to the server in groups (one
/// statement for many records), and each keeps the answer it would have
/// had alone: 40 first writes, then 40 compare-and-sets of which every
/// other one expects a version already gone, then 8 writes of one record
/// at the same version. The first two rounds share statements (grouped
/// writes are counted), the stale ones lose with the current record, the
/// eight of one record make exactly one winner, and the wake of a grouped
/// write is in the index like any other.
#[test]
fn writes_sent_together_keep_their_own_answers() {
    use cronslot_core::coord::exec::join_all;

    const N: usize = 40;
    let store = fresh_store("grouped");
    let created = at(1_000_000);
    let state = |job: &str, note: usize| {
        let mut s = JobState::new(job, "h", created, false);
        s.paused_reason = Some(format!("note {note}"));
        s.wake_at = Some(at(1_000_600));
        s
    };
    let names: Vec<String> = (0..N).map(|i| format!("grouped-{i:02}")).collect();
    let before = store.requests();
    let firsts = names.iter().map(|job| {
        let (store, s) = (store.clone(), state(job, 0));
        async move { store.put(job, &s, None).await }
    });
    for (i, answer) in block_on(join_all(firsts.collect())).into_iter().enumerate() {
        assert_eq!(
            answer,
            Ok(PutResult::Written(1)),
            "first write of {}",
            names[i]
        );
    }
    // Every other write expects version 7, which was never written.
    let updates = names.iter().enumerate().map(|(i, job)| {
        let (store, s) = (store.clone(), state(job, 1));
        let expected = if i % 2 == 0 { 1 } else { 7 };
        async move { store.put(job, &s, Some(expected)).await }
    });
    for (i, answer) in block_on(join_all(updates.collect()))
        .into_iter()
        .enumerate()
    {
        if i % 2 == 0 {
            assert_eq!(answer, Ok(PutResult::Written(2)), "{}", names[i]);
        } else {
            let Ok(PutResult::Conflict(Some(current))) = answer else {
                panic!(
                    "{}: a stale write loses with the record: {answer:?}",
                    names[i]
                );
            };
            assert_eq!(current.version, 1, "{}", names[i]);
            assert_eq!(current.value.paused_reason.as_deref(), Some("note 0"));
        }
    }
    let counted = store.requests().since(&before);
    assert_eq!(
        counted.writes,
        2 * N as u64,
        "each write counts as one: {counted:?}"
    );
    assert!(
        counted.grouped > 0,
        "80 writes sent at once share statements: {counted:?}"
    );
    // Eight writers of one record at the same version: one wins, the
    // others see its record.
    let contenders = (0..8).map(|k| {
        let (store, job) = (store.clone(), names[0].clone());
        let s = state(&job, 10 + k);
        async move { store.put(&job, &s, Some(2)).await }
    });
    let answers = block_on(join_all(contenders.collect()));
    let winners: Vec<usize> = answers
        .iter()
        .enumerate()
        .filter(|(_, a)| **a == Ok(PutResult::Written(3)))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(winners.len(), 1, "{answers:?}");
    let won = format!("note {}", 10 + winners[0]);
    for answer in &answers {
        match answer {
            Ok(PutResult::Written(3)) => {}
            Ok(PutResult::Conflict(Some(current))) => {
                assert_eq!(current.version, 3);
                assert_eq!(current.value.paused_reason.as_deref(), Some(won.as_str()));
            }
            other => panic!("a lost write answers with the winner: {other:?}"),
        }
    }
    let start = block_on(store.tick_start(at(1_001_000), 100)).unwrap();
    assert_eq!(
        start.woken.len(),
        N,
        "every grouped write's wake is indexed"
    );
}
