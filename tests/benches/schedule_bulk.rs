//! Bulk writes of a dynamic job's schedules (issue 28): schedules written
//! per second from one process, 1,000 a request
//! (`Schedules::put_schedules`), on SQLite, PostgreSQL, Redis and
//! DynamoDB (moto), the servers started as the tests start them. Three
//! passes over the same keys: creating them, writing them again unchanged
//! (the start-up re-upsert of a service; one read per 1,000 where the
//! store reads many at once, no write), and changing them (a new cron).
//! Then every schedule is listed, 1,000 a page.
//!
//! Run with `cargo bench -p cronslot-tests --bench schedule_bulk`
//! (`SCHEDULES=N` per store, default 100,000; `DYNAMO_SCHEDULES`, default
//! 10,000: moto is slow). Prints schedules per second and what the store
//! was sent.

use std::time::Instant;

use cronslot_core::coord::decide::{Precondition, ScheduleWrite};
use cronslot_core::coord::{
    CasCoordinator, MAX_SCHEDULE_BATCH, SchedulePut, ScheduleQuery, Schedules, StateStore,
};
use cronslot_core::manifest::JobTemplate;
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use cronslot_dynamodb::DynamoStore;
use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_sqlite::SqliteStore;
use cronslot_tests::keyed_bench::{dynamic_template, parked};
use jiff::Timestamp;

fn spec(json: &str) -> ScheduleSpec {
    match ScheduleSpec::from_json(json) {
        Ok(s) => s,
        Err(e) => panic!("{e:?}"),
    }
}

fn key(i: usize) -> ScheduleKey {
    match ScheduleKey::new(format!("tenant-{i:07}")) {
        Ok(k) => k,
        Err(e) => panic!("{e}"),
    }
}

/// Writes `n` schedules with `json`, 1,000 a request: schedules per
/// second, and how many of each outcome.
fn pass<S: StateStore>(
    c: &CasCoordinator<S>,
    template: &JobTemplate,
    n: usize,
    json: &str,
) -> (f64, [usize; 3]) {
    let spec = spec(json);
    let mut outcomes = [0usize; 3];
    let started = Instant::now();
    for start in (0..n).step_by(MAX_SCHEDULE_BATCH) {
        let puts: Vec<SchedulePut> = (start..n.min(start + MAX_SCHEDULE_BATCH))
            .map(|i| SchedulePut {
                key: key(i),
                spec: spec.clone(),
                precondition: Precondition::None,
            })
            .collect();
        for (i, answer) in parked(c.put_schedules(template, puts, Timestamp::now()))
            .into_iter()
            .enumerate()
        {
            match answer {
                Ok(ScheduleWrite::Created { .. }) => outcomes[0] += 1,
                Ok(ScheduleWrite::Changed { .. }) => outcomes[1] += 1,
                Ok(ScheduleWrite::Unchanged { .. }) => outcomes[2] += 1,
                other => panic!("schedule {}: {other:?}", start + i),
            }
        }
    }
    (n as f64 / started.elapsed().as_secs_f64(), outcomes)
}

/// Pages through every schedule, 1,000 a page: schedules per second.
fn listing<S: StateStore>(c: &CasCoordinator<S>, template: &JobTemplate, n: usize) -> f64 {
    let mut query = ScheduleQuery::default();
    let mut listed = 0;
    let started = Instant::now();
    loop {
        let page = match parked(c.list_schedules(template, &query)) {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        };
        listed += page.schedules.len();
        match page.cursor {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    assert_eq!(listed, n, "every schedule once");
    n as f64 / started.elapsed().as_secs_f64()
}

fn measure<S: StateStore>(name: &str, store: S, n: usize, sent: impl Fn() -> String) {
    let template = dynamic_template("bulk");
    let c = CasCoordinator::new(store, 1);
    let steps: [(&str, &str, usize); 3] = [
        (
            "create",
            r#"{"cron": "0 9 1 * *", "timezone": "Europe/Berlin"}"#,
            0,
        ),
        (
            "unchanged",
            r#"{"cron": "0 9 1 * *", "timezone": "Europe/Berlin"}"#,
            2,
        ),
        (
            "change",
            r#"{"cron": "0 10 1 * *", "timezone": "Europe/Berlin"}"#,
            1,
        ),
    ];
    for (step, json, outcome) in steps {
        let before = sent();
        let (rate, outcomes) = pass(&c, &template, n, json);
        assert_eq!(outcomes[outcome], n, "{name} {step}: {outcomes:?}");
        println!(
            "{name:<9} {step:<9} {n:>8} schedules {rate:>9.0}/s   sent before {before}, after {}",
            sent()
        );
    }
    let rate = listing(&c, &template, n);
    println!("{name:<9} listing   {n:>8} schedules {rate:>9.0}/s (1,000 a page)");
}

fn main() {
    let env = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let n = env("SCHEDULES", 100_000);
    let only = std::env::var("STORES").unwrap_or_else(|_| "sqlite,postgres,redis,dynamodb".into());
    let dir = std::env::temp_dir().join(format!("cronslot-bench-bulk-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("{}: {e}", dir.display());
    }
    if only.contains("sqlite") {
        let store = match SqliteStore::open(dir.join("bulk.db")) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        measure("sqlite", store, n, String::new);
    }
    if only.contains("postgres") {
        let pg = cronslot_tests::postgres::shared();
        let url = pg.url(&pg.fresh_database("bench_bulk"));
        let store = match parked(PgStore::connect(&url)) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let counted = store.clone();
        measure("postgres", store, n, move || {
            let r = counted.requests();
            format!(
                "{} reads {} writes ({} grouped)",
                r.reads, r.writes, r.grouped
            )
        });
    }
    if only.contains("redis") {
        let redis = cronslot_tests::redis::shared();
        let store = match parked(RedisStore::connect(&redis.url("bench-bulk"))) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        };
        let counted = store.clone();
        measure("redis", store, n, move || {
            let r = counted.requests();
            format!("{} reads {} writes", r.reads, r.writes)
        });
    }
    if only.contains("dynamodb") {
        use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
        let moto = cronslot_tests::moto::moto();
        // Dummy credentials: nothing is looked up in the environment.
        let config = aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new("us-east-1"))
            .endpoint_url(&moto.endpoint)
            .credentials_provider(Credentials::new("test", "test", None, None, "bench"))
            .build();
        let client = aws_sdk_dynamodb::Client::from_conf(config);
        let store = DynamoStore::new(client, "bench-bulk");
        if let Err(e) = parked(store.create_table()) {
            panic!("{e}");
        }
        measure(
            "dynamodb",
            store,
            env("DYNAMO_SCHEDULES", 10_000),
            String::new,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
