//! The tables: their layout by schema version, creating them in a new
//! file, checking an existing file's version, and the migrations from
//! schema 1 (the wake index and the records it must repair) and 2 (the
//! effect ledger's sweep time, and the wake index's order). Apart because only opening a store runs
//! it.

use super::*;

/// The tables of schema version 1. `STRICT` makes SQLite refuse a value of
/// the wrong type instead of storing it, so what the code reads back has
/// the type it wrote.
const SCHEMA_V1: &str = "
CREATE TABLE schema_meta (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    schema_version INTEGER NOT NULL,
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE job_state (
    job TEXT PRIMARY KEY NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    state TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE TABLE effects (
    key TEXT PRIMARY KEY NOT NULL,
    record TEXT NOT NULL,
    expires_at TEXT,
    updated_at TEXT NOT NULL
) STRICT;
";

/// Version 2: each record's wake, indexed, and the tick mark, so that a
/// tick reads only what is due (docs/design.md §11). Instants are Unix
/// nanoseconds. The index is partial: most records have no wake.
const SCHEMA_V2: &str = "
ALTER TABLE job_state ADD COLUMN wake_at INTEGER;
CREATE INDEX job_state_wake ON job_state (wake_at) WHERE wake_at IS NOT NULL;
CREATE TABLE tick_mark (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    mark INTEGER NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
";

/// Version 3: each effect ledger entry's sweep time (Unix nanoseconds,
/// [`EffectRecord::sweep_at`]: a hold when it lapses, a done effect its
/// retention after it was done), indexed, so that a sweep deletes what is
/// due in bounded batches without reading the table
/// ([`SqliteStore::sweep_expired`]). Entries written before have none
/// (NULL): the sweep gives them theirs from their record, a bounded batch
/// at a time, so the migration itself costs only the index, however many
/// entries an old store holds (it never deleted any).
///
/// And the wake index ordered as a tick reads it, earliest wake first and
/// ties by name, so that a tick's `LIMIT` stops after as many entries as
/// it asked for instead of sorting every due record (10,000 keyed runs
/// waiting, in a burst).
const SCHEMA_V3: &str = "
ALTER TABLE effects ADD COLUMN sweep_at INTEGER;
CREATE INDEX effects_sweep ON effects (sweep_at);
CREATE INDEX job_state_wake_order ON job_state (wake_at, job) WHERE wake_at IS NOT NULL;
DROP INDEX job_state_wake;
";

/// The records a migration to schema 2 must give a wake: those whose text
/// shows a waiting run or a live lease (an empty list is written `[]`).
/// A false match (the text inside an error message) costs one wake.
const NEEDS_WAKE: &str = "state LIKE '%\"pending\":[{%' OR state LIKE '%\"leases\":[{%'";

/// Gives each record that needs one its [`migrated_wake`], in the record
/// and in the index, with a new version (a process that read the record
/// before must read it again). A record that does not decode is left as it
/// is: reading it reports it.
fn repair_wakes(tx: &Transaction<'_>) -> rusqlite::Result<()> {
    let found: Vec<(String, i64, String)> = tx
        .prepare(&format!(
            "SELECT job, version, state FROM job_state WHERE {NEEDS_WAKE}"
        ))?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (job, version, text) in found {
        let Ok(mut state) = decode_state(&job, &text) else {
            continue;
        };
        let Some(wake) = migrated_wake(&state) else {
            continue;
        };
        state.wake_at = Some(wake);
        tx.execute(
            "UPDATE job_state SET version = ?2, state = ?3, wake_at = ?4 WHERE job = ?1",
            rusqlite::params![job, version + 1, encode_state(&state), nanos(wake)],
        )?;
    }
    Ok(())
}

/// Creates the tables in a new file, or checks the schema version of an
/// existing one. One IMMEDIATE transaction, so processes opening a new
/// file at the same moment create it once.
pub(crate) fn init_schema(conn: &mut Connection, where_: Where<'_>) -> Result<(), StoreError> {
    let doing = || "checking the schema".to_string();
    let tx = begin_immediate(conn, where_, &doing)?;
    let has_meta = tx
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_meta'",
            [],
            |row| row.get::<_, i64>(0),
        )
        .map_err(|e| where_.error(&doing(), &e))?
        > 0;
    if !has_meta {
        let mut stmt = tx
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name",
            )
            .map_err(|e| where_.error(&doing(), &e))?;
        let tables: Vec<String> = stmt
            .query_map([], |row| row.get::<_, String>(0))
            .and_then(|rows| rows.collect())
            .map_err(|e| where_.error(&doing(), &e))?;
        drop(stmt);
        if !tables.is_empty() {
            // Someone else's database: writing our tables into it would
            // be a surprise for its owner.
            return Err(StoreError::other(format!(
                "{where_}: is a SQLite database but not a cronslot store (it has tables {}); give a new file or a cronslot store",
                tables.join(", ")
            )));
        }
        let created = "creating the tables".to_string();
        tx.execute_batch(SCHEMA_V1)
            .and_then(|()| tx.execute_batch(SCHEMA_V2))
            .and_then(|()| tx.execute_batch(SCHEMA_V3))
            .map_err(|e| where_.error(&created, &e))?;
        let sql = format!(
            "INSERT INTO schema_meta (singleton, schema_version, created_by, created_at) \
             VALUES (1, ?1, ?2, {SQL_NOW})"
        );
        let created_by = concat!("cronslot-sqlite ", env!("CARGO_PKG_VERSION"));
        tx.execute(&sql, (STORE_SCHEMA_VERSION, created_by))
            .map_err(|e| where_.error(&created, &e))?;
        return commit(tx, where_, &|| created.clone());
    }
    let version: Option<Value> = tx
        .query_row(
            "SELECT schema_version FROM schema_meta WHERE singleton = 1",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(|e| where_.error(&doing(), &e))?;
    match version {
        Some(Value::Integer(v)) if v == STORE_SCHEMA_VERSION => Ok(()),
        Some(Value::Integer(from @ (1 | 2))) => {
            // Records written before version 2 have no wake yet: those
            // with waiting runs or live leases get one here, in the same
            // transaction (`repair_wakes`); the others need none. Effects
            // written before version 3 get their sweep time from the sweep
            // (SCHEMA_V3).
            let migrating = format!(
                "migrating the tables (store schema {from} to {STORE_SCHEMA_VERSION}: {})",
                if from == 1 {
                    "the wake index and the effects' sweep time"
                } else {
                    "the effects' sweep time"
                }
            );
            let wakes = || -> rusqlite::Result<()> {
                if from == 1 {
                    tx.execute_batch(SCHEMA_V2)?;
                    repair_wakes(&tx)?;
                }
                Ok(())
            };
            wakes()
                .and_then(|()| tx.execute_batch(SCHEMA_V3))
                .and_then(|()| {
                    tx.execute(
                        "UPDATE schema_meta SET schema_version = ?1 WHERE singleton = 1",
                        [STORE_SCHEMA_VERSION],
                    )
                })
                .map_err(|e| where_.error(&migrating, &e))?;
            commit(tx, where_, &|| migrating.clone())
        }
        Some(Value::Integer(v)) if v > STORE_SCHEMA_VERSION => Err(StoreError::other(format!(
            "{where_}: was written by a newer cronslot (store schema {v}; this build knows up to {STORE_SCHEMA_VERSION}); upgrade cronslot or use another file"
        ))),
        // There is no schema before 1; later versions add their
        // migrations above, inside this same transaction.
        Some(Value::Integer(v)) => {
            Err(where_.corrupt("schema_meta", format!("store schema {v} does not exist")))
        }
        Some(other) => Err(where_.corrupt(
            "schema_meta",
            format!("schema_version holds {other:?}, not a number"),
        )),
        None => Err(where_.corrupt("schema_meta", "the table has no row")),
    }
}
