//! Upserts of a dynamic job's schedules per second (issue 26), from one
//! writer and from eight at once, on SQLite, PostgreSQL and Redis (the
//! servers started as the tests start them). Each writer has its own
//! coordinator and store handle, as a process of a service would; each
//! upsert is a full `put_schedule` (one read, one conditional write). Three
//! figures per store and writer count: creating new schedules, changing
//! them (a new cron, version 2), and upserting them again unchanged (one
//! read, no write), the start-up re-upsert every instance of a service
//! does at each deploy.
//!
//! Then the eight writers' schedules are listed, 1,000 a page, following
//! the cursors: schedules listed per second, and the pages it took.
//!
//! Run with `cargo bench -p cronslot-tests --bench schedule_upserts`
//! (`SCHEDULES=N` per writer, default 2,000). Prints upserts per second
//! and the ratio of eight writers to one.

use std::time::Instant;

use cronslot_core::coord::decide::{Precondition, ScheduleWrite};
use cronslot_core::coord::exec::block_on;
use cronslot_core::coord::{CasCoordinator, ScheduleQuery, Schedules, StateStore};
use cronslot_core::manifest::{JobTemplate, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_sqlite::SqliteStore;
use jiff::Timestamp;

const WRITERS: usize = 8;

fn template() -> JobTemplate {
    match parse_manifest(
        "[[job]]\nname = \"bench\"\ndynamic = true\ncommand = [\"true\"]\n",
        "bench.toml",
    ) {
        Ok(mut m) => m.templates.remove(0),
        Err(e) => panic!("{e}"),
    }
}

fn spec(json: &str) -> ScheduleSpec {
    match ScheduleSpec::from_json(json) {
        Ok(s) => s,
        Err(e) => panic!("{e:?}"),
    }
}

/// One writer's `n` upserts of its own keys with `json`; how many of each
/// outcome.
fn upserts<S: StateStore>(store: S, writer: usize, n: usize, json: &str) -> [u64; 3] {
    let template = template();
    let coordinator = CasCoordinator::new(store, writer as u64 + 1);
    let spec = spec(json);
    let mut outcomes = [0u64; 3];
    for i in 0..n {
        let key = match ScheduleKey::new(format!("w{writer}-t{i:06}")) {
            Ok(k) => k,
            Err(e) => panic!("{e}"),
        };
        let written = block_on(coordinator.put_schedule(
            &template,
            &key,
            spec.clone(),
            Precondition::None,
            Timestamp::now(),
        ));
        match written {
            Ok(ScheduleWrite::Created { .. }) => outcomes[0] += 1,
            Ok(ScheduleWrite::Changed { .. }) => outcomes[1] += 1,
            Ok(ScheduleWrite::Unchanged { .. }) => outcomes[2] += 1,
            other => panic!("writer {writer}, schedule {i}: {other:?}"),
        }
    }
    outcomes
}

/// Upserts per second of `writers` writers at once, each `n` times.
fn rate<S: StateStore + Clone + Send + 'static>(
    store: &S,
    writers: usize,
    n: usize,
    json: &'static str,
) -> (f64, [u64; 3]) {
    let started = Instant::now();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let store = store.clone();
            std::thread::spawn(move || upserts(store, w, n, json))
        })
        .collect();
    let mut total = [0u64; 3];
    for h in handles {
        let outcomes = match h.join() {
            Ok(o) => o,
            Err(_) => panic!("a writer panicked"),
        };
        for (t, o) in total.iter_mut().zip(outcomes) {
            *t += o;
        }
    }
    (
        (writers * n) as f64 / started.elapsed().as_secs_f64(),
        total,
    )
}

/// Pages through every schedule in `store`, 1,000 a page: schedules
/// listed per second, and the pages.
fn listing<S: StateStore>(store: S, expected: usize) -> (f64, usize) {
    let template = template();
    let coordinator = CasCoordinator::new(store, 99);
    let mut query = ScheduleQuery::default();
    let (mut listed, mut pages) = (0, 0);
    let started = Instant::now();
    loop {
        let page = match block_on(coordinator.list_schedules(&template, &query)) {
            Ok(p) => p,
            Err(e) => panic!("page {pages}: {e}"),
        };
        listed += page.schedules.len();
        pages += 1;
        match page.cursor {
            Some(c) => query.after = Some(c),
            None => break,
        }
    }
    assert_eq!(listed, expected, "every schedule once");
    (listed as f64 / started.elapsed().as_secs_f64(), pages)
}

fn measure<S: StateStore + Clone + Send + 'static>(name: &str, one: S, eight: S, n: usize) {
    let steps: [(&str, &'static str, usize); 3] = [
        (
            "create",
            r#"{"cron": "0 9 1 * *", "timezone": "Europe/Berlin"}"#,
            0,
        ),
        (
            "change",
            r#"{"cron": "0 10 1 * *", "timezone": "Europe/Berlin"}"#,
            1,
        ),
        (
            "unchanged",
            r#"{"cron": "0 10 1 * *", "timezone": "Europe/Berlin"}"#,
            2,
        ),
    ];
    for (step, json, outcome) in steps {
        let (single, a) = rate(&one, 1, n, json);
        let (many, b) = rate(&eight, WRITERS, n, json);
        assert_eq!(a[outcome], n as u64, "{name} {step}, one writer: {a:?}");
        assert_eq!(
            b[outcome],
            (WRITERS * n) as u64,
            "{name} {step}, eight: {b:?}"
        );
        println!(
            "{name:<10} {step:<9} 1 writer {single:>8.0}/s   {WRITERS} writers {many:>8.0}/s   ratio {:.2}",
            many / single
        );
    }
    let (rate, pages) = listing(eight, WRITERS * n);
    println!(
        "{name:<10} listing   {} schedules in {pages} pages of 1,000: {rate:>8.0}/s",
        WRITERS * n
    );
}

fn main() {
    let n: usize = std::env::var("SCHEDULES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let dir = std::env::temp_dir().join(format!("cronslot-bench-upserts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("{}: {e}", dir.display());
    }
    let open_sqlite = |name: &str| match SqliteStore::open(dir.join(name)) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    measure("sqlite", open_sqlite("one.db"), open_sqlite("eight.db"), n);

    let pg = cronslot_tests::postgres::shared();
    let connect_pg = |tag: &str| {
        let url = pg.url(&pg.fresh_database(tag));
        match block_on(PgStore::connect(&url)) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    };
    measure(
        "postgres",
        connect_pg("bench_one"),
        connect_pg("bench_eight"),
        n,
    );

    let redis = cronslot_tests::redis::shared();
    let connect_redis = |tag: &str| match block_on(RedisStore::connect(&redis.url(tag))) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    measure(
        "redis",
        connect_redis("bench-one"),
        connect_redis("bench-eight"),
        n,
    );
    let _ = std::fs::remove_dir_all(&dir);
}
