//! The deterministic simulation (issue 7) on every store, through one
//! harness (`cronslot_tests::sim::stores`): each store below says how to
//! open a fresh, empty one, its default seeds and slots, whether a seed
//! must give the memory store's trace, and what is particular to it to
//! check after a run; each store's test is one line, and every store gets
//! the same checks (no violation, something ran, store faults injected,
//! the memory store's run where it must match).
//!
//! `CRONSLOT_SIM_SLOTS=N` sets the virtual slots per seed (a soak);
//! `CRONSLOT_SIM_SEED=S` replays one seed; `CRONSLOT_SIM_SEEDS=K` runs K
//! seeds. A failure prints the command that replays it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use cronslot_core::coord::MemoryStore;
use cronslot_dynamodb::DynamoStore;
use cronslot_postgres::{PgOptions, PgStore, parse_postgres_location_with_env};
use cronslot_redis::{RedisOptions, RedisStore, parse_redis_location_with_env};
use cronslot_runner::SqliteStore;
use cronslot_tests::moto::moto;
use cronslot_tests::sim::stores::{Fresh, SimStore, replays, run};
use cronslot_tests::sim::{SimConfig, SimReport, simulate, specs};
use cronslot_tests::sim_backends::{ObjectStores, OnTokio};

/// A test that runs the simulation on a store with every check.
macro_rules! simulation_on {
    ($test:ident: $store:ty) => {
        #[test]
        fn $test() {
            run::<$store>(concat!(module_path!(), "::", stringify!($test)));
        }
    };
}

simulation_on!(simulation_on_memory_store: Memory);
simulation_on!(simulation_on_sqlite_store: Sqlite);
simulation_on!(simulation_on_durable_object_store: DurableObject);
simulation_on!(simulation_on_dynamodb_on_moto: DynamoOnMoto);
simulation_on!(simulation_on_postgres: Postgres);
simulation_on!(simulation_on_redis: Redis);

/// Same seed, same run: the trace hash (every delivery, crash, pause,
/// claim, completion, record version and effect) is identical; another
/// seed, another run.
#[test]
fn same_seed_same_run() {
    let test = concat!(module_path!(), "::same_seed_same_run");
    let a = replays::<Memory>(test, 42, 500);
    let c = simulate(MemoryStore::new(), &SimConfig::new(a.seed + 1, 500));
    assert_ne!(a.trace_hash, c.trace_hash, "another seed, another run");
}

/// Same seed, same run on moto: two fresh tables, one trace. (Each store
/// call runs to completion before the simulation goes on, and what moto
/// stores and answers depends only on the requests: the items' versions,
/// conditions and ALL_OLD answers, never its clock.)
#[test]
fn dynamodb_on_moto_same_seed_same_run() {
    let test = concat!(module_path!(), "::dynamodb_on_moto_same_seed_same_run");
    replays::<DynamoOnMoto>(test, 42, 100);
}

// -------------------------------------------------------------- memory ----

/// The plain memory store: the reference the other stores are compared
/// with. Its two seeds of 1,500 slots, on two threads, are the longest
/// default runs, long enough to promise every kind of operator event.
struct Memory;

impl SimStore for Memory {
    type Store = MemoryStore;
    const NAME: &'static str = "memory";
    const SLOTS: u64 = 1_500;
    const SEEDS: &'static [u64] = &[1, 2];
    const SAME_AS_MEMORY: bool = false;
    const PARALLEL_SEEDS: bool = true;
    const OPERATOR_EVENTS: bool = true;

    fn open(_: &SimConfig) -> Fresh<MemoryStore> {
        Fresh::new(MemoryStore::new())
    }
}

// -------------------------------------------------------------- sqlite ----

/// The SQLite store on a file of its own, on tmpfs when there is one
/// (every write is fsynced: `synchronous=FULL`).
///
/// Not compared with the memory store's run: that would add a memory run
/// of 1,000 slots to every CI run. (Seed 11 does give the memory store's
/// trace, `6c061c276243becf`, as checked by hand when this harness was
/// written.)
struct Sqlite;

impl SimStore for Sqlite {
    type Store = SqliteStore;
    const NAME: &'static str = "sqlite";
    const SLOTS: u64 = 1_000;
    const SEEDS: &'static [u64] = &[11];
    const SAME_AS_MEMORY: bool = false;

    fn open(_: &SimConfig) -> Fresh<SqliteStore> {
        let dir = if std::path::Path::new("/dev/shm").is_dir() {
            tempfile::tempdir_in("/dev/shm").unwrap()
        } else {
            tempfile::tempdir().unwrap()
        };
        let store = SqliteStore::open(dir.path().join("sim.db")).unwrap();
        Fresh::keeping(store, dir)
    }
}

// ------------------------------------------------------ durable object ----

/// The Durable Object's store, one object (its own SQLite) per job.
///
/// In workerd, one coordinator runs inside each object and the object
/// serialises its requests; here 8 coordinators share the objects and
/// interleave at every store call, a superset of the object's interleavings
/// (see `ObjectStores`).
struct DurableObject;

impl SimStore for DurableObject {
    type Store = ObjectStores;
    const NAME: &'static str = "durable-object";
    const SLOTS: u64 = 1_000;
    const SEEDS: &'static [u64] = &[31];
    const SAME_AS_MEMORY: bool = true;

    fn open(_: &SimConfig) -> Fresh<ObjectStores> {
        Fresh::new(ObjectStores::new())
    }

    fn after_run(store: &ObjectStores, _: &SimReport) {
        assert_eq!(
            store.objects(),
            specs().len(),
            "one object per simulated job"
        );
    }
}

// ------------------------------------------------------- dynamodb/moto ----

/// The DynamoDB store on this binary's moto server, each run on a new
/// table of its own, through the generic coordinator, under the
/// simulation's faults (on top of moto, which injects none).
struct DynamoOnMoto;

impl SimStore for DynamoOnMoto {
    type Store = OnTokio<DynamoStore>;
    const NAME: &'static str = "dynamodb-moto";
    const SLOTS: u64 = 400;
    const SEEDS: &'static [u64] = &[41];
    const SAME_AS_MEMORY: bool = true;

    fn open(cfg: &SimConfig) -> Fresh<OnTokio<DynamoStore>> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let table = format!(
            "cronslot-sim-{}-{}-{}",
            cfg.seed,
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let runtime = runtime();
        let store = DynamoStore::new(moto_client(), table);
        runtime
            .block_on(store.create_table())
            .expect("creating the simulation's table on moto");
        Fresh::new(OnTokio::new(store, runtime))
    }
}

/// A DynamoDB client on this binary's moto server, with dummy credentials
/// and a fixed region. The attempt timeout only turns a hung emulator into
/// a failure instead of a hang.
fn moto_client() -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(&moto().endpoint)
        .credentials_provider(Credentials::new(
            "test",
            "test",
            None,
            None,
            "cronslot-tests",
        ))
        .timeout_config(
            TimeoutConfig::builder()
                .operation_attempt_timeout(Duration::from_secs(60))
                .build(),
        )
        .build();
    Client::from_conf(config)
}

// ---------------------------------------------------------- postgresql ----

/// The PostgreSQL store on this binary's private server
/// (`cronslot_tests::postgres`), each run in a new schema of its own. The
/// simulation drives virtual time, so the store judges leases by the
/// caller's clock. About 2.5 s per seed of 300 slots.
struct Postgres;

impl SimStore for Postgres {
    type Store = OnTokio<PgStore>;
    const NAME: &'static str = "postgres";
    const SLOTS: u64 = 300;
    const SEEDS: &'static [u64] = &[51, 52, 53];
    const SAME_AS_MEMORY: bool = true;

    fn open(_: &SimConfig) -> Fresh<OnTokio<PgStore>> {
        use cronslot_tests::postgres::{shared, unique};
        let runtime = runtime();
        let url = format!("{}&schema={}", shared().url("postgres"), unique("sim"));
        let location = parse_postgres_location_with_env(&url, |_| None).expect("the test URL");
        let store = runtime
            .block_on(PgStore::connect_with(location, PgOptions::default()))
            .expect("opening the simulation's store")
            .judge_by(cronslot_postgres::JudgeClock::Caller);
        Fresh::new(OnTokio::new(store, runtime))
    }

    /// The statements a run cost, for docs/performance.md.
    fn after_run(store: &OnTokio<PgStore>, _: &SimReport) {
        let counts = store.inner().requests();
        eprintln!(
            "postgres statements: {} reads, {} writes, {} connections",
            counts.reads, counts.writes, counts.connections
        );
    }
}

// --------------------------------------------------------------- redis ----

/// The Redis store on this binary's private server
/// (`cronslot_tests::redis`), each run under a new key prefix of its own,
/// judging leases by the caller's (virtual) clock.
struct Redis;

impl SimStore for Redis {
    type Store = OnTokio<RedisStore>;
    const NAME: &'static str = "redis";
    const SLOTS: u64 = 300;
    const SEEDS: &'static [u64] = &[61, 62, 63];
    const SAME_AS_MEMORY: bool = true;

    fn open(_: &SimConfig) -> Fresh<OnTokio<RedisStore>> {
        use cronslot_tests::redis::{shared, unique};
        let runtime = runtime();
        let url = shared().url(&unique("sim"));
        let location = parse_redis_location_with_env(&url, |_| None).expect("the test URL");
        let store = runtime
            .block_on(RedisStore::connect_with(location, RedisOptions::default()))
            .expect("opening the simulation's store")
            .judge_by(cronslot_redis::JudgeClock::Caller);
        Fresh::new(OnTokio::new(store, runtime))
    }

    /// The requests a run cost, and all of them on one connection (the
    /// simulation's faults are injected above the store, never on its
    /// connection: nothing may make it connect again).
    fn after_run(store: &OnTokio<RedisStore>, _: &SimReport) {
        let counts = store.inner().requests();
        eprintln!(
            "redis requests: {} reads, {} writes, {} connections",
            counts.reads, counts.writes, counts.connections
        );
        assert_eq!(counts.connections, 1, "one connection for the whole run");
    }
}

// --------------------------------------------------------------- tokio ----

/// The current-thread runtime a store's futures run on ([`OnTokio`]):
/// one per run, on the simulation's thread.
fn runtime() -> Rc<tokio::runtime::Runtime> {
    Rc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime"),
    )
}
