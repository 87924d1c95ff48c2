//! `RedisStore`: the compare-and-set store, the effect ledger and the tick
//! index.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use cronslot_core::coord::{
    EffectBegin, EffectFinish, EffectLedger, EffectRecord, EffectState, JobState, PutResult,
    StateStore, StoreError, TickIndex, TickStart, Version, Versioned, decide_begin, decide_finish,
    decode_state, encode_state,
};
use jiff::Timestamp;
use redis::Script;
use redis::aio::MultiplexedConnection;

use crate::conn::Shared;
use crate::error::Phase;
use crate::location::{RedisLocation, parse_redis_location};
use crate::time::{from_micros, from_time_reply, micros};
use cronslot_core::coord::LocationError;
use cronslot_store_kit::{
    DEFAULT_EFFECT_RETENTION, EffectEntry, Entry, JudgeClock, OpenOptions, RequestCounts, UrlStore,
    Written, seconds, settle_effect,
};

/// The layout of the store's keys that this cronslot writes (kept in the
/// key `{PREFIX}:layout`). A store written by a newer layout is refused.
pub const STORE_LAYOUT_VERSION: u32 = 1;

/// The longest expiry given to an effect entry: a hundred years, well
/// inside what `PEXPIRE` accepts.
const MAX_TTL_MS: u64 = 100 * 365 * 24 * 3600 * 1000;

/// How a store is opened, beyond its location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    effect_retention: Duration,
    create: bool,
}

impl Default for RedisOptions {
    fn default() -> RedisOptions {
        RedisOptions {
            effect_retention: DEFAULT_EFFECT_RETENTION,
            create: true,
        }
    }
}

impl RedisOptions {
    /// Keeps done effects this long ([`DEFAULT_EFFECT_RETENTION`] by
    /// default): a done entry expires this long after it was written, an
    /// entry in progress this long after its hold lapses. Make it longer
    /// than any retry of a slot can come. At least a millisecond.
    pub fn effect_retention(mut self, retention: Duration) -> RedisOptions {
        self.effect_retention = retention.max(Duration::from_millis(1));
        self
    }

    /// Whether opening marks an empty prefix as a store (the default), or
    /// only checks that a store is there (for commands that must not
    /// start an empty store by mistake).
    pub fn create(mut self, create: bool) -> RedisOptions {
        self.create = create;
        self
    }
}

/// The store's keys under its prefix `P`. A job's keys share the hash tag
/// `{P:JOB}`, so that in a Redis Cluster they live in one slot; the
/// deployment's keys share `{P}`.
struct Keys {
    prefix: String,
}

impl Keys {
    /// The job's record: a hash of `v` (the version) and `s` (the JSON of
    /// [`encode_state`]).
    fn state(&self, job: &str) -> String {
        format!("{{{}:{job}}}:state", self.prefix)
    }

    /// An effect's ledger entry: a hash of `rev` and `r` (the JSON of the
    /// entry), with an expiry. Under the hash tag of its job (the part of
    /// the key before its first `@`).
    fn effect(&self, key: &str) -> String {
        let job = key.split_once('@').map_or(key, |(job, _)| job);
        format!("{{{}:{job}}}:effect:{key}", self.prefix)
    }

    /// The wake index: a sorted set of every job with a record, scored by
    /// its wake in microseconds since the epoch (`+inf`: none).
    fn wakes(&self) -> String {
        format!("{{{}}}:wakes", self.prefix)
    }

    /// The tick mark, in microseconds since the epoch.
    fn tick(&self) -> String {
        format!("{{{}}}:tick", self.prefix)
    }

    /// The layout version of the keys.
    fn layout(&self) -> String {
        format!("{{{}}}:layout", self.prefix)
    }
}

/// The conditional write of a record: checks the stored version and
/// writes the record, its version and its entry in the wake index, or
/// answers the record that is there.
///
/// KEYS: the record, the wake index. ARGV: job, expected version (`''`:
/// none may exist), new version, record text, wake (microseconds, `''`:
/// none).
const PUT: &str = r"
local cur = redis.call('HMGET', KEYS[1], 'v', 's')
local v = cur[1]
if ARGV[2] == '' then
  if v then return {'conflict', v, cur[2] or ''} end
elseif v ~= ARGV[2] then
  if v then return {'conflict', v, cur[2] or ''} end
  return {'conflict'}
end
redis.call('HSET', KEYS[1], 'v', ARGV[3], 's', ARGV[4])
if ARGV[5] == '' then
  redis.call('ZADD', KEYS[2], '+inf', ARGV[1])
else
  redis.call('ZADD', KEYS[2], ARGV[5], ARGV[1])
end
return {'written', ARGV[3]}
";

/// The conditional write of a ledger entry: writes it and its expiry if
/// the entry is still at the expected revision.
///
/// KEYS: the entry. ARGV: expected revision (`''`: none may exist), new
/// revision, entry text, expiry in milliseconds.
const EFFECT_PUT: &str = r"
local rev = redis.call('HGET', KEYS[1], 'rev')
if ARGV[1] == '' then
  if rev then return 0 end
elseif rev ~= ARGV[1] then
  return 0
end
redis.call('HSET', KEYS[1], 'rev', ARGV[2], 'r', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
";

/// The start of a tick: the instant it plans up to (the caller's, or the
/// server's `TIME` when `''`), the mark, and the woken jobs, earliest wake
/// first.
///
/// KEYS: the tick mark, the wake index. ARGV: the caller's instant
/// (microseconds) or `''`, the limit.
const TICK_START: &str = r"
local now = ARGV[1]
if now == '' then
  local t = redis.call('TIME')
  now = t[1] .. string.format('%06d', tonumber(t[2]))
end
local mark = redis.call('GET', KEYS[1]) or ''
local woken = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now, 'LIMIT', 0, ARGV[2])
return {now, mark, woken}
";

/// Moves the tick mark forward, never back.
///
/// KEYS: the tick mark. ARGV: the new mark (microseconds).
const TICK_END: &str = r"
local m = redis.call('GET', KEYS[1])
if (not m) or tonumber(m) < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0
";

/// The layout version, written first when absent and creation is asked;
/// answers the version (`''`: none) and whether it was written now.
///
/// KEYS: the layout key. ARGV: this layout, whether to create (`1`/`0`).
const LAYOUT: &str = r"
local v = redis.call('GET', KEYS[1])
if v then return {v, '0'} end
if ARGV[2] == '1' then
  redis.call('SET', KEYS[1], ARGV[1])
  return {ARGV[1], '1'}
end
return {'', '0'}
";

struct Scripts {
    put: Script,
    effect_put: Script,
    tick_start: Script,
    tick_end: Script,
    layout: Script,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            put: Script::new(PUT),
            effect_put: Script::new(EFFECT_PUT),
            tick_start: Script::new(TICK_START),
            tick_end: Script::new(TICK_END),
            layout: Script::new(LAYOUT),
        }
    }
}

/// The Redis store. Clones share one connection and one background
/// thread; its operations may be awaited from any thread and any async
/// runtime.
#[derive(Clone)]
pub struct RedisStore {
    shared: Arc<Shared>,
    keys: Arc<Keys>,
    scripts: Arc<Scripts>,
    retention: Duration,
    judge: JudgeClock,
    /// Whether opening found no store under the prefix and marked one.
    created: bool,
}

impl fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisStore")
            .field("location", &self.shared.location)
            .field("judge", &self.judge)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Opens the store at `url` ([`parse_redis_location`]) with the
    /// default [`RedisOptions`].
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let location = parse_redis_location(url).map_err(|e| StoreError::other(e.message))?;
        RedisStore::connect_with(location, RedisOptions::default()).await
    }

    /// Opens the store at `location`: starts its background thread,
    /// connects once, and checks the layout of the keys under the prefix
    /// (marking an empty prefix as a store unless `options` says not to).
    /// Fails, with nothing written, on a layout from a newer cronslot.
    pub async fn connect_with(
        location: RedisLocation,
        options: RedisOptions,
    ) -> Result<RedisStore, StoreError> {
        let store = RedisStore {
            keys: Arc::new(Keys {
                prefix: location.prefix().to_string(),
            }),
            shared: Arc::new(Shared::new(location)?),
            scripts: Arc::new(Scripts::new()),
            retention: options.effect_retention,
            judge: JudgeClock::Server,
            created: false,
        };
        let created = store.check_layout(options.create).await?;
        Ok(RedisStore { created, ..store })
    }

    /// The same store, judging leases by `judge`.
    pub fn judge_by(mut self, judge: JudgeClock) -> RedisStore {
        self.judge = judge;
        self
    }

    /// Whether opening found no store under the prefix and marked one
    /// (`cronslot init` says "created"); false when it was there.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Whose clock judges leases.
    pub fn judge_clock(&self) -> JudgeClock {
        self.judge
    }

    /// The store's location (shown without its password).
    pub fn location(&self) -> &RedisLocation {
        &self.shared.location
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Requests (commands, pipelines, scripts) sent so far by this store
    /// and its clones, by kind.
    pub fn requests(&self) -> RequestCounts {
        self.shared.requests()
    }

    /// How far the Redis server's clock is ahead of this machine's
    /// (negative: behind), as measured by the last read of a record: the
    /// server's `TIME` minus the midpoint of the round trip on this
    /// machine's clock. `None` before the first read.
    pub fn clock_offset(&self) -> Option<jiff::SignedDuration> {
        self.shared.offset.get()
    }

    /// Checks the layout of the keys under the prefix, marking an empty
    /// prefix as a store when `create`; answers whether it did.
    async fn check_layout(&self, create: bool) -> Result<bool, StoreError> {
        let (shared, scripts, key) = (
            self.shared.clone(),
            self.scripts.clone(),
            self.keys.layout(),
        );
        self.shared
            .run(async move {
                let doing = || "checking the store's layout".to_string();
                let layout_key = &key;
                let (found, created): (String, String) = shared
                    .request(Phase::Write, true, &doing, |mut conn| async move {
                        scripts
                            .layout
                            .key(layout_key)
                            .arg(STORE_LAYOUT_VERSION)
                            .arg(if create { "1" } else { "0" })
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await?;
                if found.is_empty() {
                    return Err(StoreError::other(format!(
                        "Redis store {}: no store under this prefix (no key {key}): \
                         `cronslot init` (or `cronslot run`) creates one; or check the database \
                         number and the prefix",
                        shared.shown
                    )));
                }
                match found.parse::<u32>() {
                    Ok(v) if v <= STORE_LAYOUT_VERSION => Ok(created == "1"),
                    Ok(v) => Err(StoreError::other(format!(
                        "Redis store {}: the keys under this prefix have layout {v}, written by \
                         a newer cronslot (this one knows layout {STORE_LAYOUT_VERSION}): \
                         upgrade cronslot",
                        shared.shown
                    ))),
                    Err(_) => Err(StoreError::corrupt(format!(
                        "Redis store {}: the key {key} holds {found:?}, not a layout version: \
                         another program writes under this prefix; give the store a prefix of \
                         its own",
                        shared.shown
                    ))),
                }
            })
            .await
    }

    /// The record of `job` and the server's clock, in one round trip; the
    /// clock offset is measured on the way.
    async fn read(
        &self,
        job: &str,
    ) -> Result<(Option<Versioned<JobState>>, Timestamp), StoreError> {
        let (shared, key, job) = (self.shared.clone(), self.keys.state(job), job.to_string());
        self.shared
            .run(async move {
                let doing = || format!("reading the state of job {job:?}");
                let sent = Timestamp::now();
                let (time, fields): (Vec<String>, Vec<Option<String>>) = shared
                    .request(Phase::Read, false, &doing, |mut conn| async move {
                        redis::pipe()
                            .cmd("TIME")
                            .cmd("HMGET")
                            .arg(&key)
                            .arg("v")
                            .arg("s")
                            .query_async(&mut conn)
                            .await
                    })
                    .await?;
                let received = Timestamp::now();
                let server = match time.as_slice() {
                    [s, us] => from_time_reply(s, us),
                    _ => None,
                }
                .ok_or_else(|| {
                    StoreError::other(format!(
                        "Redis store {}: {}: the server's TIME answered {time:?}, not seconds \
                         and microseconds: this is not a Redis server cronslot knows",
                        shared.shown,
                        doing()
                    ))
                })?;
                shared.offset.measured(sent, server, received);
                let record = match fields.as_slice() {
                    [Some(v), Some(s)] => Some(versioned(&shared.shown, &job, v, s)?),
                    [None, None] => None,
                    _ => {
                        return Err(StoreError::corrupt(format!(
                            "Redis store {}: job {job:?}: the record's key holds a version \
                             without a state or a state without a version",
                            shared.shown
                        )));
                    }
                };
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
                "Redis store {}: refusing to store the state of job {:?} as job {job:?}",
                self.shared.shown, state.job
            )));
        }
        let next = match expected {
            None => 1,
            Some(e) => e.checked_add(1).ok_or_else(|| {
                StoreError::other(format!(
                    "Redis store {}: the version of job {job:?} cannot grow past {e}",
                    self.shared.shown
                ))
            })?,
        };
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (key, wakes, job) = (self.keys.state(job), self.keys.wakes(), job.to_string());
        let text = encode_state(state);
        let wake = state
            .wake_at
            .map(|w| micros(w).to_string())
            .unwrap_or_default();
        let expected = expected.map(|e| e.to_string()).unwrap_or_default();
        let replicas = Replicas::of(self.location());
        self.shared
            .run(async move {
                let doing = || format!("writing the state of job {job:?}");
                let (answer, acked): (Vec<String>, Option<u32>) = shared
                    .request(Phase::Write, false, &doing, |mut conn| {
                        let scripts = scripts.clone();
                        let (key, wakes, job) = (key.clone(), wakes.clone(), job.clone());
                        async move {
                            let answer: Vec<String> = scripts
                                .put
                                .key(&key)
                                .key(&wakes)
                                .arg(&job)
                                .arg(&expected)
                                .arg(next.to_string())
                                .arg(&text)
                                .arg(&wake)
                                .invoke_async(&mut conn)
                                .await?;
                            let written = answer.first().is_some_and(|w| w == "written");
                            let acked = replicas.wait_if(written, &mut conn).await?;
                            Ok((answer, acked))
                        }
                    })
                    .await?;
                replicas.check(&shared.shown, &doing(), acked)?;
                match answer.as_slice() {
                    [w, v] if w == "written" => {
                        let version = v.parse::<Version>().map_err(|_| {
                            StoreError::corrupt(format!(
                                "Redis store {}: job {job:?}: version {v:?} is not a number",
                                shared.shown
                            ))
                        })?;
                        Ok(PutResult::Written(version))
                    }
                    [c] if c == "conflict" => Ok(PutResult::Conflict(None)),
                    [c, v, s] if c == "conflict" => Ok(PutResult::Conflict(Some(Box::new(
                        versioned(&shared.shown, &job, v, s)?,
                    )))),
                    _ => Err(StoreError::other(format!(
                        "Redis store {}: {}: the script answered {answer:?}: this is a bug",
                        shared.shown,
                        doing()
                    ))),
                }
            })
            .await
    }

    async fn start_tick(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (tick, wakes) = (self.keys.tick(), self.keys.wakes());
        let caller = match self.judge {
            JudgeClock::Server => String::new(),
            JudgeClock::Caller => micros(now).to_string(),
        };
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.shared
            .run(async move {
                let doing = || "reading the tick mark and the woken jobs".to_string();
                let (now, mark, woken): (String, String, Vec<String>) = shared
                    .request(Phase::Read, false, &doing, |mut conn| async move {
                        scripts
                            .tick_start
                            .key(&tick)
                            .key(&wakes)
                            .arg(&caller)
                            .arg(limit)
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await?;
                let instant = |what: &str, text: &str| {
                    text.parse::<i64>()
                        .ok()
                        .and_then(from_micros)
                        .ok_or_else(|| {
                            StoreError::corrupt(format!(
                                "Redis store {}: {}: {what} {text:?} is not an instant in \
                                 microseconds",
                                shared.shown,
                                doing()
                            ))
                        })
                };
                let now = instant("the instant", &now)?;
                let mark = match mark.as_str() {
                    "" => None,
                    m => Some(instant("the tick mark", m)?),
                };
                Ok(TickStart {
                    now,
                    mark,
                    woken,
                    carried: Vec::new(),
                })
            })
            .await
    }

    async fn end_tick(&self, mark: Timestamp) -> Result<(), StoreError> {
        let (shared, scripts, tick) = (self.shared.clone(), self.scripts.clone(), self.keys.tick());
        // Floored to microseconds: a mark never passes a slot its tick did
        // not plan.
        let mark = micros(mark);
        self.shared
            .run(async move {
                let doing = || "moving the tick mark".to_string();
                let _: i64 = shared
                    .request(Phase::Write, false, &doing, |mut conn| async move {
                        scripts
                            .tick_end
                            .key(&tick)
                            .arg(mark)
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await?;
                Ok(())
            })
            .await
    }

    async fn list_jobs(&self) -> Result<Vec<String>, StoreError> {
        let (shared, wakes) = (self.shared.clone(), self.keys.wakes());
        self.shared
            .run(async move {
                let doing = || "listing jobs".to_string();
                let mut jobs: Vec<String> = shared
                    .request(Phase::Read, false, &doing, |mut conn| async move {
                        redis::cmd("ZRANGE")
                            .arg(&wakes)
                            .arg(0)
                            .arg(-1)
                            .query_async(&mut conn)
                            .await
                    })
                    .await?;
                jobs.sort();
                Ok(jobs)
            })
            .await
    }

    /// Applies a ledger rule to the entry of `key` atomically: read,
    /// decide, write on condition that the entry is unchanged (one script);
    /// a lost race decides again on what won (the kit's loop).
    async fn ledger<T, F>(
        &self,
        key: &str,
        doing: &'static str,
        now: Timestamp,
        decide: F,
    ) -> Result<T, StoreError>
    where
        T: Clone + Send + 'static,
        F: Fn(Option<&EffectRecord>) -> (T, Option<EffectRecord>) + Send + 'static,
    {
        let (shared, scripts) = (self.shared.clone(), self.scripts.clone());
        let (redis_key, key) = (self.keys.effect(key), key.to_string());
        let retention = self.retention;
        let replicas = Replicas::of(self.location());
        self.shared
            .run(async move {
                let mut entry = RedisEffect {
                    shared: &shared,
                    scripts: &scripts,
                    redis_key: &redis_key,
                    key: &key,
                    doing,
                    now,
                    retention,
                    replicas,
                };
                settle_effect(&mut entry, decide, |attempts| {
                    StoreError::unavailable(format!(
                        "Redis store {}: {doing} effect {key:?}: other writers changed the entry \
                         {attempts} times in a row (worth retrying)",
                        shared.shown
                    ))
                })
                .await
            })
            .await
    }
}

/// One effect's entry, as the kit's ledger loop reads and writes it: each
/// write one script, on condition of the entry's revision.
struct RedisEffect<'a> {
    shared: &'a Shared,
    scripts: &'a Arc<Scripts>,
    redis_key: &'a str,
    key: &'a str,
    doing: &'static str,
    now: Timestamp,
    retention: Duration,
    replicas: Replicas,
}

impl EffectEntry for RedisEffect<'_> {
    type Rev = u64;

    async fn read(&mut self) -> Result<Option<Entry<u64>>, StoreError> {
        Ok(read_effect(self.shared, self.redis_key, self.key)
            .await?
            .map(|(rev, record)| Entry { rev, record }))
    }

    async fn write(
        &mut self,
        current: Option<&Entry<u64>>,
        record: &EffectRecord,
    ) -> Result<(u64, Written<u64>), StoreError> {
        let (doing, key) = (self.doing, self.key);
        let doing = move || format!("{doing} effect {key:?}");
        let text = serde_json::to_string(record).map_err(|e| {
            StoreError::other(format!(
                "Redis store {}: {}: encoding the entry: {e}",
                self.shared.shown,
                doing()
            ))
        })?;
        let rev = current.map(|c| c.rev);
        let expected = rev.map(|r| r.to_string()).unwrap_or_default();
        let next_rev = rev.unwrap_or(0).saturating_add(1);
        let next = next_rev.to_string();
        let ttl = ttl_ms(record, self.now, self.retention).to_string();
        let replicas = self.replicas;
        let (written, acked): (i64, Option<u32>) = self
            .shared
            .request(Phase::Write, false, &doing, |mut conn| {
                let (scripts, redis_key) = (self.scripts.clone(), self.redis_key.to_string());
                async move {
                    let written: i64 = scripts
                        .effect_put
                        .key(&redis_key)
                        .arg(&expected)
                        .arg(&next)
                        .arg(&text)
                        .arg(&ttl)
                        .invoke_async(&mut conn)
                        .await?;
                    let acked = replicas.wait_if(written == 1, &mut conn).await?;
                    Ok((written, acked))
                }
            })
            .await?;
        replicas.check(&self.shared.shown, &doing(), acked)?;
        Ok(if written == 1 {
            (next_rev, Written::Yes)
        } else {
            (
                next_rev,
                Written::Lost {
                    current: None,
                    maybe_applied: false,
                },
            )
        })
    }
}

/// The replicas each write must reach before it counts as done (the
/// URL's `wait_replicas`, `wait_timeout`).
#[derive(Debug, Clone, Copy)]
struct Replicas {
    wanted: u32,
    timeout: Duration,
}

impl Replicas {
    fn of(location: &RedisLocation) -> Replicas {
        Replicas {
            wanted: location.wait_replicas(),
            timeout: location.wait_timeout(),
        }
    }

    /// After a write that `happened`: `WAIT` on the same connection (a
    /// connection's `WAIT` covers that connection's writes), answering how
    /// many replicas have it. `None` when nothing is to be waited for.
    async fn wait_if(
        self,
        happened: bool,
        conn: &mut MultiplexedConnection,
    ) -> redis::RedisResult<Option<u32>> {
        if self.wanted == 0 || !happened {
            return Ok(None);
        }
        let ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        let acked: u32 = redis::cmd("WAIT")
            .arg(self.wanted)
            .arg(ms)
            .query_async(conn)
            .await?;
        Ok(Some(acked))
    }

    /// A write fewer replicas acknowledged than wanted is not done: on a
    /// failover it could be lost and its slot run again. It is reported
    /// unavailable, so that the caller does not act on it (a claim is not
    /// run; its lease lapses and the slot is claimed anew, under a higher
    /// fence, after the lease), never ambiguous (read back, it would look
    /// done).
    fn check(self, store: &str, doing: &str, acked: Option<u32>) -> Result<(), StoreError> {
        match acked {
            Some(acked) if acked < self.wanted => Err(StoreError::unavailable(format!(
                "Redis store {store}: {doing}: the write reached {acked} of the {} replicas \
                 wait_replicas asks for within {} (wait_timeout), so it is not counted as \
                 done: a failover could lose it; check the replicas (worth retrying)",
                self.wanted,
                seconds(self.timeout)
            ))),
            _ => Ok(()),
        }
    }
}

/// A record from its stored version and text.
fn versioned(
    store: &str,
    job: &str,
    version: &str,
    text: &str,
) -> Result<Versioned<JobState>, StoreError> {
    let version = version.parse::<Version>().map_err(|_| {
        StoreError::corrupt(format!(
            "Redis store {store}: job {job:?}: version {version:?} is not a number"
        ))
    })?;
    // The decode error already names the job.
    let value = decode_state(job, text)
        .map_err(|e| StoreError::corrupt(format!("Redis store {store}: {e}")))?;
    Ok(Versioned { value, version })
}

/// The entry of effect `key` (at `redis_key`) and its revision.
async fn read_effect(
    shared: &Shared,
    redis_key: &str,
    key: &str,
) -> Result<Option<(u64, EffectRecord)>, StoreError> {
    let doing = || format!("reading effect {key:?}");
    let fields: Vec<Option<String>> = shared
        .request(Phase::Read, false, &doing, |mut conn| async move {
            redis::cmd("HMGET")
                .arg(redis_key)
                .arg("rev")
                .arg("r")
                .query_async(&mut conn)
                .await
        })
        .await?;
    let corrupt = |what: String| {
        StoreError::corrupt(format!(
            "Redis store {}: effect {key:?}: {what}",
            shared.shown
        ))
    };
    let (rev, text) = match fields.as_slice() {
        [None, None] => return Ok(None),
        [Some(rev), Some(text)] => (rev, text),
        _ => {
            return Err(corrupt(
                "the entry holds a revision without a record or a record without a revision"
                    .to_string(),
            ));
        }
    };
    let rev = rev
        .parse::<u64>()
        .map_err(|_| corrupt(format!("revision {rev:?} is not a number")))?;
    let record: EffectRecord = serde_json::from_str(text)
        .map_err(|e| corrupt(format!("the record cannot be read ({e})")))?;
    if record.key != key {
        return Err(corrupt(format!(
            "the record belongs to effect {:?}",
            record.key
        )));
    }
    Ok(Some((rev, record)))
}

/// How long a ledger entry written at `now` is kept, in milliseconds: a
/// done effect `retention` after it was done, a hold `retention` after it
/// lapses. Relative to `now`, so that the server's clock and the caller's
/// need not agree; at least a millisecond.
fn ttl_ms(record: &EffectRecord, now: Timestamp, retention: Duration) -> u64 {
    let until = match &record.state {
        EffectState::InProgress { expires_at } => *expires_at,
        EffectState::Done { done_at, .. } => *done_at,
    };
    let ahead = if until > now {
        Duration::try_from(until.duration_since(now)).unwrap_or(Duration::MAX)
    } else {
        Duration::ZERO
    };
    let total = ahead.saturating_add(retention).as_millis();
    u64::try_from(total)
        .unwrap_or(u64::MAX)
        .clamp(1, MAX_TTL_MS)
}

impl StateStore for RedisStore {
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

impl TickIndex for RedisStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        self.start_tick(now, limit).await
    }

    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        self.end_tick(mark).await
    }
}

impl EffectLedger for RedisStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        let (k, owner) = (key.to_string(), owner.to_string());
        self.ledger(key, "beginning", now, move |current| {
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
        self.ledger(key, "finishing", now, move |current| {
            decide_finish(current, fence, &result, now)
        })
        .await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        let (shared, redis_key, key) =
            (self.shared.clone(), self.keys.effect(key), key.to_string());
        self.shared
            .run(async move {
                Ok(read_effect(&shared, &redis_key, &key)
                    .await?
                    .map(|(_, r)| r))
            })
            .await
    }
}

impl UrlStore for RedisStore {
    const KIND: &'static str = "redis";
    const SCHEMES: &'static [&'static str] = &["redis", "rediss"];
    const SYNTAX: &'static str =
        "redis://[USER:PASSWORD@]HOST[:PORT]/DB[?prefix=NAME] (or rediss://)";
    type Location = RedisLocation;

    fn parse_location(url: &str) -> Result<RedisLocation, LocationError> {
        parse_redis_location(url)
    }

    async fn open_at(location: &RedisLocation, options: OpenOptions) -> Result<Self, StoreError> {
        let store = RedisStore::connect_with(
            location.clone(),
            RedisOptions::default().create(options.creates()),
        )
        .await?;
        Ok(store.judge_by(options.judge_clock()))
    }

    fn clock_offset(&self) -> Option<jiff::SignedDuration> {
        RedisStore::clock_offset(self)
    }

    fn judges_by_server_clock(&self) -> bool {
        self.judge == JudgeClock::Server
    }

    async fn durability_warnings(&self) -> Vec<String> {
        self.durability().await.warnings()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_a_hash_tag_per_job() {
        let keys = Keys {
            prefix: "cs".into(),
        };
        assert_eq!(keys.state("daily"), "{cs:daily}:state");
        assert_eq!(
            keys.effect("daily@2026-01-05T00:00:00Z/mail@x"),
            "{cs:daily}:effect:daily@2026-01-05T00:00:00Z/mail@x"
        );
        assert_eq!(keys.effect("no-at"), "{cs:no-at}:effect:no-at");
        assert_eq!(keys.wakes(), "{cs}:wakes");
        assert_eq!(keys.tick(), "{cs}:tick");
        assert_eq!(keys.layout(), "{cs}:layout");
    }

    #[test]
    fn entries_expire_after_their_hold_or_done_plus_retention() {
        let now: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let record = |state| EffectRecord {
            key: "k".into(),
            owner: "w".into(),
            fence: 1,
            state,
        };
        let day = Duration::from_secs(86_400);
        let held = record(EffectState::InProgress {
            expires_at: "2026-01-05T00:01:00Z".parse().unwrap(),
        });
        assert_eq!(ttl_ms(&held, now, day), 86_400_000 + 60_000);
        let done = record(EffectState::Done {
            result: "r".into(),
            done_at: now,
        });
        assert_eq!(ttl_ms(&done, now, day), 86_400_000);
        // A lapsed hold: the retention from now; never zero, never past
        // what PEXPIRE takes.
        let lapsed = record(EffectState::InProgress {
            expires_at: "2026-01-04T00:00:00Z".parse().unwrap(),
        });
        assert_eq!(ttl_ms(&lapsed, now, Duration::ZERO), 1);
        let far = record(EffectState::InProgress {
            expires_at: Timestamp::MAX,
        });
        assert_eq!(ttl_ms(&far, now, Duration::MAX), MAX_TTL_MS);
    }
}
