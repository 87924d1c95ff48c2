//! The statements, as text with the schema filled in once when a store
//! is opened. Apart so that all the SQL the store sends reads in one place;
//! the records, the ledger and the tick index bind their parameters.

use super::*;

/// The statements, with the schema filled in.
pub(super) struct Sql {
    pub(super) get: String,
    pub(super) insert: String,
    pub(super) update: String,
    pub(super) delete: String,
    pub(super) jobs: String,
    pub(super) page: String,
    pub(super) effect_get: String,
    pub(super) effect_insert: String,
    pub(super) effect_update: String,
    pub(super) sweep: String,
    pub(super) tick_start: String,
    pub(super) tick_end: String,
}

impl Sql {
    pub(super) fn new(schema: &str) -> Sql {
        let s = quoted(schema);
        Sql {
            // The server's clock and the record in one statement: a row
            // even when the job has none.
            get: format!(
                "SELECT clock_timestamp(), j.version, j.state
                   FROM (SELECT 1) AS one
                   LEFT JOIN {s}.job_state j ON j.job = $1"
            ),
            // A conditional write and, when it loses, the record that beat
            // it, in one statement. The outer SELECT sees the statement's
            // snapshot, so a record committed while this one waited for
            // its row lock is not in it: `put` then reads once more.
            insert: format!(
                "WITH written AS (
                     INSERT INTO {s}.job_state (job, version, state, wake_at, updated_at)
                     VALUES ($1, 1, $2, $3, now())
                     ON CONFLICT (job) DO NOTHING
                     RETURNING version)
                 SELECT (SELECT version FROM written), j.version, j.state
                   FROM (SELECT 1) AS one
                   LEFT JOIN {s}.job_state j
                     ON j.job = $1 AND NOT EXISTS (SELECT 1 FROM written)"
            ),
            update: format!(
                "WITH written AS (
                     UPDATE {s}.job_state
                        SET version = $3, state = $2, wake_at = $5, updated_at = now()
                      WHERE job = $1 AND version = $4
                     RETURNING version)
                 SELECT (SELECT version FROM written), j.version, j.state
                   FROM (SELECT 1) AS one
                   LEFT JOIN {s}.job_state j
                     ON j.job = $1 AND NOT EXISTS (SELECT 1 FROM written)"
            ),
            // Only at the version read: a record written since stays.
            delete: format!(
                "WITH gone AS (DELETE FROM {s}.job_state WHERE job = $1 AND version = $2
                                RETURNING 1)
                 SELECT count(*) FROM gone"
            ),
            jobs: format!("SELECT job FROM {s}.job_state ORDER BY job"),
            // A range of the primary key (collation "C": byte order),
            // from the prefix or the cursor to the prefix's end. Sent
            // unnamed, so each is planned with its values and the null
            // bounds fall away.
            page: format!(
                "SELECT job, version, state FROM {s}.job_state
                  WHERE job >= $1 AND ($2::text IS NULL OR job > $2)
                    AND ($3::text IS NULL OR job < $3) AND starts_with(job, $1)
                  ORDER BY job LIMIT $4"
            ),
            effect_get: format!("SELECT rev, record FROM {s}.effects WHERE key = $1"),
            effect_insert: format!(
                "INSERT INTO {s}.effects (key, rev, record, expires_at, updated_at)
                 VALUES ($1, 1, $2, $3, now())
                 ON CONFLICT (key) DO NOTHING
                 RETURNING rev"
            ),
            effect_update: format!(
                "UPDATE {s}.effects SET rev = rev + 1, record = $2, expires_at = $3,
                        updated_at = now()
                  WHERE key = $1 AND rev = $4
                 RETURNING rev"
            ),
            // The outer condition is checked again on the newest version
            // of each row, so an entry renewed meanwhile is kept.
            sweep: format!(
                "WITH swept AS (
                     DELETE FROM {s}.effects
                      WHERE key IN (SELECT key FROM {s}.effects
                                     WHERE expires_at < $1
                                     ORDER BY expires_at
                                     LIMIT $2
                                     FOR UPDATE SKIP LOCKED)
                        AND expires_at < $1
                     RETURNING 1)
                 SELECT count(*) FROM swept"
            ),
            // The instant judged by ($1, or the server's clock when NULL),
            // the mark and the woken jobs, in one statement.
            tick_start: format!(
                "WITH t AS (SELECT COALESCE($1::timestamptz, clock_timestamp()) AS now)
                 SELECT t.now,
                        (SELECT mark FROM {s}.tick_mark),
                        ARRAY(SELECT job FROM {s}.job_state
                               WHERE wake_at <= t.now
                               ORDER BY wake_at, job
                               LIMIT $2)
                   FROM t"
            ),
            tick_end: format!(
                "INSERT INTO {s}.tick_mark (singleton, mark) VALUES (true, $1)
                 ON CONFLICT (singleton) DO UPDATE SET mark = excluded.mark, updated_at = now()
                  WHERE {s}.tick_mark.mark < excluded.mark"
            ),
        }
    }
}
