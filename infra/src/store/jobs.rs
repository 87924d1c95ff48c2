//! The stores jobs run on: what `run` and `tick` open, and what `init`
//! creates. Every store a fleet of machines can share (PostgreSQL, Redis,
//! DynamoDB) and SQLite (one machine, or several processes on it), opened
//! through `cronslot-stores`. A Worker's admin URL is not one: a Worker
//! runs its own jobs.

use std::time::Duration;

use cronslot_postgres::PgStore;
use cronslot_redis::RedisStore;
use cronslot_runner::Clock;
use cronslot_runtime::admin::{JobErrorDoc, RepairedJob};
use cronslot_stores::{AnyStore, JudgeClock, OpenOptions, StoreUrl};
use jiff::Timestamp;
use serde::Serialize;

use super::admin::{AdminStore, RepairTotals, Target};
use super::{StoreTarget, store_failure, wait};
use crate::exit::Failure;

/// How often a long-running `cronslot run` sweeps an effect ledger that
/// the store does not expire itself (PostgreSQL's and SQLite's), and how much one sweep
/// may delete (in statements of [`SWEEP_BATCH`] rows): bounded work, so a
/// sweep never holds the database for long, and entries expire at a rate
/// far above any job's.
const SWEEP_EVERY: Duration = Duration::from_secs(600);
const SWEEP_BATCH: u32 = 1000;
const SWEEP_MAX_BATCHES: u32 = 10;

/// What `init` found and did: a line for the person who asked, and the
/// same as `--format json` prints it.
pub struct Initialized {
    pub text: String,
    pub doc: InitDoc,
}

/// `cronslot init --format json`: the store, and what was created, already
/// there or repaired. The fields after `created` are those of the store's
/// kind; the others are left out.
#[derive(Debug, Serialize)]
pub struct InitDoc {
    /// The store, as the text output names it (without a password).
    pub store: String,
    /// `sqlite`, `postgres`, `redis`, `dynamodb` or `worker`.
    pub kind: &'static str,
    /// True when the store (the SQLite file, the PostgreSQL schema, the
    /// Redis store's keys under its prefix) did not exist and was created
    /// now, false when it was there already. Left out
    /// where init cannot tell: a DynamoDB table is created when missing and
    /// its index and TTL added when missing, without saying which was; a
    /// Worker's Durable Objects are wrangler's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// postgres: the schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// postgres: the migrations applied now (empty: the tables were there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applied_migrations: Option<Vec<i32>>,
    /// postgres: the schema's version after init.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i32>,
    /// redis: the key prefix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// redis: why the server's configuration can lose an acknowledged
    /// claim (no AOF, `appendfsync` other than `always`, eviction,
    /// replicas not waited for), one sentence each; empty when it keeps
    /// the guarantee.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<String>>,
    /// dynamodb: the table (active, with its wake index and TTL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    /// worker: how many jobs' objects the repair looked at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<usize>,
    /// worker: the records from before objects kept their wake, given one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repaired: Option<Vec<RepairedJob>>,
    /// worker: records that do not decode, left as they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<Vec<JobErrorDoc>>,
}

impl InitDoc {
    fn new(store: String, kind: &'static str) -> InitDoc {
        InitDoc {
            store,
            kind,
            created: None,
            schema: None,
            applied_migrations: None,
            version: None,
            prefix: None,
            warnings: None,
            table: None,
            checked: None,
            repaired: None,
            unreadable: None,
        }
    }
}

impl StoreTarget {
    /// Parses `--store` for a command that runs jobs or creates a store
    /// (`run`, `tick`): a Worker's admin URL is refused with the
    /// reason, not asked for a token it would not use.
    pub fn parse_for_jobs(url: &str) -> Result<StoreTarget, Failure> {
        let scheme = url
            .trim()
            .split_once(':')
            .map(|(s, _)| s.to_ascii_lowercase());
        if matches!(scheme.as_deref(), Some("http" | "https")) {
            return Err(Failure::bad_input(format!(
                "error: --store {}: a Cloudflare Worker runs its own jobs (its Cron Triggers) \
                 and its store is its Durable Objects; here --store takes {}",
                url.trim(),
                StoreUrl::syntaxes().join(", ")
            )));
        }
        StoreTarget::parse(url, None)
    }

    /// The store this process opens; a Worker's admin URL is refused.
    fn store_url(&self) -> Result<&StoreUrl, Failure> {
        match self {
            StoreTarget::Store(url) => Ok(url),
            StoreTarget::Admin(_) => Err(Failure::bad_input(format!(
                "error: --store {}: a Cloudflare Worker runs its own jobs (its Cron \
                 Triggers); jobs run here need {}",
                self.label(),
                StoreUrl::syntaxes().join(", ")
            ))),
        }
    }

    /// Opens the store to run jobs on it, timed by `clock`, creating what
    /// is missing (a SQLite file and its directory, a PostgreSQL schema, a
    /// Redis store's mark; a DynamoDB table must exist: `cronslot init`
    /// creates it). Where the store's server clock judges leases, runs are
    /// timed by it too ([`Clock::timed_by`]); an accelerated clock is this
    /// process's own, so the server's cannot judge its leases
    /// (docs/semantics.md, "Fleets").
    pub fn open_for_jobs(&self, clock: &Clock) -> Result<(AnyStore, Clock), Failure> {
        let url = self.store_url()?;
        let judge = if clock.speed() == 1.0 {
            JudgeClock::Server
        } else {
            JudgeClock::Caller
        };
        let store =
            wait(url.open(OpenOptions::default().judge(judge))).map_err(|e| store_failure(&e))?;
        let clock = clock.timed_by(&store);
        Ok((store, clock))
    }

    /// Creates what the store needs, leaving what exists; returns what it
    /// did, for the person who asked.
    pub fn init(&self) -> Result<Initialized, Failure> {
        let label = self.label();
        let url = match self {
            StoreTarget::Store(url) => url,
            StoreTarget::Admin(target) => return init_worker(target, label),
        };
        let existed = match url {
            StoreUrl::Sqlite(location) => location.0.exists(),
            _ => false,
        };
        // Opening creates what is missing (under the schema's lock on
        // PostgreSQL) and says what it found or did.
        let store = wait(url.open(OpenOptions::default())).map_err(|e| store_failure(&e))?;
        let mut doc = InitDoc::new(label.clone(), store.kind());
        let text = match &store {
            AnyStore::Sqlite(_) => {
                doc.created = Some(!existed);
                if existed {
                    format!("{label}: ready (the file existed; its schema is current)")
                } else {
                    format!("{label}: created")
                }
            }
            AnyStore::Postgres(store) => init_postgres(store, &label, &mut doc),
            AnyStore::Redis(store) => init_redis(store, &label, &mut doc),
            AnyStore::Dynamo(store) => {
                wait(store.create_table()).map_err(|e| {
                    Failure::problem(format!(
                        "error: cannot create the store {label}: {}",
                        e.message
                    ))
                })?;
                doc.table = Some(store.table().to_string());
                format!(
                    "{label}: ready (table {} active, with its wake index and TTL on its expiring items)",
                    store.table()
                )
            }
            // A store linked in by another crate's feature.
            _ => format!("{label}: ready"),
        };
        Ok(Initialized { text, doc })
    }
}

/// What opening found and did to a PostgreSQL schema.
fn init_postgres(store: &PgStore, label: &str, doc: &mut InitDoc) -> String {
    let opened = store.opened();
    doc.created = Some(opened.created_schema());
    doc.schema = Some(opened.schema().to_string());
    doc.applied_migrations = Some(opened.applied().to_vec());
    doc.version = Some(opened.version());
    format!("{label}: {opened}")
}

/// Whether opening marked a new Redis store, and the server's settings
/// that can lose a claim.
fn init_redis(store: &RedisStore, label: &str, doc: &mut InitDoc) -> String {
    let warnings = wait(store.durability()).warnings();
    let mut text = format!(
        "{label}: {}",
        if store.created() {
            "created"
        } else {
            "ready (the store was there)"
        }
    );
    for warning in &warnings {
        text.push_str(&format!("\nwarning: {warning}"));
    }
    doc.created = Some(store.created());
    doc.prefix = Some(store.location().prefix().to_string());
    doc.warnings = Some(warnings);
    text
}

/// A Worker's init: wrangler creates the Durable Objects; what is left to
/// do is the repair of objects written by a cronslot from before they kept
/// their wake as their alarm.
fn init_worker(target: &Target, label: String) -> Result<Initialized, Failure> {
    let store = AdminStore::new(target)
        .map_err(|e| Failure::problem(format!("error: store {label}: {e}")))?;
    let totals = wait(store.repair()).map_err(|e| {
        Failure::problem(format!(
            "error: repairing the wakes of {label}: {e} (running `cronslot init` \
             again finishes the repair; what was repaired stays repaired)"
        ))
    })?;
    let text = repair_summary(&label, &totals);
    let mut doc = InitDoc::new(label, "worker");
    doc.checked = Some(totals.checked);
    doc.repaired = Some(totals.repaired);
    doc.unreadable = Some(totals.unreadable);
    Ok(Initialized { text, doc })
}

/// What `init` says of a Worker's repair: the counts, then one line per
/// record given a wake or found unreadable.
fn repair_summary(label: &str, totals: &RepairTotals) -> String {
    let mut out = format!(
        "{label}: ready ({} job objects checked; records from before objects kept their \
         wake given one: {}{})",
        totals.checked,
        totals.repaired.len(),
        if totals.unreadable.is_empty() {
            String::new()
        } else {
            format!(
                "; unreadable, left as they are: {}",
                totals.unreadable.len()
            )
        }
    );
    for r in &totals.repaired {
        out.push_str(&format!("\n  {}: wakes at {}", r.job, r.wake));
    }
    for u in &totals.unreadable {
        out.push_str(&format!("\n  {}: unreadable: {}", u.job, u.message));
    }
    out
}

/// Logs, once at the start of `cronslot run`, why the store's server can
/// lose an acknowledged claim (a Redis server without AOF and
/// `appendfsync always`, one that evicts keys, replicas not waited for):
/// the runner runs anyway, as the operator chose that server.
pub fn warn_durability(store: &AnyStore) {
    for warning in wait(store.durability_warnings()) {
        tracing::warn!("{warning}");
    }
}

/// Sweeps the effect ledger now and then, on a thread of its own, for as
/// long as the process runs (`cronslot run`), on a store that does not
/// expire its entries itself.
pub fn sweep_in_background(store: &AnyStore) {
    if !store.sweeps() {
        return;
    }
    let store = store.clone();
    let spawned = std::thread::Builder::new()
        .name("cronslot-sweep".into())
        .spawn(move || {
            loop {
                std::thread::sleep(SWEEP_EVERY);
                sweep(&store);
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "cannot start the effect ledger's sweeper; expired entries stay until the next run sweeps them");
    }
}

/// One bounded sweep of the effect ledger, from `cronslot tick`: only by
/// the passes that start in a minute divisible by ten, so that a pass with
/// nothing due stays at two statements the other nine minutes
/// (docs/performance.md); a failure is logged, never fatal.
pub fn sweep_once(store: &AnyStore, now: Timestamp) {
    if store.sweeps() && now.as_second().div_euclid(60) % SWEEP_EVERY_TICKS == 0 {
        sweep(store);
    }
}

/// `cronslot tick` sweeps once in this many minutes.
const SWEEP_EVERY_TICKS: i64 = 10;

fn sweep(store: &AnyStore) {
    match wait(store.sweep_expired(Timestamp::now(), SWEEP_BATCH, SWEEP_MAX_BATCHES)) {
        Ok(0) => {}
        Ok(n) => tracing::info!(deleted = n, "swept expired entries of the effect ledger"),
        Err(e) => {
            tracing::warn!(error = %e, "sweeping the effect ledger failed; the next sweep tries again")
        }
    }
}
