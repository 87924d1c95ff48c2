//! The store's tables, created on first use under the location's schema,
//! and the migration table that records which layout they have.
//!
//! Creating is safe when several processes start at once: it runs in one
//! transaction that first takes a transaction-scoped advisory lock keyed by
//! the schema's name, then looks again. A role that may not create schemas
//! or tables can still use a store another role created: when everything
//! is already at this build's version, opening only reads the catalog.

use std::fmt;

use tokio_postgres::types::Type;

use crate::error::Phase;
use crate::pool::{Conn, Session};
use crate::time::PgTime;
use cronslot_core::coord::StoreError;

/// The layout of the tables this build reads and writes, as recorded in
/// `schema_migrations`. A schema at a higher version was written by a newer
/// cronslot and is refused.
pub const STORE_SCHEMA_VERSION: i32 = 3;

/// Each migration's statements, in order: index 0 brings a schema from
/// nothing to version 1. `{s}` is the quoted schema.
const MIGRATIONS: &[&str] = &[
    // Version 1. `job` sorts by bytes (COLLATE "C"), the order of Rust's
    // strings, so `jobs()` lists in the same order as every other store.
    // The state and effect records are JSON text, exactly as encoded, so
    // that what is read back is what was written (and `decode_state`
    // migrates old record layouts on read). An effect's `expires_at` says
    // when a sweep may delete it (see `PgStore::sweep_effects`); `rev`
    // guards its replacement.
    "CREATE TABLE {s}.job_state (
        job text COLLATE \"C\" PRIMARY KEY,
        version bigint NOT NULL CHECK (version >= 1),
        state text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE TABLE {s}.effects (
        key text COLLATE \"C\" PRIMARY KEY,
        rev bigint NOT NULL CHECK (rev >= 1),
        record text NOT NULL,
        expires_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    );
    CREATE INDEX effects_expires_at ON {s}.effects (expires_at);",
    // Version 2: each record's wake, indexed (partially: most records
    // have none), and the tick mark, so that a tick reads only what is due
    // (docs/design.md §11). Records written before it that need a wake get
    // one as it is applied (`repair_wakes`).
    "ALTER TABLE {s}.job_state ADD COLUMN wake_at timestamptz;
    CREATE INDEX job_state_wake_at ON {s}.job_state (wake_at) WHERE wake_at IS NOT NULL;
    CREATE TABLE {s}.tick_mark (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        mark timestamptz NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    );",
    // Version 3: the wake index ordered as a tick reads it, earliest wake
    // first and ties by name, so that a tick's `LIMIT` stops after as
    // many entries as it asked for. On the index of version 2 alone the
    // server read and sorted every due record at each tick: with 10,000
    // keyed runs waiting, half a millisecond a tick, the most of the
    // store's time in a burst (docs/performance.md). Old and new builds
    // read the same columns: only the plan changes.
    "CREATE INDEX job_state_wake ON {s}.job_state (wake_at, job) WHERE wake_at IS NOT NULL;
    DROP INDEX {s}.job_state_wake_at;",
];

/// Gives each record written before version 2 that needs a wake (a
/// waiting run or a live lease shows in its text) its
/// [`migrated_wake`](cronslot_core::coord::decide::migrated_wake), in the
/// record and the index, with a new version, inside the migration's
/// transaction: the bounded repair of docs/design.md §11. A record that
/// does not decode is left as it is; reading it reports it.
async fn repair_wakes(
    conn: &mut Conn<'_>,
    q: &str,
    doing: &(dyn Fn() -> String + Sync),
) -> Result<(), StoreError> {
    let needs_wake = "state LIKE '%\"pending\":[{%' OR state LIKE '%\"leases\":[{%'";
    let rows = conn
        .query(
            Phase::Read,
            true,
            doing,
            &format!("SELECT job, version, state FROM {q}.job_state WHERE {needs_wake}"),
            &[],
        )
        .await?;
    let update =
        format!("UPDATE {q}.job_state SET version = $2, state = $3, wake_at = $4 WHERE job = $1");
    for row in rows {
        let (Ok(job), Ok(version), Ok(text)) = (
            row.try_get::<_, String>(0),
            row.try_get::<_, i64>(1),
            row.try_get::<_, String>(2),
        ) else {
            continue;
        };
        let Ok(mut state) = cronslot_core::coord::decode_state(&job, &text) else {
            continue;
        };
        let Some(wake) = cronslot_core::coord::decide::migrated_wake(&state) else {
            continue;
        };
        state.wake_at = Some(wake);
        let text = cronslot_core::coord::encode_state(&state);
        conn.query(
            Phase::Write,
            true,
            doing,
            &update,
            &[
                (&job, Type::TEXT),
                (&version.saturating_add(1), Type::INT8),
                (&text, Type::TEXT),
                (&PgTime(wake), Type::TIMESTAMPTZ),
            ],
        )
        .await?;
    }
    Ok(())
}

const MIGRATION_TABLE: &str = "CREATE TABLE {s}.schema_migrations (
    version integer PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now(),
    applied_by text NOT NULL
)";

/// The tables a schema at [`STORE_SCHEMA_VERSION`] has.
const TABLES: &[&str] = &["effects", "job_state", "schema_migrations", "tick_mark"];

/// What [`PgStore::init`](crate::PgStore::init) (or opening the store)
/// found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitReport {
    schema: String,
    created_schema: bool,
    applied: Vec<i32>,
    version: i32,
}

impl InitReport {
    /// The PostgreSQL schema.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Whether the schema itself was created now.
    pub fn created_schema(&self) -> bool {
        self.created_schema
    }

    /// The migrations applied now (empty when the tables were already
    /// there).
    pub fn applied(&self) -> &[i32] {
        &self.applied
    }

    /// The schema's version after this call ([`STORE_SCHEMA_VERSION`]).
    pub fn version(&self) -> i32 {
        self.version
    }

    /// Nothing had to be created.
    pub fn already_there(&self) -> bool {
        !self.created_schema && self.applied.is_empty()
    }
}

impl fmt::Display for InitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.already_there() {
            return write!(
                f,
                "schema {:?} already there, at version {}",
                self.schema, self.version
            );
        }
        if self.created_schema {
            write!(f, "created schema {:?}; ", self.schema)?;
        } else {
            write!(f, "schema {:?}: ", self.schema)?;
        }
        let applied = self
            .applied
            .iter()
            .map(i32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let plural = if self.applied.len() == 1 { "" } else { "s" };
        write!(
            f,
            "applied migration{plural} {applied}; now at version {}",
            self.version
        )
    }
}

/// `"name"`: the schema as an identifier (validated when parsed, so
/// quoting never has to escape anything).
pub(crate) fn quoted(schema: &str) -> String {
    format!("\"{schema}\"")
}

/// What the catalog says about the schema.
struct Probe {
    schema_exists: bool,
    /// `None` when there is no migration table.
    version: Option<i32>,
    /// The schema's tables, views and the like.
    tables: Vec<String>,
}

const PROBE: &str = "SELECT n.oid IS NOT NULL,
       ARRAY(SELECT c.relname::text FROM pg_catalog.pg_class c
             WHERE c.relnamespace = n.oid AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
             ORDER BY 1)
  FROM (SELECT 1) AS one
  LEFT JOIN pg_catalog.pg_namespace n ON n.nspname = $1";

async fn probe(conn: &mut Conn<'_>, schema: &str) -> Result<Probe, StoreError> {
    let doing = || format!("checking schema {schema:?}");
    let rows = conn
        .query(Phase::Read, true, &doing, PROBE, &[(&schema, Type::TEXT)])
        .await?;
    let (schema_exists, tables) = match rows.first() {
        Some(row) => (
            conn.column::<bool>(row, 0, &doing)?,
            conn.column::<Vec<String>>(row, 1, &doing)?,
        ),
        None => (false, Vec::new()),
    };
    let version = if tables.iter().any(|t| t == "schema_migrations") {
        let sql = format!(
            "SELECT coalesce(max(version), 0) FROM {}.schema_migrations",
            quoted(schema)
        );
        let rows = conn.query(Phase::Read, true, &doing, &sql, &[]).await?;
        match rows.first() {
            Some(row) => Some(conn.column::<i32>(row, 0, &doing)?),
            None => Some(0),
        }
    } else {
        None
    };
    Ok(Probe {
        schema_exists,
        version,
        tables,
    })
}

/// The advisory lock of a schema's creation: FNV-1a of its name, so two
/// schemas never wait for each other (a collision only serialises them).
fn lock_key(schema: &str) -> i64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in "cronslot-postgres schema ".bytes().chain(schema.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    i64::from_ne_bytes(hash.to_ne_bytes())
}

/// Brings the schema to [`STORE_SCHEMA_VERSION`], or checks that it is
/// there (`create: false`).
pub(crate) async fn ensure(
    conn: &mut Conn<'_>,
    schema: &str,
    create: bool,
) -> Result<InitReport, StoreError> {
    let store = conn.store().to_string();
    let found = probe(conn, schema).await?;
    if let Some(report) = settled(&store, schema, &found)? {
        return Ok(report);
    }
    if !create {
        return Err(StoreError::other(format!(
            "PostgreSQL store {store}: schema {schema:?} holds no cronslot tables (or older ones): \
             create them with `cronslot init` (or `cronslot run`, or `PgStore::connect` in a \
             program), as a role that may create tables"
        )));
    }
    // One transaction: if anything fails, the connection is dropped (not
    // returned to the pool), which rolls it back; nothing is half-created.
    let result = create_in_transaction(conn, &store, schema).await;
    if result.is_err() {
        conn.discard();
    }
    result
}

/// `Some` when the schema needs nothing: at this version with its tables.
fn settled(store: &str, schema: &str, found: &Probe) -> Result<Option<InitReport>, StoreError> {
    match found.version {
        Some(v) if v > STORE_SCHEMA_VERSION => Err(StoreError::other(format!(
            "PostgreSQL store {store}: schema {schema:?} is at store version {v}, written by a \
             newer cronslot (this build knows up to {STORE_SCHEMA_VERSION}): upgrade cronslot, \
             or use another schema (?schema=NAME); nothing was written"
        ))),
        Some(v) if v == STORE_SCHEMA_VERSION => {
            let missing: Vec<&str> = TABLES
                .iter()
                .copied()
                .filter(|t| !found.tables.iter().any(|f| f == t))
                .collect();
            if !missing.is_empty() {
                // Recorded as created, yet gone: creating them again empty
                // would hand out slots that already ran.
                return Err(StoreError::corrupt(format!(
                    "PostgreSQL store {store}: schema {schema:?} is at store version {v} but \
                     lacks table {}: restore it from a backup, or drop the schema to start \
                     afresh",
                    missing.join(", ")
                )));
            }
            Ok(Some(InitReport {
                schema: schema.to_string(),
                created_schema: false,
                applied: Vec::new(),
                version: v,
            }))
        }
        _ => Ok(None),
    }
}

async fn create_in_transaction(
    conn: &mut Conn<'_>,
    store: &str,
    schema: &str,
) -> Result<InitReport, StoreError> {
    let q = quoted(schema);
    let doing_lock = || format!("locking schema {schema:?} to create it");
    conn.batch(true, &doing_lock, "BEGIN").await?;
    let key = lock_key(schema);
    conn.query(
        Phase::Write,
        true,
        &doing_lock,
        "SELECT pg_advisory_xact_lock($1)",
        &[(&key, Type::INT8)],
    )
    .await?;
    // Another process may have done it while we waited.
    let found = probe(conn, schema).await?;
    if let Some(report) = settled(store, schema, &found)? {
        conn.batch(true, &doing_lock, "COMMIT").await?;
        return Ok(report);
    }
    let created_schema = !found.schema_exists;
    if created_schema {
        let doing = || format!("creating schema {schema:?}");
        conn.batch(true, &doing, &format!("CREATE SCHEMA {q}"))
            .await?;
    }
    let mut version = found.version.unwrap_or(0);
    if found.version.is_none() {
        if !found.tables.is_empty() {
            return Err(StoreError::other(format!(
                "PostgreSQL store {store}: schema {schema:?} exists but is not a cronslot store \
                 (it has {}, and no schema_migrations): choose another schema (?schema=NAME)",
                found.tables.join(", ")
            )));
        }
        let doing = || format!("creating the tables of schema {schema:?}");
        conn.batch(true, &doing, &MIGRATION_TABLE.replace("{s}", &q))
            .await?;
    }
    let mut applied = Vec::new();
    let by = concat!("cronslot-postgres ", env!("CARGO_PKG_VERSION"));
    while version < STORE_SCHEMA_VERSION {
        let next = version + 1;
        let Some(statements) = usize::try_from(version)
            .ok()
            .and_then(|i| MIGRATIONS.get(i))
        else {
            return Err(StoreError::corrupt(format!(
                "PostgreSQL store {store}: schema {schema:?} records version {version}, which \
                 this build has no migration from"
            )));
        };
        let doing = || format!("migrating schema {schema:?} to version {next}");
        conn.batch(true, &doing, &statements.replace("{s}", &q))
            .await?;
        // A schema created here has no records to repair.
        if next == 2 && found.version.is_some() {
            repair_wakes(conn, &q, &doing).await?;
        }
        let sql =
            format!("INSERT INTO {q}.schema_migrations (version, applied_by) VALUES ($1, $2)");
        conn.query(
            Phase::Write,
            true,
            &doing,
            &sql,
            &[(&next, Type::INT4), (&by, Type::TEXT)],
        )
        .await?;
        applied.push(next);
        version = next;
    }
    let doing = || format!("committing the tables of schema {schema:?}");
    conn.batch(true, &doing, "COMMIT").await?;
    Ok(InitReport {
        schema: schema.to_string(),
        created_schema,
        applied,
        version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_differ_by_schema() {
        assert_ne!(lock_key("cronslot"), lock_key("cronslot2"));
        assert_eq!(lock_key("a"), lock_key("a"));
    }

    #[test]
    fn reports_read_well() {
        let r = InitReport {
            schema: "s".into(),
            created_schema: true,
            applied: vec![1],
            version: 1,
        };
        assert_eq!(
            r.to_string(),
            "created schema \"s\"; applied migration 1; now at version 1"
        );
        let r = InitReport {
            schema: "s".into(),
            created_schema: false,
            applied: vec![],
            version: 1,
        };
        assert!(r.already_there());
        assert_eq!(r.to_string(), "schema \"s\" already there, at version 1");
    }
}
