//! The stores jobs run on: what `run` and `tick` open, and what `init`
//! creates. Every store a fleet of machines can share (PostgreSQL,
//! DynamoDB) and SQLite (one machine, or several processes on it). A
//! Worker's admin URL is not one: a Worker runs its own jobs.

use std::path::Path;

use cronslot_aws::dynamo::DynamoStore;
use cronslot_local::{Clock, SqliteStore};

use super::{StoreTarget, wait};
use crate::exit::Failure;

/// A store opened to run jobs on.
pub enum JobStore {
    Sqlite(SqliteStore),
    Dynamo(DynamoStore),
}

/// Runs `$body` with `$s` bound to the opened store, whatever its type:
/// the one place that lists the stores jobs run on.
macro_rules! with_job_store {
    ($store:expr, $s:ident => $body:expr) => {
        match $store {
            $crate::store::jobs::JobStore::Sqlite($s) => $body,
            $crate::store::jobs::JobStore::Dynamo($s) => $body,
        }
    };
}
pub(crate) use with_job_store;

impl StoreTarget {
    /// Parses `--store` for a command that runs jobs or creates a store
    /// (`run`, `tick`, `init`): a Worker's admin URL is refused with the
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
                 postgres://… or dynamodb://…",
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
            StoreTarget::Dynamo(url) => {
                let store = wait(DynamoStore::from_url(url)).map_err(|e| {
                    Failure::bad_input(format!("error: cannot open the store {label}: {e}"))
                })?;
                Ok((JobStore::Dynamo(store), clock.clone()))
            }
            StoreTarget::Admin(_) => Err(Failure::bad_input(format!(
                "error: --store {label}: a Cloudflare Worker runs its own jobs (its Cron \
                 Triggers); jobs run here need sqlite:PATH, postgres://… or dynamodb://…"
            ))),
        }
    }

    /// Creates what the store needs, leaving what exists; returns what it
    /// did, for the person who asked.
    pub fn init(&self) -> Result<String, Failure> {
        let label = self.label();
        match self {
            StoreTarget::Sqlite(path) => {
                let existed = path.exists();
                create_parent(path, &label)?;
                SqliteStore::open(path).map_err(|e| {
                    Failure::problem(format!("error: cannot create the store {label}: {e}"))
                })?;
                Ok(if existed {
                    format!("{label}: ready (the file existed; its schema is current)")
                } else {
                    format!("{label}: created")
                })
            }
            StoreTarget::Dynamo(url) => {
                let store = wait(DynamoStore::from_url(url)).map_err(|e| {
                    Failure::bad_input(format!("error: cannot open the store {label}: {e}"))
                })?;
                wait(store.create_table()).map_err(|e| {
                    Failure::problem(format!("error: cannot create the store {label}: {e}"))
                })?;
                Ok(format!(
                    "{label}: ready (table {} active, with TTL on its expiring items)",
                    store.table()
                ))
            }
            StoreTarget::Admin(_) => Err(Failure::bad_input(format!(
                "error: --store {label}: a Cloudflare Worker's store is its Durable Objects, \
                 which wrangler deploys; there is nothing to create here"
            ))),
        }
    }
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
