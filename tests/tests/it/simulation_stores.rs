//! The deterministic simulation (issue 7) on more stores: the Durable
//! Object's store (`cronslot_cf::ObjectStore` on a real SQLite per job) and
//! the DynamoDB store on moto. `simulation.rs` runs it on the memory
//! and SQLite stores.
//!
//! `CRONSLOT_SIM_SLOTS=N` sets the virtual slots of the main tests (a
//! soak); `CRONSLOT_SIM_SEED=S` replays one seed.
//!
//! Every store here adds no await point of its own (each operation runs to
//! completion once the simulation's fault store lets it start), and neither
//! does the plain `MemoryStore`: the simulation therefore interleaves them
//! identically, and a seed must give the same trace hash on each of them.
//! The tests assert that, which makes every run a differential test of the
//! store against the memory store as well as a check against the model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
use cronslot_core::coord::MemoryStore;
use cronslot_dynamodb::DynamoStore;
use cronslot_tests::moto::moto;
use cronslot_tests::sim::{SimConfig, SimReport, simulate, slots_from_env};
use cronslot_tests::sim_backends::{ObjectStores, OnTokio};

fn seed(default: u64) -> u64 {
    std::env::var("CRONSLOT_SIM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn print(store: &str, r: &SimReport, secs: f64) {
    eprintln!("{}", r.summary(store, secs));
}

/// No violation, and something ran; the message says how to replay.
fn check(store: &str, test: &str, slots: u64, r: &SimReport) {
    assert!(
        r.violations.is_empty(),
        "simulation on {store} failed with seed {seed}; replay with \
         CRONSLOT_SIM_SEED={seed} CRONSLOT_SIM_SLOTS={slots} cargo test -p cronslot-tests \
         --test it simulation_stores::{test}\n{}",
        r.violations.join("\n"),
        seed = r.seed,
    );
    assert!(
        r.claims > 0 && r.succeeded > 0 && r.store.unavailable > 0 && r.store.ambiguous > 0,
        "simulation on {store} with seed {}: it ran nothing or injected no store faults",
        r.seed
    );
}

/// The same run on the plain memory store: equal traces, or the store under
/// test behaved differently from it somewhere.
fn same_as_memory(store: &str, test: &str, cfg: &SimConfig, r: &SimReport) {
    let t = Instant::now();
    let m = simulate(MemoryStore::new(), cfg);
    print("memory (reference)", &m, t.elapsed().as_secs_f64());
    assert_eq!(
        (r.trace_hash, r.claims, &r.store),
        (m.trace_hash, m.claims, &m.store),
        "seed {seed}: {store} and the memory store ran differently (trace hash, claims, store \
         operations); replay with CRONSLOT_SIM_SEED={seed} CRONSLOT_SIM_SLOTS={slots} cargo test \
         -p cronslot-tests --test it simulation_stores::{test}",
        seed = cfg.seed,
        slots = cfg.slots,
    );
}

// ------------------------------------------------------ durable object ----

/// The Durable Object's store, one object (its own SQLite) per job.
///
/// In workerd, one coordinator runs inside each object and the object
/// serialises its requests; here 8 coordinators share the objects and
/// interleave at every store call, a superset of the object's interleavings
/// (see `ObjectStores`).
#[test]
fn simulation_on_durable_object_store() {
    let slots = slots_from_env(1_000);
    let cfg = SimConfig::new(seed(31), slots);
    let store = ObjectStores::new();
    let t = Instant::now();
    let r = simulate(store.clone(), &cfg);
    print("durable-object", &r, t.elapsed().as_secs_f64());
    check(
        "durable-object",
        "simulation_on_durable_object_store",
        slots,
        &r,
    );
    assert_eq!(store.objects(), 5, "one object per simulated job");
    same_as_memory(
        "durable-object",
        "simulation_on_durable_object_store",
        &cfg,
        &r,
    );
}

// ------------------------------------------------------- dynamodb/moto ----

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

fn runtime() -> Rc<tokio::runtime::Runtime> {
    Rc::new(
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime"),
    )
}

/// One simulation on a new, empty table of its own.
fn simulate_on_dynamo(
    client: &Client,
    runtime: &Rc<tokio::runtime::Runtime>,
    cfg: &SimConfig,
) -> (SimReport, f64) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let table = format!(
        "cronslot-sim-{}-{}-{}",
        cfg.seed,
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let store = DynamoStore::new(client.clone(), table);
    runtime
        .block_on(store.create_table())
        .expect("creating the simulation's table on moto");
    let t = Instant::now();
    let r = simulate(OnTokio::new(store, runtime.clone()), cfg);
    (r, t.elapsed().as_secs_f64())
}

/// The DynamoDB store on moto, through the generic coordinator, under the
/// simulation's faults (on top of moto, which injects none).
#[test]
fn simulation_on_dynamodb_on_moto() {
    let slots = slots_from_env(400);
    let cfg = SimConfig::new(seed(41), slots);
    let (client, runtime) = (moto_client(), runtime());
    let (r, secs) = simulate_on_dynamo(&client, &runtime, &cfg);
    print("dynamodb-moto", &r, secs);
    check("dynamodb-moto", "simulation_on_dynamodb_on_moto", slots, &r);
    same_as_memory("dynamodb-moto", "simulation_on_dynamodb_on_moto", &cfg, &r);
}

/// Same seed, same run on moto: two fresh tables, one trace. (Each store
/// call runs to completion before the simulation goes on, and what moto
/// stores and answers depends only on the requests: the items' versions,
/// conditions and ALL_OLD answers, never its clock.)
#[test]
fn dynamodb_on_moto_same_seed_same_run() {
    const SLOTS: u64 = 100;
    let cfg = SimConfig::new(seed(42), SLOTS);
    let (client, runtime) = (moto_client(), runtime());
    let (a, secs_a) = simulate_on_dynamo(&client, &runtime, &cfg);
    print("dynamodb-moto (1st)", &a, secs_a);
    let (b, secs_b) = simulate_on_dynamo(&client, &runtime, &cfg);
    print("dynamodb-moto (2nd)", &b, secs_b);
    check(
        "dynamodb-moto",
        "dynamodb_on_moto_same_seed_same_run",
        SLOTS,
        &a,
    );
    assert_eq!(
        (a.trace_hash, a.claims, &a.store),
        (b.trace_hash, b.claims, &b.store),
        "seed {}: two runs on moto differ",
        cfg.seed
    );
}
