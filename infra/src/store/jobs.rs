//! The stores jobs run on: what `run` and `tick` open, and what `init`
//! creates. Every store a fleet of machines can share (PostgreSQL, Redis,
//! DynamoDB) and SQLite (one machine, or several processes on it). A
//! Worker's admin URL is not one: a Worker runs its own jobs.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use cronslot_core::coord::StoreErrorKind;
use cronslot_dynamodb::DynamoStore;
use cronslot_postgres::{JudgeClock, PgLocation, PgOptions, PgStore};
use cronslot_redis::{RedisLocation, RedisOptions, RedisStore};
use cronslot_runner::{Clock, SqliteStore};
use cronslot_runtime::admin::{JobErrorDoc, RepairedJob};
use jiff::Timestamp;
use serde::Serialize;

use super::admin::{AdminStore, RepairTotals};
use super::{StoreTarget, wait};
use crate::exit::Failure;

/// A store opened to run jobs on.
pub enum JobStore {
    Sqlite(SqliteStore),
    Postgres(PgStore),
    Redis(RedisStore),
    Dynamo(DynamoStore),
}

/// How often a long-running `cronslot run` sweeps the PostgreSQL effect
/// ledger, and how much one sweep may delete (in statements of
/// [`SWEEP_BATCH`] rows): bounded work, so a sweep never holds the
/// database for long, and entries expire at a rate far above any job's.
const SWEEP_EVERY: Duration = Duration::from_secs(600);
const SWEEP_BATCH: u32 = 1000;
const SWEEP_MAX_BATCHES: u32 = 10;

/// Runs `$body` with `$s` bound to the opened store, whatever its type:
/// the one place that lists the stores jobs run on.
macro_rules! with_job_store {
    ($store:expr, $s:ident => $body:expr) => {
        match $store {
            $crate::store::jobs::JobStore::Sqlite($s) => $body,
            $crate::store::jobs::JobStore::Postgres($s) => $body,
            $crate::store::jobs::JobStore::Redis($s) => $body,
            $crate::store::jobs::JobStore::Dynamo($s) => $body,
        }
    };
}
pub(crate) use with_job_store;

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
                 and its store is its Durable Objects; here --store takes sqlite:PATH, \
                 postgres://…, redis://… or dynamodb://…",
                url.trim()
            )));
        }
        StoreTarget::parse(url, None)
    }

    /// Opens the store to run jobs on it, timed by `clock`. The SQLite file
    /// (and its directory) is created on first use; a DynamoDB table must
    /// exist (`cronslot init` creates it).
    pub fn open_for_jobs(&self, clock: &Clock) -> Result<(JobStore, Clock), Failure> {
        let label = self.label();
        match self {
            StoreTarget::Sqlite(path) => {
                create_parent(path, &label)?;
                let store = SqliteStore::open(path).map_err(|e| {
                    Failure::bad_input(format!("error: cannot open the store {label}: {e}"))
                })?;
                Ok((JobStore::Sqlite(store), clock.clone()))
            }
            StoreTarget::Postgres(location) => {
                // Created on first use, as a SQLite file is.
                let store = connect(location, PgOptions::default())?;
                if clock.speed() != 1.0 {
                    // An accelerated clock is this process's own: the
                    // server's cannot judge its leases (docs/semantics.md,
                    // "Fleets").
                    return Ok((
                        JobStore::Postgres(store.judge_by(JudgeClock::Caller)),
                        clock.clone(),
                    ));
                }
                // Leases are judged by the server's clock; runs are timed
                // by it too, through the offset measured on every read.
                let offset_of = store.clone();
                let clock = Clock::corrected(Arc::new(move || offset_of.clock_offset()));
                Ok((JobStore::Postgres(store), clock))
            }
            StoreTarget::Redis(location) => {
                // Marked on first use, as a SQLite file is created.
                let store = connect_redis(location, RedisOptions::default())?;
                if clock.speed() != 1.0 {
                    // As for PostgreSQL: an accelerated clock is this
                    // process's own.
                    return Ok((
                        JobStore::Redis(store.judge_by(cronslot_redis::JudgeClock::Caller)),
                        clock.clone(),
                    ));
                }
                let offset_of = store.clone();
                let clock = Clock::corrected(Arc::new(move || offset_of.clock_offset()));
                Ok((JobStore::Redis(store), clock))
            }
            StoreTarget::Dynamo(url) => {
                let store = wait(DynamoStore::connect(url)).map_err(|e| {
                    Failure::bad_input(format!("error: cannot open the store {label}: {e}"))
                })?;
                Ok((JobStore::Dynamo(store), clock.clone()))
            }
            StoreTarget::Admin(_) => Err(Failure::bad_input(format!(
                "error: --store {label}: a Cloudflare Worker runs its own jobs (its Cron \
                 Triggers); jobs run here need sqlite:PATH, postgres://…, redis://… or \
                 dynamodb://…"
            ))),
        }
    }

    /// Creates what the store needs, leaving what exists; returns what it
    /// did, for the person who asked.
    pub fn init(&self) -> Result<Initialized, Failure> {
        let label = self.label();
        match self {
            StoreTarget::Sqlite(path) => {
                let existed = path.exists();
                create_parent(path, &label)?;
                SqliteStore::open(path).map_err(|e| {
                    Failure::problem(format!("error: cannot create the store {label}: {e}"))
                })?;
                let text = if existed {
                    format!("{label}: ready (the file existed; its schema is current)")
                } else {
                    format!("{label}: created")
                };
                let mut doc = InitDoc::new(label, "sqlite");
                doc.created = Some(!existed);
                Ok(Initialized { text, doc })
            }
            StoreTarget::Postgres(location) => {
                // Opening creates what is missing, under the schema's lock,
                // and says what it found or did.
                let store = connect(location, PgOptions::default())?;
                let opened = store.opened();
                let text = format!("{label}: {opened}");
                let mut doc = InitDoc::new(label, "postgres");
                doc.created = Some(opened.created_schema());
                doc.schema = Some(opened.schema().to_string());
                doc.applied_migrations = Some(opened.applied().to_vec());
                doc.version = Some(opened.version());
                Ok(Initialized { text, doc })
            }
            StoreTarget::Redis(location) => {
                let store = connect_redis(location, RedisOptions::default())?;
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
                let mut doc = InitDoc::new(label, "redis");
                doc.created = Some(store.created());
                doc.prefix = Some(location.prefix().to_string());
                doc.warnings = Some(warnings);
                Ok(Initialized { text, doc })
            }
            StoreTarget::Dynamo(url) => {
                let store = wait(DynamoStore::connect(url)).map_err(|e| {
                    Failure::bad_input(format!("error: cannot open the store {label}: {e}"))
                })?;
                wait(store.create_table()).map_err(|e| {
                    Failure::problem(format!("error: cannot create the store {label}: {e}"))
                })?;
                let text = format!(
                    "{label}: ready (table {} active, with its wake index and TTL on its expiring items)",
                    store.table()
                );
                let mut doc = InitDoc::new(label, "dynamodb");
                doc.table = Some(store.table().to_string());
                Ok(Initialized { text, doc })
            }
            StoreTarget::Admin(target) => {
                // wrangler creates the Durable Objects; what is left to do
                // is the repair of objects written by a cronslot from
                // before they kept their wake as their alarm.
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
        }
    }
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

/// The SQLite file's directory, created if missing.
fn create_parent(path: &Path, label: &str) -> Result<(), Failure> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| {
            Failure::bad_input(format!(
                "error: --store {label}: cannot create the directory {}: {e}",
                parent.display()
            ))
        })?;
    }
    Ok(())
}

/// Opens a PostgreSQL store.
fn connect(location: &PgLocation, options: PgOptions) -> Result<PgStore, Failure> {
    wait(PgStore::connect_with(location.clone(), options)).map_err(|e| store_failure(e.kind(), &e))
}

/// Opens a Redis store.
fn connect_redis(location: &RedisLocation, options: RedisOptions) -> Result<RedisStore, Failure> {
    wait(RedisStore::connect_with(location.clone(), options))
        .map_err(|e| store_failure(e.kind(), e.message()))
}

/// A shared store (PostgreSQL, Redis) that cannot be opened: a server that
/// does not answer (worth trying again: exit 1), or a location, password,
/// privilege or schema that will not work as given (exit 2). The store's
/// message names the store without its password and says what to do.
pub fn store_failure(kind: &StoreErrorKind, message: impl std::fmt::Display) -> Failure {
    let message = format!("error: {message}");
    match kind {
        StoreErrorKind::Unavailable | StoreErrorKind::Ambiguous => Failure::problem(message),
        _ => Failure::bad_input(message),
    }
}

/// Logs, once at the start of `cronslot run`, why the store's server can
/// lose an acknowledged claim (a Redis server without AOF and
/// `appendfsync always`, one that evicts keys, replicas not waited for):
/// the runner runs anyway, as the operator chose that server.
pub fn warn_durability(store: &JobStore) {
    if let JobStore::Redis(store) = store {
        for warning in wait(store.durability()).warnings() {
            tracing::warn!("{warning}");
        }
    }
}

/// Sweeps the PostgreSQL effect ledger now and then, on a thread of its
/// own, for as long as the process runs (`cronslot run`).
pub fn sweep_in_background(store: &JobStore) {
    let JobStore::Postgres(store) = store else {
        return;
    };
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

/// One bounded sweep of the PostgreSQL effect ledger, from `cronslot
/// tick`: only by the passes that start in a minute divisible by ten, so
/// that a pass with nothing due stays at two statements the other nine
/// minutes (docs/performance.md); a failure is logged, never fatal.
pub fn sweep_once(store: &JobStore, now: Timestamp) {
    if let JobStore::Postgres(store) = store {
        if now.as_second().div_euclid(60) % SWEEP_EVERY_TICKS == 0 {
            sweep(store);
        }
    }
}

/// `cronslot tick` sweeps once in this many minutes.
const SWEEP_EVERY_TICKS: i64 = 10;

fn sweep(store: &PgStore) {
    match wait(store.sweep_expired(Timestamp::now(), SWEEP_BATCH, SWEEP_MAX_BATCHES)) {
        Ok(0) => {}
        Ok(n) => tracing::info!(deleted = n, "swept expired entries of the effect ledger"),
        Err(e) => {
            tracing::warn!(error = %e, "sweeping the effect ledger failed; the next sweep tries again")
        }
    }
}
