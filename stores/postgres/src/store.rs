//! `PgStore`: the compare-and-set store and the effect ledger.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cronslot_core::coord::LocationError;
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState, JobState, PutResult,
    StateStore, StoreError, TickIndex, TickStart, Version, Versioned, decide_begin, decide_finish,
    decode_state, encode_state,
};
use cronslot_store_kit::{
    DEFAULT_EFFECT_RETENTION, EffectEntry, Entry, JudgeClock, OpenOptions, RequestCounts, UrlStore,
    Written, settle_effect,
};
use jiff::{SignedDuration, Timestamp};
use tokio_postgres::Row;
use tokio_postgres::types::Type;

use crate::error::Phase;
use crate::location::{PgLocation, parse_postgres_location};
use crate::pool::{Conn, Shared};
use crate::schema::{InitReport, ensure, quoted};
use crate::time::PgTime;

/// How many connections a store (all its clones together) opens at most,
/// unless [`PgOptions::max_connections`] says otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4;

/// How a store is opened, beyond its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgOptions {
    max_connections: usize,
    effect_retention: Duration,
    create: bool,
}

impl Default for PgOptions {
    fn default() -> PgOptions {
        PgOptions {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            effect_retention: DEFAULT_EFFECT_RETENTION,
            create: true,
        }
    }
}

impl PgOptions {
    /// At most `n` connections (at least 1); [`DEFAULT_MAX_CONNECTIONS`]
    /// by default. A caller waits for a free one up to the connect
    /// timeout.
    pub fn max_connections(mut self, n: usize) -> PgOptions {
        self.max_connections = n.max(1);
        self
    }

    /// Keeps done effects this long before a sweep may delete them
    /// ([`DEFAULT_EFFECT_RETENTION`] by default). Make it longer than any
    /// retry of a slot can come.
    pub fn effect_retention(mut self, retention: Duration) -> PgOptions {
        self.effect_retention = retention;
        self
    }

    /// Whether opening creates the schema and tables when they are missing
    /// (the default), or only checks that they are there (for commands
    /// that must not create an empty store by mistake).
    pub fn create(mut self, create: bool) -> PgOptions {
        self.create = create;
        self
    }
}

/// The PostgreSQL store. Clones share one connection pool and one
/// background thread; its operations may be awaited from any thread and
/// any async runtime.
#[derive(Clone)]
pub struct PgStore {
    shared: Arc<Shared>,
    sql: Arc<Sql>,
    opened: Arc<InitReport>,
    retention: Duration,
    judge: JudgeClock,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("location", &self.shared.location)
            .field("judge", &self.judge)
            .finish_non_exhaustive()
    }
}

/// The statements, with the schema filled in.
struct Sql {
    get: String,
    insert: String,
    update: String,
    jobs: String,
    effect_get: String,
    effect_insert: String,
    effect_update: String,
    sweep: String,
    tick_start: String,
    tick_end: String,
}

impl Sql {
    fn new(schema: &str) -> Sql {
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
            jobs: format!("SELECT job FROM {s}.job_state ORDER BY job"),
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

impl PgStore {
    /// Opens the store at `url` ([`parse_postgres_location`]) with the
    /// default [`PgOptions`]: connects once, and creates the schema and
    /// tables if they are missing.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        let location = parse_postgres_location(url).map_err(|e| StoreError::other(e.message))?;
        PgStore::connect_with(location, PgOptions::default()).await
    }

    /// Opens the store at `location`: starts its background thread,
    /// connects once, and creates the schema and tables if missing (unless
    /// `options` says not to), or checks their version. Fails, with nothing
    /// written, on a schema from a newer cronslot.
    pub async fn connect_with(
        location: PgLocation,
        options: PgOptions,
    ) -> Result<PgStore, StoreError> {
        let schema = location.schema().to_string();
        let shared = Arc::new(Shared::new(location, options.max_connections)?);
        let create = options.create;
        let task = {
            let shared = shared.clone();
            async move {
                let mut conn = shared.checkout().await?;
                ensure(&mut conn, &schema, create).await
            }
        };
        let opened = shared.run(task).await?;
        Ok(PgStore {
            sql: Arc::new(Sql::new(shared.location.schema())),
            shared,
            opened: Arc::new(opened),
            retention: options.effect_retention,
            judge: JudgeClock::default(),
        })
    }

    /// This handle (and its later clones) judges leases by `clock`
    /// ([`JudgeClock::Server`] by default).
    pub fn judge_by(mut self, clock: JudgeClock) -> PgStore {
        self.judge = clock;
        self
    }

    /// The clock this handle judges leases by.
    pub fn judge_clock(&self) -> JudgeClock {
        self.judge
    }

    /// Where the store is (shown without its password).
    pub fn location(&self) -> &PgLocation {
        &self.shared.location
    }

    /// What opening found and did to the schema.
    pub fn opened(&self) -> &InitReport {
        &self.opened
    }

    /// Creates the schema and tables if they are missing, or reports them
    /// already there. Idempotent, and safe while other processes do the
    /// same: creation runs under a lock in one transaction. Refuses a
    /// schema from a newer cronslot.
    pub async fn init(&self) -> Result<InitReport, StoreError> {
        let shared = self.shared.clone();
        self.shared
            .run(async move {
                let schema = shared.location.schema().to_string();
                let mut conn = shared.checkout().await?;
                ensure(&mut conn, &schema, true).await
            })
            .await
    }

    /// Deletes at most `limit` ledger entries whose time is up before
    /// `older_than`, and says how many it deleted. An entry's time is up
    /// when a hold lapses (`expires_at` of an effect in progress: a
    /// missing entry reads like a lapsed hold) or, for a done effect, when
    /// the retention ([`PgOptions::effect_retention`], 30 days by default)
    /// after `done_at` has passed; the same rule as the DynamoDB store's
    /// TTL. Call it periodically with the current time and a limit that
    /// keeps each statement short (a few thousand); several callers at
    /// once skip each other's rows instead of waiting.
    pub async fn sweep_effects(
        &self,
        older_than: Timestamp,
        limit: u32,
    ) -> Result<u64, StoreError> {
        if limit == 0 {
            return Ok(0);
        }
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        self.shared
            .run(async move {
                let doing = || "sweeping the effect ledger".to_string();
                let mut conn = shared.checkout().await?;
                let before = PgTime(older_than);
                let limit = i64::from(limit);
                let rows = conn
                    .query(
                        Phase::Write,
                        false,
                        &doing,
                        &sql.sweep,
                        &[(&before, Type::TIMESTAMPTZ), (&limit, Type::INT8)],
                    )
                    .await?;
                let count = match rows.first() {
                    Some(row) => conn.column::<i64>(row, 0, &doing)?,
                    None => 0,
                };
                Ok(u64::try_from(count).unwrap_or(0))
            })
            .await
    }

    /// [`PgStore::sweep_effects`] in batches of `batch` until a batch
    /// deletes fewer than that, or `max_batches` have run: what a periodic
    /// sweeper calls. Returns how many entries it deleted.
    pub async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        let mut total = 0;
        for _ in 0..max_batches {
            let deleted = self.sweep_effects(now, batch).await?;
            total += deleted;
            if deleted < u64::from(batch) {
                break;
            }
        }
        Ok(total)
    }

    /// Requests (statements) sent so far by this store and its clones, by
    /// kind.
    pub fn requests(&self) -> RequestCounts {
        self.shared.requests()
    }

    /// How far the database server's clock is ahead of this machine's
    /// (negative: behind), as measured by the last read of a record: the
    /// server's `clock_timestamp()` minus the midpoint of the round trip
    /// on this machine's clock. `None` before the first read.
    pub fn clock_offset(&self) -> Option<SignedDuration> {
        self.shared.offset.get()
    }

    async fn read(
        &self,
        job: &str,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (shared, sql, job) = (self.shared.clone(), self.sql.clone(), job.to_string());
        self.shared
            .run(async move {
                let mut conn = shared.checkout().await?;
                let sent = Timestamp::now();
                let (record, server) = read_state(&mut conn, &sql, &job).await?;
                shared.offset.measured(sent, server, Timestamp::now());
                Ok((record, server))
            })
            .await
    }

    async fn put_state(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        if state.job != job {
            // A caller's bug; storing it would leave a record that every
            // later read refuses as corrupt.
            return Err(StoreError::other(format!(
                "PostgreSQL store {}: refusing to store the state of job {:?} as job {job:?}",
                self.shared.shown, state.job
            )));
        }
        let (shared, sql, job) = (self.shared.clone(), self.sql.clone(), job.to_string());
        let text = encode_state(state);
        let wake = state.wake_at.map(PgTime);
        self.shared
            .run(async move {
                let mut conn = shared.checkout().await?;
                put_state(&mut conn, &sql, &job, &text, wake, expected).await
            })
            .await
    }

    async fn start_tick(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        let caller = match self.judge {
            JudgeClock::Server => None,
            JudgeClock::Caller => Some(PgTime(now)),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.shared
            .run(async move {
                let doing = || "reading the tick mark and the woken jobs".to_string();
                let mut conn = shared.checkout().await?;
                let rows = conn
                    .query(
                        Phase::Read,
                        false,
                        &doing,
                        &sql.tick_start,
                        &[(&caller, Type::TIMESTAMPTZ), (&limit, Type::INT8)],
                    )
                    .await?;
                let Some(row) = rows.first() else {
                    return Err(unexpected(&conn, &doing));
                };
                Ok(TickStart {
                    now: conn.column::<PgTime>(row, 0, &doing)?.0,
                    mark: conn.column::<Option<PgTime>>(row, 1, &doing)?.map(|t| t.0),
                    woken: conn.column::<Vec<String>>(row, 2, &doing)?,
                    carried: Vec::new(),
                })
            })
            .await
    }

    async fn end_tick(&self, mark: Timestamp) -> Result<(), StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        self.shared
            .run(async move {
                let doing = || "moving the tick mark".to_string();
                let mut conn = shared.checkout().await?;
                // PgTime floors to microseconds: a mark never passes a
                // slot its tick did not plan.
                let mark = PgTime(mark);
                conn.query(
                    Phase::Write,
                    false,
                    &doing,
                    &sql.tick_end,
                    &[(&mark, Type::TIMESTAMPTZ)],
                )
                .await?;
                Ok(())
            })
            .await
    }

    async fn list_jobs(&self) -> Result<Vec<String>, StoreError> {
        let (shared, sql) = (self.shared.clone(), self.sql.clone());
        self.shared
            .run(async move {
                let doing = || "listing jobs".to_string();
                let mut conn = shared.checkout().await?;
                let rows = conn
                    .query(Phase::Read, false, &doing, &sql.jobs, &[])
                    .await?;
                rows.iter()
                    .map(|row| conn.column::<String>(row, 0, &doing))
                    .collect()
            })
            .await
    }

    /// Applies a ledger rule to the entry of `key` atomically: read,
    /// decide, write on condition that the entry is unchanged; a lost race
    /// decides again on what won.
    async fn ledger<T, F>(&self, key: &str, doing: &'static str, decide: F) -> Result<T, StoreError>
    where
        T: Clone + Send + 'static,
        F: Fn(Option<&EffectRecord>) -> (T, Option<EffectRecord>) + Send + 'static,
    {
        let (shared, sql, key) = (self.shared.clone(), self.sql.clone(), key.to_string());
        let retention = self.retention;
        self.shared
            .run(async move {
                let shown = shared.shown.clone();
                let mut entry = PgEffect {
                    conn: shared.checkout().await?,
                    sql: &sql,
                    key: &key,
                    doing,
                    retention,
                };
                settle_effect(&mut entry, decide, |attempts| {
                    StoreError::unavailable(format!(
                        "PostgreSQL store {shown}: {doing} effect {key:?}: other writers changed the \
                         entry {attempts} times in a row (worth retrying)"
                    ))
                })
                .await
            })
            .await
    }
}

/// One effect's row, as the kit's ledger loop reads and writes it.
struct PgEffect<'a> {
    conn: Conn<'a>,
    sql: &'a Sql,
    key: &'a str,
    doing: &'static str,
    retention: Duration,
}

impl EffectEntry for PgEffect<'_> {
    type Rev = i64;

    async fn read(&mut self) -> Result<Option<Entry<i64>>, StoreError> {
        Ok(read_effect(&mut self.conn, self.sql, self.key)
            .await?
            .map(|(rev, record)| Entry { rev, record }))
    }

    async fn write(
        &mut self,
        current: Option<&Entry<i64>>,
        record: &EffectRecord,
    ) -> Result<(i64, Written<i64>), StoreError> {
        let (doing, key) = (self.doing, self.key);
        let doing = move || format!("{doing} effect {key:?}");
        let rev = current.map(|c| c.rev);
        let written = write_effect(
            &mut self.conn,
            self.sql,
            &doing,
            rev,
            record,
            self.retention,
        )
        .await?;
        let next = rev.map_or(1, |r| r.saturating_add(1));
        Ok(if written {
            (next, Written::Yes)
        } else {
            (
                next,
                Written::Lost {
                    current: None,
                    maybe_applied: false,
                },
            )
        })
    }
}

/// The record of `job` (if any) and the server's clock, in one statement.
async fn read_state(
    conn: &mut Conn<'_>,
    sql: &Sql,
    job: &str,
) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
    let doing = || format!("reading the state of job {job:?}");
    let rows = conn
        .query(Phase::Read, false, &doing, &sql.get, &[(&job, Type::TEXT)])
        .await?;
    let Some(row) = rows.first() else {
        return Err(unexpected(conn, &doing));
    };
    let server = conn.column::<PgTime>(row, 0, &doing)?.0;
    let record = versioned(conn, row, 1, job, &doing)?;
    Ok((record, server))
}

/// The record in columns `first` (version) and `first + 1` (state) of
/// `row`, when they are not null.
fn versioned(
    conn: &Conn<'_>,
    row: &Row,
    first: usize,
    job: &str,
    doing: &(dyn Fn() -> String + Sync),
) -> Result<Option<Versioned<JobState>>, StoreError> {
    let version = conn.column::<Option<i64>>(row, first, doing)?;
    let state = conn.column::<Option<String>>(row, first + 1, doing)?;
    let (Some(version), Some(text)) = (version, state) else {
        return Ok(None);
    };
    let version = Version::try_from(version).map_err(|_| {
        StoreError::corrupt(format!(
            "PostgreSQL store {}: job {job:?}: version {version} is negative",
            conn.store()
        ))
    })?;
    // The decode error already names the job.
    let value = decode_state(job, &text)
        .map_err(|e| StoreError::corrupt(format!("PostgreSQL store {}: {e}", conn.store())))?;
    Ok(Some(Versioned { value, version }))
}

fn unexpected(conn: &Conn<'_>, doing: &(dyn Fn() -> String + Sync)) -> StoreError {
    StoreError::other(format!(
        "PostgreSQL store {}: {}: the server answered with no row: this is a bug",
        conn.store(),
        doing()
    ))
}

async fn put_state(
    conn: &mut Conn<'_>,
    sql: &Sql,
    job: &str,
    text: &str,
    wake: Option<PgTime>,
    expected: Option<Version>,
) -> Result<PutResult, StoreError> {
    let doing = || format!("writing the state of job {job:?}");
    let rows = match expected {
        None => {
            conn.query(
                Phase::Write,
                false,
                &doing,
                &sql.insert,
                &[
                    (&job, Type::TEXT),
                    (&text, Type::TEXT),
                    (&wake, Type::TIMESTAMPTZ),
                ],
            )
            .await?
        }
        Some(expected) => {
            // A version beyond bigint was never issued by this store: it
            // cannot match, so it is a conflict.
            let Ok(expected) = i64::try_from(expected) else {
                let (current, _) = read_state(conn, sql, job).await?;
                return Ok(PutResult::Conflict(current.map(Box::new)));
            };
            let next = expected.checked_add(1).ok_or_else(|| {
                StoreError::other(format!(
                    "PostgreSQL store {}: the version of job {job:?} cannot grow past {expected}",
                    conn.store()
                ))
            })?;
            conn.query(
                Phase::Write,
                false,
                &doing,
                &sql.update,
                &[
                    (&job, Type::TEXT),
                    (&text, Type::TEXT),
                    (&next, Type::INT8),
                    (&expected, Type::INT8),
                    (&wake, Type::TIMESTAMPTZ),
                ],
            )
            .await?
        }
    };
    let Some(row) = rows.first() else {
        return Err(unexpected(conn, &doing));
    };
    if let Some(version) = conn.column::<Option<i64>>(row, 0, &doing)? {
        let version = Version::try_from(version).map_err(|_| {
            StoreError::corrupt(format!(
                "PostgreSQL store {}: job {job:?}: version {version} is negative",
                conn.store()
            ))
        })?;
        return Ok(PutResult::Written(version));
    }
    let mut current = versioned(conn, row, 1, job, &doing)?;
    // What the statement's snapshot showed may be older than what beat the
    // write (committed while the write waited for the row): then it still
    // looks like what the caller expected. Read the winner.
    let stale = match (&current, expected) {
        (None, None) => true,
        (Some(c), Some(e)) => c.version == e,
        _ => false,
    };
    if stale {
        current = read_state(conn, sql, job).await?.0;
    }
    Ok(PutResult::Conflict(current.map(Box::new)))
}

async fn read_effect(
    conn: &mut Conn<'_>,
    sql: &Sql,
    key: &str,
) -> Result<Option<(i64, EffectRecord)>, StoreError> {
    let doing = || format!("reading effect {key:?}");
    let rows = conn
        .query(
            Phase::Read,
            false,
            &doing,
            &sql.effect_get,
            &[(&key, Type::TEXT)],
        )
        .await?;
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let rev = conn.column::<i64>(row, 0, &doing)?;
    let text = conn.column::<String>(row, 1, &doing)?;
    let corrupt = |what: String| {
        StoreError::corrupt(format!(
            "PostgreSQL store {}: effect {key:?}: {what}",
            conn.store()
        ))
    };
    let record: EffectRecord = serde_json::from_str(&text)
        .map_err(|e| corrupt(format!("the record cannot be read ({e})")))?;
    if record.key != key {
        return Err(corrupt(format!(
            "the record belongs to effect {:?}",
            record.key
        )));
    }
    Ok(Some((rev, record)))
}

/// Writes `record` if the entry is still at `rev` (`None`: still absent).
/// `false` when another writer got there first.
async fn write_effect(
    conn: &mut Conn<'_>,
    sql: &Sql,
    doing: &(dyn Fn() -> String + Sync),
    rev: Option<i64>,
    record: &EffectRecord,
    retention: Duration,
) -> Result<bool, StoreError> {
    let text = serde_json::to_string(record).map_err(|e| {
        StoreError::other(format!(
            "PostgreSQL store {}: {}: encoding the record: {e}",
            conn.store(),
            doing()
        ))
    })?;
    let sweep_at = PgTime(sweep_time(record, retention));
    let key = record.key.as_str();
    let rows = match rev {
        None => {
            conn.query(
                Phase::Write,
                false,
                doing,
                &sql.effect_insert,
                &[
                    (&key, Type::TEXT),
                    (&text, Type::TEXT),
                    (&sweep_at, Type::TIMESTAMPTZ),
                ],
            )
            .await?
        }
        Some(rev) => {
            conn.query(
                Phase::Write,
                false,
                doing,
                &sql.effect_update,
                &[
                    (&key, Type::TEXT),
                    (&text, Type::TEXT),
                    (&sweep_at, Type::TIMESTAMPTZ),
                    (&rev, Type::INT8),
                ],
            )
            .await?
        }
    };
    Ok(!rows.is_empty())
}

/// When a sweep may delete a ledger entry: a hold when it lapses, a done
/// effect `retention` after it was done.
fn sweep_time(record: &EffectRecord, retention: Duration) -> Timestamp {
    match &record.state {
        EffectState::InProgress { expires_at } => *expires_at,
        EffectState::Done { done_at, .. } => {
            let retention = SignedDuration::try_from(retention).unwrap_or(SignedDuration::MAX);
            done_at.checked_add(retention).unwrap_or(Timestamp::MAX)
        }
    }
}

impl StateStore for PgStore {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        Ok(self.read(job).await?.0)
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.put_state(job, state, expected).await
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.list_jobs().await
    }

    async fn get_judged(
        &self,
        job: &str,
        now: Timestamp,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (record, server) = self.read(job).await?;
        Ok((record, self.judge.judge(server, now)))
    }
}

impl TickIndex for PgStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.start_tick(now, limit).await
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.end_tick(mark).await
    }
}

impl EffectLedger for PgStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        let (k, owner) = (key.to_string(), owner.to_string());
        self.ledger(key, "beginning", move |current| {
            decide_begin(current, &k, &owner, fence, now, hold)
        })
        .await
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        let result = result.to_string();
        self.ledger(key, "finishing", move |current| {
            decide_finish(current, fence, &result, now)
        })
        .await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        let (shared, sql, key) = (self.shared.clone(), self.sql.clone(), key.to_string());
        self.shared
            .run(async move {
                let mut conn = shared.checkout().await?;
                Ok(read_effect(&mut conn, &sql, &key).await?.map(|(_, r)| r))
            })
            .await
    }
}

impl UrlStore for PgStore {
    const KIND: &'static str = "postgres";
    const SCHEMES: &'static [&'static str] = &["postgres", "postgresql"];
    const SYNTAX: &'static str = "postgres://USER@HOST[:PORT]/DB[?sslmode=MODE&schema=NAME]";
    type Location = PgLocation;

    fn parse_location(url: &str) -> Result<PgLocation, LocationError> {
        parse_postgres_location(url)
    }

    async fn open_at(location: &PgLocation, options: OpenOptions) -> Result<Self, StoreError> {
        let store = PgStore::connect_with(
            location.clone(),
            PgOptions::default().create(options.creates()),
        )
        .await?;
        Ok(store.judge_by(options.judge_clock()))
    }

    fn clock_offset(&self) -> Option<SignedDuration> {
        PgStore::clock_offset(self)
    }

    fn judges_by_server_clock(&self) -> bool {
        self.judge == JudgeClock::Server
    }

    async fn sweep_expired(
        &self,
        now: Timestamp,
        batch: u32,
        max_batches: u32,
    ) -> Result<u64, StoreError> {
        PgStore::sweep_expired(self, now, batch, max_batches).await
    }

    fn sweeps(&self) -> bool {
        true
    }
}
