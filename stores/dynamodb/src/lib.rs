//! cronslot-dynamodb: [`DynamoStore`], the compare-and-set store and effect ledger of docs/design.md §5
//! in one DynamoDB table (§6).
//!
//! **Item layout** (one table, partition key `pk`, a string, no sort key):
//!
//! | item | `pk` | attributes |
//! |---|---|---|
//! | a job's state | `job#<name>` | `ver` (N, the version), `state` (S, the JSON of [`encode_state`]), `updated_at` (S, RFC 3339, informational) |
//! | an effect | `effect#<key>` | `record` (S, the JSON of [`EffectRecord`]), `rev` (N, guards its replacement), `ttl` (N, epoch seconds) |
//! | the tick mark | `tick#mark` | `mark` (N, Unix nanoseconds), `wk` (S, `"w"`), `wake` (N, [`MARK_SORT`]), `updated_at` (S) |
//!
//! A job's state item whose record has a [wake](JobState::wake_at) also
//! carries `wk` (S, always `"w"`) and `wake` (N, the wake in Unix
//! milliseconds, floored), written by the record's own conditional write;
//! a record without a wake has neither. The global secondary index
//! [`WAKE_INDEX`] (`wakes`: hash key `wk`, range key `wake`, projecting
//! `mark`) therefore holds exactly the jobs with a wake, plus the tick
//! mark, which sorts before them: [`TickIndex::tick_start`] is one
//! `Query` and [`TickIndex::tick_end`] one conditional `PutItem` (see the
//! `TickIndex` implementation for why the index's eventual consistency
//! loses nothing).
//!
//! A record named `job/key` (a dynamic job's schedule or keyed run) also
//! carries `ns` (S, the job). The global secondary index [`NAMES_INDEX`]
//! (`names`: hash key `ns`, range key `pk`, keys only) holds those records
//! under their job in name order: a listing's page
//! ([`StateStore::records_page`]) is a `Query` of it and a consistent
//! `BatchGetItem` of the records it names.
//!
//! **Writes** are conditional: a state write on `attribute_not_exists(#pk)`
//! (first write) or `#ver = :expected`, asking for `ALL_OLD` on failure so a
//! conflict hands back the current record without another read. Reads are
//! strongly consistent. An effect is read, decided by the shared rules
//! ([`decide_begin`], [`decide_finish`]) and written on condition that its
//! `rev` is unchanged; a lost race re-decides on the record DynamoDB
//! returned, so two workers never both acquire.
//!
//! The table's TTL is enabled on `ttl` ([`DynamoStore::create_table`]): an
//! effect hold expires with its hold, a done effect after
//! [`DynamoStore::with_effect_retention`] (30 days by default), so the
//! ledger does not grow forever. TTL deletion runs late (up to days), so
//! reads never rely on it: a lapsed hold is judged by its `expires_at`.
//!
//! **Errors.** Throttling, 5xx and transaction conflicts are retried with
//! exponential backoff and full jitter for at most the store's time budget
//! (10 s per operation by default; [`DynamoStore::with_deadline`] caps it at
//! the Lambda's remaining time), then reported as
//! [`StoreErrorKind::Unavailable`]. A state write whose request may have
//! reached DynamoDB (a timeout, a lost connection, an unreadable response)
//! is reported as [`StoreErrorKind::Ambiguous`]: the coordinator reads back.
//! A record that cannot be decoded is [`StoreErrorKind::Corrupt`]; the rest
//! (permissions, a missing table, validation) is
//! [`StoreErrorKind::Other`]. Messages name the table and the job or effect,
//! and carry DynamoDB's error code, message and request id (or, for a
//! transport failure, the SDK's whole chain of causes).
//!
//! **Size.** A state item is checked against DynamoDB's 400 KB item limit
//! before it is sent. Core caps the record (history, dead letters,
//! checkpoints, errors, pending runs); a record that still does not fit is
//! refused with an [`StoreErrorKind::Other`] error naming the job and the
//! size, and nothing is written: the stored record stays as it was.

// docs.rs (nightly, --cfg docsrs) labels items that need a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(missing_docs)]

mod fence;
mod items;
mod ledger;
mod listing;
mod location;
mod retry;
mod table;
mod tick;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, CreateGlobalSecondaryIndexAction,
    GlobalSecondaryIndex, GlobalSecondaryIndexDescription, GlobalSecondaryIndexUpdate, IndexStatus,
    KeySchemaElement, KeyType, KeysAndAttributes, Projection, ProjectionType, Put,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableDescription, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus, TransactWriteItem,
};
use cronslot_core::coord::decide;
use cronslot_core::coord::{
    CoordError, EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, PutResult,
    StateStore, StoreError, StoreErrorKind, TickIndex, TickStart, Version, Versioned, decide_begin,
    decide_finish, encode_state, prefix_end, repair_wake,
};
use cronslot_core::manifest::JobSpec;
use cronslot_store_kit::{OpenOptions, UrlStore};
use jiff::Timestamp;

pub use fence::{FENCE_NAME, FENCE_VALUE, FenceCondition, fence_condition};
pub use items::{
    MARK, MARK_SORT, MAX_ITEM_BYTES, NAME_SPACE, NAMES_INDEX, TTL_ATTRIBUTE, WAKE, WAKE_INDEX,
    WAKE_SHARD,
};
pub use location::{DynamoLocation, LocationError, parse_dynamodb_location};

use items::STATE;
use items::{
    Item, JOB_PREFIX, MAX_PARTITION_KEY_BYTES, PK, REV, RawState, StoredEffect, TICK_MARK_PK, VER,
    WAKE_SHARD_VALUE, decode_raw_state, describe_key, effect_item, effect_pk, floor_millis,
    item_size, job_pk, key_of, mark_item, name_space, read_effect_item, read_mark, read_raw_state,
    state_item,
};
use retry::{Budget, CallError, Kind, call};

/// The most keys one `BatchGetItem` asks for (DynamoDB's limit).
const MAX_BATCH_GET: usize = 100;

/// How long one store operation may keep retrying by default.
pub const DEFAULT_RETRY_BUDGET: Duration = Duration::from_secs(10);

pub use cronslot_store_kit::DEFAULT_EFFECT_RETENTION;
use cronslot_store_kit::{EffectEntry, Entry, Written, settle_effect};

/// Most items of the job's own that fit in one transaction with the state
/// (DynamoDB's limit is 100 per `TransactWriteItems`).
pub const MAX_EXTRA_ITEMS: usize = 99;

/// The DynamoDB store. Cheap to clone (the SDK client is shared); clones
/// with different deadlines serve different Lambda invocations.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    retry_budget: Duration,
    deadline: Option<Instant>,
    effect_retention: Duration,
}

impl DynamoStore {
    /// A `PutItem` conditioned on `condition`, returning the current item
    /// when the condition fails (`ALL_OLD`: a lost race costs no extra read).
    /// State writes and ledger writes both go through it.
    fn conditional_put(
        &self,
        item: &HashMap<String, AttributeValue>,
        condition: &str,
        names: &HashMap<String, String>,
        values: &Option<HashMap<String, AttributeValue>>,
    ) -> aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder {
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item.clone()))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names.clone()))
            .set_expression_attribute_values(values.clone())
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
    }

    /// A store on `table` through `client`. The client's own retries are
    /// turned off (its interceptors, credentials and endpoint are kept): the
    /// store retries itself, because only it knows whether a failed
    /// conditional write may have been applied.
    pub fn new(client: Client, table: impl Into<String>) -> DynamoStore {
        let config = client
            .config()
            .to_builder()
            .retry_config(RetryConfig::disabled())
            .build();
        DynamoStore {
            client: Client::from_conf(config),
            table: table.into(),
            retry_budget: DEFAULT_RETRY_BUDGET,
            deadline: None,
            effect_retention: DEFAULT_EFFECT_RETENTION,
        }
    }

    /// A store from the CLI's `dynamodb://TABLE?region=R[&endpoint=URL]`.
    /// Credentials come from the environment's default chain; the region
    /// from the URL, else from the environment.
    pub async fn connect(url: &str) -> Result<DynamoStore, StoreError> {
        let location = parse_dynamodb_location(url).map_err(|e| StoreError::other(e.message))?;
        DynamoStore::connect_at(&location).await
    }

    /// A store at `location`, as [`DynamoStore::connect`] makes it.
    pub async fn connect_at(location: &DynamoLocation) -> Result<DynamoStore, StoreError> {
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(3))
                .operation_attempt_timeout(Duration::from_secs(5))
                .build(),
        );
        if let Some(region) = &location.region {
            loader = loader.region(aws_config::Region::new(region.clone()));
        }
        if let Some(endpoint) = &location.endpoint {
            loader = loader.endpoint_url(endpoint.clone());
        }
        let config = loader.load().await;
        if config.region().is_none() {
            return Err(StoreError::other(format!(
                "DynamoDB store {location}: no AWS region: add ?region=REGION (for example dynamodb://{}?region=us-east-1) or set AWS_REGION",
                location.table
            )));
        }
        Ok(DynamoStore::new(
            Client::new(&config),
            location.table.clone(),
        ))
    }

    /// At most this long per operation, retries included (default
    /// [`DEFAULT_RETRY_BUDGET`]).
    pub fn with_retry_budget(mut self, budget: Duration) -> DynamoStore {
        self.retry_budget = budget;
        self
    }

    /// No operation retries past this instant: in a Lambda, the
    /// invocation's deadline minus a margin for recording the outcome.
    pub fn with_deadline(mut self, deadline: Instant) -> DynamoStore {
        self.deadline = Some(deadline);
        self
    }

    /// How long done effects are kept before TTL deletes them (default
    /// [`DEFAULT_EFFECT_RETENTION`]). Make it longer than any retry of a
    /// slot can come.
    pub fn with_effect_retention(mut self, retention: Duration) -> DynamoStore {
        self.effect_retention = retention;
        self
    }

    /// The SDK client the store uses (its own retries turned off).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn budget(&self) -> Budget {
        Budget {
            per_operation: self.retry_budget,
            deadline: self.deadline,
        }
    }

    fn what(&self, doing: &str) -> String {
        format!("DynamoDB table {}: {doing}", self.table)
    }

    /// The names of the jobs whose items match `more` besides being job
    /// items: one paginated, strongly consistent `Scan`.
    async fn scan_jobs(
        &self,
        doing: &str,
        more: Option<ScanFilter<'_>>,
    ) -> Result<Vec<String>, StoreError> {
        let what = self.what(doing);
        let mut filter = format!("begins_with(#{PK}, :prefix)");
        if let Some(more) = &more {
            filter = format!("{filter} AND ({})", more.expression);
        }
        let mut jobs = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = call(self.budget(), &what, Kind::Read, no_more, || {
                let mut scan = self
                    .client
                    .scan()
                    .table_name(&self.table)
                    .consistent_read(true)
                    .projection_expression(format!("#{PK}"))
                    .filter_expression(filter.clone())
                    .expression_attribute_names(format!("#{PK}"), PK)
                    .expression_attribute_values(
                        ":prefix",
                        AttributeValue::S(JOB_PREFIX.to_string()),
                    );
                if let Some(more) = &more {
                    for (name, attribute) in more.names {
                        scan = scan.expression_attribute_names(format!("#{name}"), *attribute);
                    }
                    for (key, value) in more.values {
                        scan = scan.expression_attribute_values(
                            *key,
                            AttributeValue::S(value.to_string()),
                        );
                    }
                }
                scan.set_exclusive_start_key(start.clone()).send()
            })
            .await
            .map_err(store_error)?;
            for item in out.items() {
                match item.get(PK) {
                    Some(AttributeValue::S(pk)) => {
                        if let Some(job) = pk.strip_prefix(JOB_PREFIX) {
                            jobs.push(job.to_string());
                        }
                    }
                    _ => {
                        return Err(StoreError::new(
                            StoreErrorKind::Corrupt,
                            format!("{what}: an item's key is not a string"),
                        ));
                    }
                }
            }
            match out.last_evaluated_key() {
                Some(key) if !key.is_empty() => start = Some(key.clone()),
                _ => break,
            }
        }
        Ok(jobs)
    }

    /// The records of `jobs`, in that order: `BatchGetItem`s of up to
    /// [`MAX_BATCH_GET`] keys, consistent reads, each batch's unprocessed
    /// keys asked again (within the retry budget).
    async fn get_many_raw(
        &self,
        jobs: &[&str],
    ) -> Result<Vec<Option<Versioned<JobState>>>, StoreError> {
        let mut found: HashMap<String, Item> = HashMap::with_capacity(jobs.len());
        let what = self.what(&format!("reading the states of {} jobs", jobs.len()));
        for chunk in jobs.chunks(MAX_BATCH_GET) {
            let mut keys: Vec<Item> = chunk.iter().map(|job| key_of(job_pk(job))).collect();
            let deadline = Instant::now() + self.retry_budget;
            while !keys.is_empty() {
                let asked = KeysAndAttributes::builder()
                    .set_keys(Some(keys.clone()))
                    .consistent_read(true)
                    .build()
                    .map_err(|e| {
                        StoreError::other(format!("{what}: cannot build the request: {e}"))
                    })?;
                let out = call(self.budget(), &what, Kind::Read, no_more, || {
                    self.client
                        .batch_get_item()
                        .request_items(&self.table, asked.clone())
                        .send()
                })
                .await
                .map_err(store_error)?;
                for item in out
                    .responses()
                    .and_then(|r| r.get(&self.table))
                    .into_iter()
                    .flatten()
                {
                    if let Some(AttributeValue::S(pk)) = item.get(PK) {
                        found.insert(pk.clone(), item.clone());
                    }
                }
                keys = out
                    .unprocessed_keys()
                    .and_then(|u| u.get(&self.table))
                    .map(|k| k.keys().to_vec())
                    .unwrap_or_default();
                if !keys.is_empty() && Instant::now() > deadline {
                    return Err(StoreError::unavailable(format!(
                        "{what}: DynamoDB left {} keys unprocessed until the retry budget ran out",
                        keys.len()
                    )));
                }
            }
        }
        jobs.iter()
            .map(|job| match found.get(&job_pk(job)) {
                Some(item) => {
                    let raw = read_raw_state(&self.table, job, item)?;
                    Ok(Some(decode_raw_state(&self.table, job, raw)?))
                }
                None => Ok(None),
            })
            .collect()
    }

    /// The item of `job` as stored, without decoding the state.
    async fn get_raw(&self, job: &str) -> Result<Option<RawState>, StoreError> {
        let what = self.what(&format!("reading the state of job {job:?}"));
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key_of(job_pk(job))))
                .consistent_read(true)
                .send()
        })
        .await
        .map_err(store_error)?;
        match out.item() {
            Some(item) if !item.is_empty() => Ok(Some(read_raw_state(&self.table, job, item)?)),
            _ => Ok(None),
        }
    }

    /// The item that `put` writes, checked against the limits, with its
    /// version and text.
    fn prepare_state(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<(Item, RawState), StoreError> {
        if state.job != job {
            // A caller's bug; storing it would leave a record that every
            // later read refuses as corrupt.
            return Err(StoreError::other(format!(
                "DynamoDB table {}: refusing to store the state of job {:?} as job {job:?}",
                self.table, state.job
            )));
        }
        let pk = job_pk(job);
        if pk.len() > MAX_PARTITION_KEY_BYTES {
            return Err(StoreError::other(format!(
                "DynamoDB table {}: job name {job:?} is too long for a key ({} bytes with its prefix; DynamoDB allows {MAX_PARTITION_KEY_BYTES})",
                self.table,
                pk.len()
            )));
        }
        let version = match expected {
            None => 1,
            Some(v) => v.checked_add(1).ok_or_else(|| {
                StoreError::other(format!(
                    "DynamoDB table {}: the version of job {job:?} cannot grow past {v}",
                    self.table
                ))
            })?,
        };
        let text = encode_state(state);
        let item = state_item(
            job,
            version,
            &text,
            Timestamp::now().to_string(),
            state.wake_at,
        );
        let size = item_size(&item);
        if size > MAX_ITEM_BYTES {
            return Err(StoreError::other(format!(
                "DynamoDB table {}: the state of job {job:?} would be {size} bytes, over DynamoDB's item limit of {MAX_ITEM_BYTES} bytes; nothing was written. The record holds {} pending runs, {} leases, {} dead letters and {} history entries: redrive or clear dead letters, lower max_concurrency or make checkpoints smaller",
                self.table,
                state.pending.len(),
                state.leases.len(),
                state.dead.len(),
                state.history.len()
            )));
        }
        Ok((item, RawState { version, text }))
    }

    /// A failed condition on the state item: the current record (from
    /// ALL_OLD), unless it is the very record we were writing, which means
    /// an earlier attempt of this write landed.
    fn state_conflict(
        &self,
        job: &str,
        old: Option<&Item>,
        attempted: RawState,
        maybe_applied: bool,
    ) -> Result<PutResult, StoreError> {
        let Some(old) = old.filter(|i| !i.is_empty()) else {
            return Ok(PutResult::Conflict(None));
        };
        let current = read_raw_state(&self.table, job, old)?;
        // Only when an earlier attempt may have landed: otherwise an equal
        // record was written by someone else (the same transition by
        // another worker), and the contract says conflict.
        if maybe_applied && current == attempted {
            return Ok(PutResult::Written(attempted.version));
        }
        let current = decode_raw_state(&self.table, job, current)?;
        Ok(PutResult::Conflict(Some(Box::new(current))))
    }

    /// Writes `state` as [`StateStore::put`] does, and `extra` (the job's
    /// own writes) with it in one `TransactWriteItems`: all of them land or
    /// none does.
    ///
    /// * The state's version condition failed → `Ok(Conflict(current))`,
    ///   with the current record from ALL_OLD (no extra read); nothing of
    ///   `extra` was written. Re-plan on `current` and call again.
    /// * The condition of an item of `extra` failed (for example a
    ///   [`fence_condition`] refusing a superseded run) →
    ///   [`StoreErrorKind::Other`] naming the item; nothing was written.
    /// * Throttling, conflicts with other transactions, 5xx and timeouts are
    ///   retried within the budget with one client request token, so a
    ///   retry never applies the transaction twice (on DynamoDB the token
    ///   makes the retry a no-op; where it is not honoured, the retry's
    ///   failed condition returns our own record, which is recognised as
    ///   written). Only when the budget runs out with the outcome unknown
    ///   is the result [`StoreErrorKind::Ambiguous`]: read back with
    ///   [`StateStore::get`]; if the state is what was written, `extra` was
    ///   written with it.
    ///
    /// `extra` holds at most [`MAX_EXTRA_ITEMS`] items, none of them the
    /// job's state item.
    ///
    /// **Atomic completion from a run.** A run whose effects are DynamoDB
    /// writes hands them to [`DynamoStore::complete_with`] instead of
    /// calling `Coordinator::complete`: its writes and the slot's
    /// completion then commit together, so a crash between "wrote" and
    /// "recorded" cannot happen, and a superseded run's writes are refused
    /// with its completion. The Lambda runner can offer this as a context
    /// method (the run returns its `TransactWriteItem`s, fenced with
    /// [`fence_condition`] where the destination is shared).
    pub async fn put_with(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
        extra: Vec<TransactWriteItem>,
    ) -> Result<PutResult, StoreError> {
        if extra.len() > MAX_EXTRA_ITEMS {
            return Err(StoreError::other(format!(
                "DynamoDB table {}: {} items to write with the state of job {job:?}; one transaction holds at most {MAX_EXTRA_ITEMS} besides the state",
                self.table,
                extra.len()
            )));
        }
        let (item, attempted) = self.prepare_state(job, state, expected)?;
        let (condition, names, values) = state_condition(expected);
        let what = self.what(&format!(
            "writing the state of job {job:?} with {} item(s) of its own",
            extra.len()
        ));
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(values)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let mut transact = Vec::with_capacity(extra.len() + 1);
        transact.push(TransactWriteItem::builder().put(put).build());
        transact.extend(extra);
        let token = retry::request_token();
        let result = call(
            self.budget(),
            &what,
            Kind::IdempotentWrite,
            cancelled_by_contention,
            || {
                self.client
                    .transact_write_items()
                    .set_transact_items(Some(transact.clone()))
                    .client_request_token(&token)
                    .send()
            },
        )
        .await;
        match result {
            Ok(_) => Ok(PutResult::Written(attempted.version)),
            Err(CallError::Service {
                err: TransactWriteItemsError::TransactionCanceledException(e),
                message,
                maybe_applied,
            }) => {
                let reasons = e.cancellation_reasons();
                let failed = |r: &aws_sdk_dynamodb::types::CancellationReason| {
                    r.code() == Some("ConditionalCheckFailed")
                };
                if let Some(state_reason) = reasons.first().filter(|r| failed(r)) {
                    return self.state_conflict(job, state_reason.item(), attempted, maybe_applied);
                }
                if let Some((i, reason)) =
                    reasons.iter().enumerate().skip(1).find(|(_, r)| failed(r))
                {
                    let target = transact.get(i).map_or_else(String::new, describe_write);
                    return Err(StoreError::other(format!(
                        "{what}: item {i} of the job's own writes ({target}) failed its condition{}; nothing was written",
                        reason
                            .message()
                            .map(|m| format!(" ({m})"))
                            .unwrap_or_default()
                    )));
                }
                Err(StoreError::other(message))
            }
            Err(e) => Err(store_error(e)),
        }
    }

    /// Completes the run `fence` of `spec`'s job and commits `extra` (the
    /// run's own DynamoDB writes) in the same transaction (see
    /// [`DynamoStore::put_with`]). `known` is the record the caller last saw
    /// (saves a read); a stale one only costs a conflict and a re-plan.
    /// Returns the record written.
    pub async fn complete_with(
        &self,
        spec: &JobSpec,
        fence: u64,
        result: Option<&str>,
        now: Timestamp,
        extra: Vec<TransactWriteItem>,
        known: Option<Versioned<JobState>>,
    ) -> Result<Versioned<JobState>, CoordError> {
        let job = spec.name.as_str();
        let mut current = match known {
            Some(k) => Some(k),
            None => self.get(job).await?,
        };
        for _ in 0..cronslot_core::coord::MAX_CAS_ATTEMPTS {
            let (mut next, expected) = match &current {
                Some(v) => (v.value.clone(), Some(v.version)),
                None => (
                    JobState::new(job, &spec.spec_hash(), now, spec.paused),
                    None,
                ),
            };
            decide::complete(spec, &mut next, fence, result, now)?;
            match self.put_with(job, &next, expected, extra.clone()).await? {
                PutResult::Written(version) => {
                    return Ok(Versioned {
                        value: next,
                        version,
                    });
                }
                PutResult::Conflict(now_stored) => current = now_stored.map(|b| *b),
            }
        }
        Err(CoordError::Contention {
            attempts: cronslot_core::coord::MAX_CAS_ATTEMPTS,
        })
    }
}

/// The condition of a state write, with its placeholders (`pk` and `ver`
/// always go through `#names`: many words are reserved in expressions).
fn state_condition(
    expected: Option<Version>,
) -> (
    String,
    HashMap<String, String>,
    Option<HashMap<String, AttributeValue>>,
) {
    match expected {
        None => (
            format!("attribute_not_exists(#{PK})"),
            HashMap::from([(format!("#{PK}"), PK.to_string())]),
            // DynamoDB refuses an empty value map.
            None,
        ),
        Some(v) => (
            format!("#{VER} = :expected"),
            HashMap::from([(format!("#{VER}"), VER.to_string())]),
            Some(HashMap::from([(
                ":expected".to_string(),
                AttributeValue::N(v.to_string()),
            )])),
        ),
    }
}

/// No retryable service errors beyond the common ones.
fn no_more<E>(_: &E) -> bool {
    false
}

/// A transaction cancelled only because of other transactions or
/// throttling (no failed condition, no invalid item) is worth retrying.
fn cancelled_by_contention(e: &TransactWriteItemsError) -> bool {
    match e {
        TransactWriteItemsError::TransactionCanceledException(c) => {
            let codes: Vec<&str> = c
                .cancellation_reasons()
                .iter()
                .filter_map(|r| r.code())
                .filter(|code| *code != "None")
                .collect();
            !codes.is_empty()
                && codes.iter().all(|code| {
                    matches!(
                        *code,
                        "TransactionConflict" | "ThrottlingError" | "ProvisionedThroughputExceeded"
                    )
                })
        }
        TransactWriteItemsError::TransactionInProgressException(_) => true,
        _ => false,
    }
}

/// A service error the operation has no meaning for becomes `Other` (a
/// missing table, a permission, a validation error), with its code.
fn store_error<E: ProvideErrorMetadata>(e: CallError<E>) -> StoreError {
    match e {
        CallError::Service { err, message, .. } => match err.code() {
            Some("ResourceNotFoundException") => StoreError::other(format!(
                "{message} (does the table exist in this region? `cronslot` can create it)"
            )),
            _ => StoreError::other(message),
        },
        CallError::Store(e) => e,
    }
}

/// Names the target of a transaction item for messages.
fn describe_write(w: &TransactWriteItem) -> String {
    if let Some(p) = w.put() {
        return format!("Put on table {}", p.table_name());
    }
    if let Some(u) = w.update() {
        return format!(
            "Update on table {} key {}",
            u.table_name(),
            describe_key(u.key())
        );
    }
    if let Some(d) = w.delete() {
        return format!(
            "Delete on table {} key {}",
            d.table_name(),
            describe_key(d.key())
        );
    }
    if let Some(c) = w.condition_check() {
        return format!(
            "ConditionCheck on table {} key {}",
            c.table_name(),
            describe_key(c.key())
        );
    }
    "an empty item".to_string()
}

impl StateStore for DynamoStore {
    async fn get(&self, job: &str) -> Result<Option<Versioned<JobState>>, StoreError> {
        match self.get_raw(job).await? {
            Some(raw) => Ok(Some(decode_raw_state(&self.table, job, raw)?)),
            None => Ok(None),
        }
    }

    async fn get_many_judged(
        &self,
        jobs: &[&str],
        now: Timestamp,
    ) -> Result<(Vec<Option<Versioned<JobState>>>, Timestamp), StoreError> {
        Ok((self.get_many_raw(jobs).await?, now))
    }

    async fn put(
        &self,
        job: &str,
        state: &JobState,
        expected: Option<Version>,
    ) -> Result<PutResult, StoreError> {
        let (item, attempted) = self.prepare_state(job, state, expected)?;
        let (condition, names, values) = state_condition(expected);
        let what = self.what(&format!("writing the state of job {job:?}"));
        let result = call(self.budget(), &what, Kind::Write, no_more, || {
            self.conditional_put(&item, &condition, &names, &values)
                .send()
        })
        .await;
        match result {
            Ok(_) => Ok(PutResult::Written(attempted.version)),
            Err(CallError::Service {
                err: PutItemError::ConditionalCheckFailedException(e),
                maybe_applied,
                ..
            }) => self.state_conflict(job, e.item(), attempted, maybe_applied),
            Err(e) => Err(store_error(e)),
        }
    }

    /// One conditional `DeleteItem` at the version read; the wake index's
    /// entry is the item's own attributes, so it goes with it. A retried
    /// delete whose first attempt landed answers `false`.
    async fn delete(&self, job: &str, expected: Version) -> Result<bool, StoreError> {
        let (condition, names, values) = state_condition(Some(expected));
        let what = self.what(&format!("deleting the record of {job:?}"));
        let result = call(self.budget(), &what, Kind::Write, no_more, || {
            self.client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(key_of(job_pk(job))))
                .condition_expression(&condition)
                .set_expression_attribute_names(Some(names.clone()))
                .set_expression_attribute_values(values.clone())
                .send()
        })
        .await;
        match result {
            Ok(_) => Ok(true),
            Err(CallError::Service {
                err: DeleteItemError::ConditionalCheckFailedException(_),
                ..
            }) => Ok(false),
            Err(e) => Err(store_error(e)),
        }
    }

    /// A `Query` of the names index and a consistent read of its page's
    /// records (see [`DynamoStore::records_page_now`]).
    async fn records_page(
        &self,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Versioned<JobState>)>, StoreError> {
        self.records_page_now(prefix, after, limit).await
    }

    /// Every job with a state item, sorted: a consistent `Scan` of the
    /// job items' keys, page by page. It reads the whole table (effects
    /// included), which suits the CLI's `status`, not a hot path.
    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        let mut jobs = self.scan_jobs("listing jobs", None).await?;
        jobs.sort();
        jobs.dedup();
        Ok(jobs)
    }
}

/// More of a `Scan`'s filter: the expression, its attribute names
/// (`#name` for each) and its string values (`:key`).
struct ScanFilter<'a> {
    expression: &'a str,
    names: &'a [(&'a str, &'a str)],
    values: &'a [(&'a str, &'a str)],
}

impl UrlStore for DynamoStore {
    const KIND: &'static str = "dynamodb";
    const SCHEMES: &'static [&'static str] = &["dynamodb"];
    const SYNTAX: &'static str = "dynamodb://TABLE?region=REGION[&endpoint=URL]";
    type Location = DynamoLocation;

    fn parse_location(url: &str) -> Result<DynamoLocation, LocationError> {
        parse_dynamodb_location(url)
    }

    /// The table must exist (the deployed template or `cronslot init`
    /// creates it): a missing one fails on first use with DynamoDB's
    /// answer. Leases are judged by the caller's clock (DynamoDB has none to
    /// read), so `options` changes nothing else.
    async fn open_at(location: &DynamoLocation, options: OpenOptions) -> Result<Self, StoreError> {
        let _ = options;
        DynamoStore::connect_at(location).await
    }
}
