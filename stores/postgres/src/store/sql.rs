//! The statements, as text with the schema filled in once when a store
//! is opened. Apart so that all the SQL the store sends reads in one place;
//! the records, the ledger and the tick index bind their parameters.

use super::*;

/// The statements, with the schema filled in.
pub(super) struct Sql {
    pub(super) get: String,
    pub(super) get_many: String,
    pub(super) insert: String,
    pub(super) update: String,
    pub(super) insert_notifying: String,
    pub(super) update_notifying: String,
    pub(super) notify: String,
    pub(super) insert_many: String,
    pub(super) update_many: String,
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
        // The record's first write and its compare-and-set, each the
        // `written` of a conditional write (`conditional_write`).
        let insert = format!(
            "INSERT INTO {s}.job_state (job, version, state, wake_at, updated_at)
             VALUES ($1, 1, $2, $3, now())
             ON CONFLICT (job) DO NOTHING
             RETURNING version, wake_at"
        );
        let update = format!(
            "UPDATE {s}.job_state
                SET version = $3, state = $2, wake_at = $5, updated_at = now()
              WHERE job = $1 AND version = $4
             RETURNING version, wake_at"
        );
        let channel = wake_channel(schema);
        Sql {
            // The server's clock and the record in one statement: a row
            // even when the job has none.
            get: format!(
                "SELECT clock_timestamp(), j.version, j.state
                   FROM (SELECT 1) AS one
                   LEFT JOIN {s}.job_state j ON j.job = $1"
            ),
            // Many records and the server's clock in one statement (a
            // bulk write's read): a row per name, in the order given.
            get_many: format!(
                "SELECT clock_timestamp(), j.version, j.state
                   FROM unnest($1::text[]) WITH ORDINALITY AS n(job, i)
                   LEFT JOIN {s}.job_state j ON j.job = n.job
                  ORDER BY n.i"
            ),
            insert: conditional_write(&s, &insert, None),
            update: conditional_write(&s, &update, None),
            insert_notifying: conditional_write(&s, &insert, Some(&channel)),
            update_notifying: conditional_write(&s, &update, Some(&channel)),
            notify: format!("NOTIFY {}", wake_channel(schema)),
            // Many writes in one statement (store/group.rs): the first
            // writes of many records, and compare-and-sets of many, each
            // answered by its row in what is returned (a record missing
            // from it lost to another writer). The updates lock their rows
            // in key order first (`locked`), so that two groups never wait
            // for each other in a cycle; a row another writer changed
            // meanwhile is checked again at its newest version, as for one
            // write. Each row says, as one write's answer does, whether it
            // made its record due now.
            insert_many: format!(
                "WITH w AS (SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])
                              AS w(job, state, wake_at)),
                 written AS (
                     INSERT INTO {s}.job_state (job, version, state, wake_at, updated_at)
                     SELECT job, 1, state, wake_at, now() FROM w ORDER BY job
                     ON CONFLICT (job) DO NOTHING
                     RETURNING job, version, wake_at)
                 SELECT job, version, wake_at <= clock_timestamp() FROM written"
            ),
            update_many: format!(
                "WITH w AS (SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[],
                                                $4::bigint[])
                              AS w(job, state, wake_at, expected)),
                 locked AS (SELECT j.job FROM {s}.job_state j JOIN w ON j.job = w.job
                             ORDER BY j.job FOR UPDATE OF j),
                 written AS (
                     UPDATE {s}.job_state j
                        SET version = w.expected + 1, state = w.state, wake_at = w.wake_at,
                            updated_at = now()
                       FROM w
                      WHERE j.job = w.job AND j.version = w.expected
                        AND j.job IN (SELECT job FROM locked)
                     RETURNING j.job, j.version, j.wake_at)
                 SELECT job, version, wake_at <= clock_timestamp() FROM written"
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
            // the mark and the woken jobs, in one statement: one row per
            // woken job (one row of NULLs after the mark when none is),
            // with the record of each schedule of a dynamic job (`job/key`),
            // which the tick then needs not read again. The instant is a
            // scalar subquery (computed once, before the scan), so the
            // woken jobs are a range of the wake index read in its order:
            // joined to the instant instead, the planner scanned every
            // record (378 ms among a million schedules with nothing due,
            // docs/performance.md).
            tick_start: format!(
                "WITH t AS (SELECT COALESCE($1::timestamptz, clock_timestamp()) AS now),
                      w AS (SELECT j.job, j.wake_at,
                                   CASE WHEN strpos(j.job, '/') > 0 THEN j.version END AS version,
                                   CASE WHEN strpos(j.job, '/') > 0 THEN j.state END AS state
                              FROM {s}.job_state j
                             WHERE j.wake_at <= (SELECT now FROM t)
                             ORDER BY j.wake_at, j.job
                             LIMIT $2)
                 SELECT t.now, (SELECT mark FROM {s}.tick_mark), w.job, w.version, w.state,
                        (SELECT min(n.wake_at) FROM {s}.job_state n
                          WHERE n.wake_at > (SELECT now FROM t))
                   FROM t LEFT JOIN w ON true
                  ORDER BY w.wake_at, w.job"
            ),
            tick_end: format!(
                "INSERT INTO {s}.tick_mark (singleton, mark) VALUES (true, $1)
                 ON CONFLICT (singleton) DO UPDATE SET mark = excluded.mark, updated_at = now()
                  WHERE {s}.tick_mark.mark < excluded.mark"
            ),
        }
    }
}

/// A conditional write (`written`: an insert or an update that returns
/// the row's new version and wake) and, when it loses, the record that beat
/// it, in one statement. The outer SELECT sees the statement's snapshot, so
/// a record committed while this one waited for its row lock is not in it:
/// `put` then reads once more.
///
/// Without `notify` the last column says whether the write made the record
/// due now (its wake at or before the server's clock: an enqueued run, a
/// trigger, a redrive), which the store then tells the runners with a
/// `NOTIFY` of its own once the write has committed (store/wake.rs). Not in
/// the statement: PostgreSQL serializes the commits of every transaction
/// that notifies (a lock on the database held until its commit is
/// flushed), so writes that notified could not share a flush. With
/// `notify` (a channel), the statement notifies it itself (`woke`, which
/// the one row's `FROM` reads so that it runs): inside an application's
/// transaction (store/txn.rs), whose commit the store does not see, the
/// notification is then delivered at commit, and not at all on rollback;
/// the last column is false.
fn conditional_write(s: &str, written: &str, notify: Option<&str>) -> String {
    let lost = format!(
        "LEFT JOIN {s}.job_state j
           ON j.job = $1 AND NOT EXISTS (SELECT 1 FROM written)"
    );
    match notify {
        None => format!(
            "WITH written AS ({written})
             SELECT (SELECT version FROM written), j.version, j.state,
                    (SELECT wake_at <= clock_timestamp() FROM written)
               FROM (SELECT 1) AS one {lost}"
        ),
        // The channel is a lowercase identifier (`wake_channel`): no quote
        // to escape in the literal.
        Some(channel) => format!(
            "WITH written AS ({written}),
                  woke AS (SELECT pg_notify('{channel}', '') FROM written
                            WHERE written.wake_at <= clock_timestamp())
             SELECT (SELECT version FROM written), j.version, j.state, false
               FROM (SELECT count(*) FROM woke) AS one {lost}"
        ),
    }
}

/// The channel a store's writes notify when they make a record due now:
/// one per schema (a store's namespace), `cronslot_wake_<schema>`. A
/// channel name is at most 63 bytes: a schema longer than 48 bytes is
/// named by its first 32 and a hash of all of it (a different length, so
/// the two forms never meet).
pub(crate) fn wake_channel(schema: &str) -> String {
    if schema.len() <= 48 {
        format!("cronslot_wake_{schema}")
    } else {
        let hash = schema.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
        });
        let head = schema.get(..32).unwrap_or(schema);
        format!("cronslot_wake_{head}_{hash:016x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_channel_is_a_valid_name_per_schema() {
        assert_eq!(wake_channel("cronslot"), "cronslot_wake_cronslot");
        let long = "a".repeat(63);
        let other = format!("{}b", "a".repeat(62));
        assert_eq!(wake_channel(&long).len(), 63);
        assert_ne!(wake_channel(&long), wake_channel(&other));
        assert!(wake_channel(&"a".repeat(48)).len() < 63);
    }
}
