//! `DynamoStore`: the compare-and-set store and effect ledger of docs/design.md §5
//! in one DynamoDB table (§6).
//!
//! **Item layout** (one table, partition key `pk`, a string, no sort key):
//!
//! | item | `pk` | attributes |
//! |---|---|---|
//! | a job's state | `job#<name>` | `ver` (N, the version), `state` (S, the JSON of [`encode_state`]), `updated_at` (S, RFC 3339, informational) |
//! | an effect | `effect#<key>` | `record` (S, the JSON of [`EffectRecord`]), `rev` (N, guards its replacement), `ttl` (N, epoch seconds) |
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

mod fence;
mod items;
mod location;
mod retry;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, KeySchemaElement, KeyType, Put,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableStatus, TimeToLiveSpecification,
    TimeToLiveStatus, TransactWriteItem,
};
use cronslot_core::coord::decide;
use cronslot_core::coord::{
    CoordError, EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, PutResult,
    StateStore, StoreError, StoreErrorKind, Version, Versioned, decide_begin, decide_finish,
    encode_state,
};
use cronslot_core::manifest::JobSpec;
use jiff::Timestamp;

pub use fence::{FENCE_NAME, FENCE_VALUE, FenceCondition, fence_condition};
pub use items::{MAX_ITEM_BYTES, TTL_ATTRIBUTE};
pub use location::{DynamoLocation, LocationError, parse_dynamodb_location};

use items::{
    Item, JOB_PREFIX, MAX_PARTITION_KEY_BYTES, PK, REV, RawState, StoredEffect, VER,
    decode_raw_state, describe_key, effect_item, effect_pk, item_size, job_pk, key_of,
    read_effect_item, read_raw_state, state_item,
};
use retry::{Budget, CallError, Kind, call};

/// How long one store operation may keep retrying by default.
pub const DEFAULT_RETRY_BUDGET: Duration = Duration::from_secs(10);

/// How long a done effect is kept by default: far longer than any retry of
/// its slot, short enough that the ledger stays small.
pub const DEFAULT_EFFECT_RETENTION: Duration = Duration::from_secs(30 * 24 * 3600);

/// How many times an effect's read-decide-write is redone after losing a
/// race before the store gives up (as `Unavailable`: worth retrying later).
const MAX_LEDGER_ATTEMPTS: u32 = 16;

/// Most items of the job's own that fit in one transaction with the state
/// (DynamoDB's limit is 100 per `TransactWriteItems`).
pub const MAX_EXTRA_ITEMS: usize = 99;

/// How long [`DynamoStore::create_table`] waits for a new table to become
/// active.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(300);

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
    pub async fn from_url(url: &str) -> Result<DynamoStore, StoreError> {
        let location = parse_dynamodb_location(url).map_err(|e| StoreError::other(e.message))?;
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
                "store {url:?}: no AWS region: add ?region=REGION (for example dynamodb://{}?region=us-east-1) or set AWS_REGION",
                location.table
            )));
        }
        Ok(DynamoStore::new(Client::new(&config), location.table))
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

    /// Creates the table if it does not exist: on-demand billing, key `pk`
    /// (string), TTL on [`TTL_ATTRIBUTE`]; waits until it is active. An
    /// existing table is fine if its key is `pk` (string); TTL is switched
    /// on if it is off. Point-in-time recovery and encryption settings are
    /// left to the deployment template.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let what = self.what("creating the table");
        let pk_definition = AttributeDefinition::builder()
            .attribute_name(PK)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let pk_key = KeySchemaElement::builder()
            .attribute_name(PK)
            .key_type(KeyType::Hash)
            .build()
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        // Safe to repeat: a repeat finds the table and reports it in use.
        let created = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .create_table()
                .table_name(&self.table)
                .attribute_definitions(pk_definition.clone())
                .key_schema(pk_key.clone())
                .billing_mode(BillingMode::PayPerRequest)
                .send()
        })
        .await;
        match created {
            Ok(_) => {}
            Err(CallError::Service {
                err: CreateTableError::ResourceInUseException(_),
                ..
            }) => {}
            Err(e) => return Err(store_error(e)),
        }
        self.wait_active().await?;
        self.enable_ttl().await
    }

    /// Waits for the table to be active and checks its key.
    async fn wait_active(&self) -> Result<(), StoreError> {
        let what = self.what("describing the table");
        let started = Instant::now();
        loop {
            let out = call(self.budget(), &what, Kind::Read, no_more, || {
                self.client.describe_table().table_name(&self.table).send()
            })
            .await
            .map_err(store_error)?;
            let Some(table) = out.table() else {
                return Err(StoreError::other(format!(
                    "{what}: no description returned"
                )));
            };
            let key: Vec<(&str, &KeyType)> = table
                .key_schema()
                .iter()
                .map(|k| (k.attribute_name(), k.key_type()))
                .collect();
            let pk_is_string = table
                .attribute_definitions()
                .iter()
                .any(|d| d.attribute_name() == PK && *d.attribute_type() == ScalarAttributeType::S);
            if key != [(PK, &KeyType::Hash)] || !pk_is_string {
                return Err(StoreError::other(format!(
                    "DynamoDB table {}: exists with another key ({key:?}); cronslot needs a table whose only key is the string partition key \"pk\": choose another table name",
                    self.table
                )));
            }
            match table.table_status() {
                Some(TableStatus::Active) | None => return Ok(()),
                Some(TableStatus::Creating) | Some(TableStatus::Updating) => {}
                Some(other) => {
                    return Err(StoreError::other(format!(
                        "DynamoDB table {}: is {}, not usable",
                        self.table,
                        other.as_str()
                    )));
                }
            }
            if started.elapsed() > TABLE_ACTIVE_TIMEOUT {
                return Err(StoreError::unavailable(format!(
                    "DynamoDB table {}: still not active after {TABLE_ACTIVE_TIMEOUT:?}",
                    self.table
                )));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    async fn enable_ttl(&self) -> Result<(), StoreError> {
        let what = self.what("reading the TTL setting");
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .describe_time_to_live()
                .table_name(&self.table)
                .send()
        })
        .await
        .map_err(store_error)?;
        let description = out.time_to_live_description();
        let status = description.and_then(|d| d.time_to_live_status());
        let attribute = description.and_then(|d| d.attribute_name());
        match status {
            Some(TimeToLiveStatus::Enabled) | Some(TimeToLiveStatus::Enabling) => {
                return match attribute {
                    Some(TTL_ATTRIBUTE) | None => Ok(()),
                    Some(other) => Err(StoreError::other(format!(
                        "DynamoDB table {}: TTL is enabled on attribute {other:?}, but cronslot's effect ledger expires items through {TTL_ATTRIBUTE:?}; use a table of cronslot's own",
                        self.table
                    ))),
                };
            }
            Some(TimeToLiveStatus::Disabling) => {
                return Err(StoreError::unavailable(format!(
                    "DynamoDB table {}: TTL is being disabled; DynamoDB allows enabling it again only when that finishes (up to an hour)",
                    self.table
                )));
            }
            _ => {}
        }
        let spec = TimeToLiveSpecification::builder()
            .enabled(true)
            .attribute_name(TTL_ATTRIBUTE)
            .build()
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let what = self.what("enabling TTL");
        // Repeating it is harmless: a repeat that finds TTL enabled by the
        // first attempt (or by a concurrent setup) is success.
        let enabled = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .update_time_to_live()
                .table_name(&self.table)
                .time_to_live_specification(spec.clone())
                .send()
        })
        .await;
        match enabled {
            Ok(_) => Ok(()),
            Err(CallError::Service { err, .. })
                if err.code() == Some("ValidationException")
                    && err.message().is_some_and(|m| m.contains("already enabled")) =>
            {
                Ok(())
            }
            Err(e) => Err(store_error(e)),
        }
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
        let item = state_item(job, version, &text, Timestamp::now().to_string());
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

    async fn read_effect_raw(&self, key: &str) -> Result<Option<StoredEffect>, StoreError> {
        let pk = self.effect_pk_checked(key)?;
        let what = self.what(&format!("reading effect {key:?}"));
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key_of(pk.clone())))
                .consistent_read(true)
                .send()
        })
        .await
        .map_err(store_error)?;
        match out.item() {
            Some(item) if !item.is_empty() => Ok(Some(read_effect_item(&self.table, key, item)?)),
            _ => Ok(None),
        }
    }

    fn effect_pk_checked(&self, key: &str) -> Result<String, StoreError> {
        let pk = effect_pk(key);
        if pk.len() > MAX_PARTITION_KEY_BYTES {
            return Err(StoreError::other(format!(
                "DynamoDB table {}: effect key {key:?} is too long ({} bytes with its prefix; DynamoDB allows {MAX_PARTITION_KEY_BYTES})",
                self.table,
                pk.len()
            )));
        }
        Ok(pk)
    }

    /// The effect ledger's read-decide-write: `decide` sees the current
    /// entry and says what to answer and what to store; the store happens
    /// only if the entry is still the one decided on.
    async fn ledger_update<D: Clone>(
        &self,
        key: &str,
        doing: &str,
        decide: impl Fn(Option<&EffectRecord>) -> (D, Option<EffectRecord>),
    ) -> Result<D, StoreError> {
        self.effect_pk_checked(key)?;
        let what = self.what(&format!("{doing} effect {key:?}"));
        let mut current = self.read_effect_raw(key).await?;
        // Writes we sent that may have landed (the answer was lost, or a
        // 5xx was retried); a lost one may even land after we read back.
        // An entry that is exactly one of them is ours: answer what we
        // decided then.
        let mut in_doubt: Vec<(u64, String, D)> = Vec::new();
        for _ in 0..MAX_LEDGER_ATTEMPTS {
            if let Some(cur) = &current {
                if let Some((_, _, decision)) = in_doubt
                    .iter()
                    .find(|(rev, text, _)| cur.rev == *rev && cur.text == *text)
                {
                    return Ok(decision.clone());
                }
            }
            let (decision, write) = decide(current.as_ref().map(|c| &c.record));
            let Some(record) = write else {
                return Ok(decision);
            };
            let text = serde_json::to_string(&record)
                .map_err(|e| StoreError::other(format!("{what}: encoding the record: {e}")))?;
            // DynamoDB refuses placeholders the expression does not use,
            // and an empty value map.
            let (rev, condition, names, values) = match &current {
                None => (
                    1,
                    format!("attribute_not_exists(#{PK})"),
                    HashMap::from([(format!("#{PK}"), PK.to_string())]),
                    None,
                ),
                Some(c) => (
                    c.rev.saturating_add(1),
                    format!("#{REV} = :rev"),
                    HashMap::from([(format!("#{REV}"), REV.to_string())]),
                    Some(HashMap::from([(
                        ":rev".to_string(),
                        AttributeValue::N(c.rev.to_string()),
                    )])),
                ),
            };
            let item = effect_item(&record, &text, rev, self.effect_retention);
            let sent = (rev, text, decision.clone());
            let result = call(self.budget(), &what, Kind::Write, no_more, || {
                self.conditional_put(&item, &condition, &names, &values)
                    .send()
            })
            .await;
            current = match result {
                Ok(_) => return Ok(decision),
                Err(CallError::Service {
                    err: PutItemError::ConditionalCheckFailedException(e),
                    maybe_applied,
                    ..
                }) => {
                    if maybe_applied {
                        in_doubt.push(sent);
                    }
                    match e.item().filter(|i| !i.is_empty()) {
                        Some(item) => Some(read_effect_item(&self.table, key, item)?),
                        None => None,
                    }
                }
                // The write may have landed: read back and judge again
                // (the loop recognises our own record).
                Err(CallError::Store(e)) if e.kind == StoreErrorKind::Ambiguous => {
                    in_doubt.push(sent);
                    self.read_effect_raw(key).await.map_err(|read| {
                        StoreError::new(
                            StoreErrorKind::Ambiguous,
                            format!(
                                "{}; reading it back failed too: {}",
                                e.message, read.message
                            ),
                        )
                    })?
                }
                Err(e) => return Err(store_error(e)),
            };
        }
        Err(StoreError::unavailable(format!(
            "{what}: the entry changed under {MAX_LEDGER_ATTEMPTS} writes in a row; too many workers on one effect"
        )))
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

    /// Every job with a state item, sorted: a consistent `Scan` of the
    /// job items' keys, page by page. It reads the whole table (effects
    /// included), which suits the CLI's `status`, not a hot path.
    async fn jobs(&self) -> Result<Vec<String>, StoreError> {
        let what = self.what("listing jobs");
        let mut jobs = Vec::new();
        let mut start: Option<Item> = None;
        loop {
            let out = call(self.budget(), &what, Kind::Read, no_more, || {
                self.client
                    .scan()
                    .table_name(&self.table)
                    .consistent_read(true)
                    .projection_expression(format!("#{PK}"))
                    .filter_expression(format!("begins_with(#{PK}, :prefix)"))
                    .expression_attribute_names(format!("#{PK}"), PK)
                    .expression_attribute_values(
                        ":prefix",
                        AttributeValue::S(JOB_PREFIX.to_string()),
                    )
                    .set_exclusive_start_key(start.clone())
                    .send()
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
        jobs.sort();
        jobs.dedup();
        Ok(jobs)
    }
}

impl EffectLedger for DynamoStore {
    async fn begin_effect(
        &self,
        key: &str,
        owner: &str,
        fence: u64,
        now: Timestamp,
        hold: Duration,
    ) -> Result<EffectBegin, StoreError> {
        self.ledger_update(key, "beginning", |current| {
            decide_begin(current, key, owner, fence, now, hold)
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
        self.ledger_update(key, "finishing", |current| {
            decide_finish(current, fence, result, now)
        })
        .await
    }

    async fn read_effect(&self, key: &str) -> Result<Option<EffectRecord>, StoreError> {
        Ok(self.read_effect_raw(key).await?.map(|e| e.record))
    }
}
