//! More stores for the deterministic simulation (issue 7, see [`crate::sim`]):
//!
//! - [`ObjectStores`]: the Durable Object's store
//!   ([`cronslot_cf::ObjectStore`]), one per job as `id_from_name(job)`
//!   gives in workerd, each on a SQLite of its own through [`RusqliteSql`]
//!   (Durable Objects run on SQLite too);
//! - [`OnTokio`]: any store whose futures need a tokio runtime (DynamoDB's
//!   SDK), each operation run to completion on that runtime.
//!
//! Both wrappers are `Clone` (clones share the data), as
//! [`simulate`](crate::sim::simulate) wants: each virtual worker holds a
//! clone. Neither adds an await point of its own: the simulation's
//! [`FaultStore`](crate::sim::FaultStore) yields once before every
//! operation, and the operation itself then runs without interruption, so
//! these stores interleave exactly as the memory and SQLite stores do, and a
//! seed gives the same trace on every one of them when they agree.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;

use cronslot_cf::ObjectStore;
use cronslot_cf::sql::{Sql, SqlError, SqlValue};
use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, PutResult, RecordWrite,
    StateStore, StoreError, Version, Versioned,
};
use jiff::Timestamp;
use rusqlite::Connection;
use rusqlite::types::{Value, ValueRef};

// ------------------------------------------------------------ rusqlite ----

/// The job object's [`Sql`] on a rusqlite connection: what the Durable
/// Object's `storage.sql` is in workerd (SQLite; one statement at a time,
/// each committed before the next request can run), for native tests.
///
/// Also the object's SQL in cf-adapter's native tests. Parameters bind by
/// position, every row comes back with all its columns, and text that is
/// not UTF-8 is read lossily. Statements are prepared once and cached (the
/// object runs the same few statements over and over).
pub struct RusqliteSql {
    conn: Connection,
}

impl RusqliteSql {
    /// A private in-memory database: one object's storage.
    pub fn in_memory() -> Result<RusqliteSql, SqlError> {
        Connection::open_in_memory()
            .map(|conn| RusqliteSql { conn })
            .map_err(sql_error)
    }
}

fn sql_error(e: rusqlite::Error) -> SqlError {
    SqlError(e.to_string())
}

fn to_sqlite(value: &SqlValue) -> Value {
    match value {
        SqlValue::Null => Value::Null,
        SqlValue::Integer(i) => Value::Integer(*i),
        SqlValue::Real(r) => Value::Real(*r),
        SqlValue::Text(t) => Value::Text(t.clone()),
        SqlValue::Blob(b) => Value::Blob(b.clone()),
    }
}

fn from_sqlite(value: ValueRef<'_>) -> SqlValue {
    match value {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(i) => SqlValue::Integer(i),
        ValueRef::Real(r) => SqlValue::Real(r),
        ValueRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Blob(b) => SqlValue::Blob(b.to_vec()),
    }
}

impl Sql for RusqliteSql {
    fn exec(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>, SqlError> {
        let mut statement = self.conn.prepare_cached(sql).map_err(sql_error)?;
        let columns = statement.column_count();
        let mut rows = statement
            .query(rusqlite::params_from_iter(params.iter().map(to_sqlite)))
            .map_err(sql_error)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(sql_error)? {
            let cells = (0..columns)
                .map(|i| row.get_ref(i).map(from_sqlite))
                .collect::<Result<Vec<_>, _>>()
                .map_err(sql_error)?;
            out.push(cells);
        }
        Ok(out)
    }
}

// ------------------------------------------------------ durable objects ----

type Object = Rc<ObjectStore<RusqliteSql>>;

/// The Durable Objects' stores: one [`ObjectStore`] per job, each on its own
/// in-memory SQLite, created on first use as `id_from_name(job)` creates an
/// object. An effect belongs to the object of its job (the key is
/// `<job>@<slot instant>/<name>`, from `JobContext::effect_key`).
///
/// In workerd one `CasCoordinator` runs inside each object and the object
/// serialises requests, so its store only ever sees one claim, heartbeat or
/// completion at a time, each from the same coordinator. The simulation
/// instead puts 8 independent coordinators (each with its own cache, owner
/// and skewed clock) over the same objects and interleaves their operations
/// at every store call: every interleaving the Durable Object can produce
/// is among these (the object's are the special case of one coordinator
/// with requests in sequence), so this tests a superset of what it must
/// survive. What it does not model is workerd itself (input/output gates,
/// storage resets, object eviction): `tests/it/cf_workerd.rs` runs the object
/// there.
#[derive(Clone, Default)]
pub struct ObjectStores {
    objects: Rc<RefCell<BTreeMap<String, Object>>>,
}

impl ObjectStores {
    pub fn new() -> ObjectStores {
        ObjectStores::default()
    }

    /// The object of `job`, created (empty) on first use.
    fn object(&self, job: &str) -> Result<Object, StoreError> {
        if let Some(object) = self.objects.borrow().get(job) {
            return Ok(object.clone());
        }
        let sql = RusqliteSql::in_memory().map_err(|e| {
            StoreError::other(format!("opening the SQLite of job {job:?}'s object: {e}"))
        })?;
        let object = Rc::new(ObjectStore::new(sql));
        self.objects
            .borrow_mut()
            .insert(job.to_string(), object.clone());
        Ok(object)
    }

    /// The object of the job an effect key belongs to.
    fn object_of_effect(&self, key: &str) -> Result<Object, StoreError> {
        match key.split_once('@') {
            Some((job, _)) if !job.is_empty() => self.object(job),
            _ => Err(StoreError::other(format!(
                "effect key {key:?} names no job (expected <job>@<slot>/<name>)"
            ))),
        }
    }

    /// How many objects exist (one per job that has been used).
    pub fn objects(&self) -> usize {
        self.objects.borrow().len()
    }
}

// No `RefCell` borrow is held across an await below: the `Rc` of the
// object is cloned out first.
impl StateStore for ObjectStores {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        self.object(job)?.get(job).await
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.object(job)?.put(job, state, expected).await
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        self.object(job)?.delete(job, expected).await
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        let objects: Vec<Object> = self.objects.borrow().values().cloned().collect();
        let mut jobs = Vec::new();
        for object in objects {
            jobs.extend(object.jobs().await?);
        }
        jobs.sort();
        jobs.dedup();
        Ok(jobs)
    }
}

impl EffectLedger for ObjectStores {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.object_of_effect(key)?
            .begin_effect(key, owner, fence, now, hold)
            .await
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        self.object_of_effect(key)?
            .finish_effect(key, fence, result, now)
            .await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.object_of_effect(key)?.read_effect(key).await
    }
}

// ---------------------------------------------------------------- tokio ----

/// A store whose futures need tokio (the DynamoDB SDK's I/O and timers),
/// usable from the simulation's own executor: every operation is run to
/// completion with [`tokio::runtime::Runtime::block_on`] when it is first
/// polled. Each store call is thereby atomic from the simulation's point of
/// view (no other worker runs during it), which keeps a seed's run
/// deterministic except for the store's own behaviour. The simulation's
/// executor is not a tokio runtime, so nesting `block_on` inside it is
/// allowed; use a current-thread runtime and keep everything on one thread.
pub struct OnTokio<S> {
    inner: S,
    runtime: Rc<tokio::runtime::Runtime>,
}

impl<S: Clone> Clone for OnTokio<S> {
    fn clone(&self) -> Self {
        OnTokio {
            inner: self.inner.clone(),
            runtime: self.runtime.clone(),
        }
    }
}

impl<S> OnTokio<S> {
    pub fn new(inner: S, runtime: Rc<tokio::runtime::Runtime>) -> OnTokio<S> {
        OnTokio { inner, runtime }
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }
}

impl<S: StateStore> StateStore for OnTokio<S> {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        self.runtime.block_on(self.inner.get(job))
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        self.runtime.block_on(self.inner.put(job, state, expected))
    }

    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        self.runtime.block_on(self.inner.delete(job, expected))
    }

    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        self.runtime.block_on(self.inner.jobs())
    }

    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        self.runtime
            .block_on(self.inner.records_page(prefix, after, limit))
    }

    async fn get_many_judged(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        self.runtime.block_on(self.inner.get_many_judged(jobs, now))
    }

    async fn put_many(&self, writes: &[RecordWrite<'_>]) -> Vec<Result<PutResult, StoreError>> {
        self.runtime.block_on(self.inner.put_many(writes))
    }
}

impl<S: EffectLedger> EffectLedger for OnTokio<S> {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.runtime
            .block_on(self.inner.begin_effect(key, owner, fence, now, hold))
    }

    async fn finish_effect(
        &self,
        key: &str,
        fence: u64,
        result: &str,
        now: Timestamp,
    ) -> Result<EffectFinish, StoreError> {
        self.runtime
            .block_on(self.inner.finish_effect(key, fence, result, now))
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        self.runtime.block_on(self.inner.read_effect(key))
    }
}
