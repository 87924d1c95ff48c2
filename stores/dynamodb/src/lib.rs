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
mod location;
mod retry;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::error::BuildError;
use aws_sdk_dynamodb::error::ProvideErrorMetadata;
use aws_sdk_dynamodb::operation::create_table::CreateTableError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, AttributeValue, BillingMode, CreateGlobalSecondaryIndexAction,
    GlobalSecondaryIndex, GlobalSecondaryIndexDescription, GlobalSecondaryIndexUpdate, IndexStatus,
    KeySchemaElement, KeyType, Projection, ProjectionType, Put,
    ReturnValuesOnConditionCheckFailure, ScalarAttributeType, TableDescription, TableStatus,
    TimeToLiveSpecification, TimeToLiveStatus, TransactWriteItem,
};
use cronslot_core::coord::decide;
use cronslot_core::coord::{
    CoordError, EffectBegin, EffectFinish, EffectLedger, EffectRecord, JobState, PutResult,
    StateStore, StoreError, StoreErrorKind, TickIndex, TickStart, Version, Versioned, decide_begin,
    decide_finish, encode_state, repair_wake,
};
use cronslot_core::manifest::JobSpec;
use cronslot_store_kit::{OpenOptions, UrlStore};
use jiff::Timestamp;

pub use fence::{FENCE_NAME, FENCE_VALUE, FenceCondition, fence_condition};
pub use items::{MARK, MARK_SORT, MAX_ITEM_BYTES, TTL_ATTRIBUTE, WAKE, WAKE_INDEX, WAKE_SHARD};
pub use location::{DynamoLocation, LocationError, parse_dynamodb_location};

use items::STATE;
use items::{
    Item, JOB_PREFIX, MAX_PARTITION_KEY_BYTES, PK, REV, RawState, StoredEffect, TICK_MARK_PK, VER,
    WAKE_SHARD_VALUE, decode_raw_state, describe_key, effect_item, effect_pk, floor_millis,
    item_size, job_pk, key_of, mark_item, read_effect_item, read_mark, read_raw_state, state_item,
};
use retry::{Budget, CallError, Kind, call};

/// How long one store operation may keep retrying by default.
pub const DEFAULT_RETRY_BUDGET: Duration = Duration::from_secs(10);

pub use cronslot_store_kit::DEFAULT_EFFECT_RETENTION;
use cronslot_store_kit::{EffectEntry, Entry, Written, settle_effect};

/// Most items of the job's own that fit in one transaction with the state
/// (DynamoDB's limit is 100 per `TransactWriteItems`).
pub const MAX_EXTRA_ITEMS: usize = 99;

/// How long [`DynamoStore::create_table`] waits for a new table to become
/// active.
const TABLE_ACTIVE_TIMEOUT: Duration = Duration::from_secs(300);

/// How long [`DynamoStore::create_table`] waits for the wake index added to
/// an existing table to become active (DynamoDB builds it from the table's
/// items: minutes for a small table, longer for a large one).
const INDEX_ACTIVE_TIMEOUT: Duration = Duration::from_secs(30 * 60);

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

    /// Creates the table if it does not exist: on-demand billing, key `pk`
    /// (string), the wake index [`WAKE_INDEX`], TTL on [`TTL_ATTRIBUTE`];
    /// waits until it is active. An existing table is fine if its key is
    /// `pk` (string); TTL is switched on if it is off, and a table made
    /// before the wake index (by an older cronslot) gets it: the index is
    /// added and waited for until it is active, so running `cronslot init`
    /// again is the whole upgrade. Point-in-time recovery and encryption
    /// settings are left to the deployment template.
    pub async fn create_table(&self) -> Result<(), StoreError> {
        let what = self.what("creating the table");
        let definitions =
            wake_index_definitions().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let pk_key = key_element(PK, KeyType::Hash)
            .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        let index = wake_index().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
        // Safe to repeat: a repeat finds the table and reports it in use.
        let created = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .create_table()
                .table_name(&self.table)
                .set_attribute_definitions(Some(definitions.clone()))
                .key_schema(pk_key.clone())
                .global_secondary_indexes(index.clone())
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
        let table = self.wait_active().await?;
        self.ensure_wake_index(&table).await?;
        self.repair_wakes().await?;
        self.enable_ttl().await
    }

    /// Waits for the table to be active and checks its key; returns its
    /// description.
    async fn wait_active(&self) -> Result<TableDescription, StoreError> {
        let started = Instant::now();
        loop {
            let table = self.describe().await?;
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
                Some(TableStatus::Active) | None => return Ok(table),
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

    async fn describe(&self) -> Result<TableDescription, StoreError> {
        let what = self.what("describing the table");
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client.describe_table().table_name(&self.table).send()
        })
        .await
        .map_err(store_error)?;
        out.table()
            .cloned()
            .ok_or_else(|| StoreError::other(format!("{what}: no description returned")))
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

    /// Gives each record written before the wake index that needs a wake
    /// (a waiting run or a live lease shows in its text) its
    /// [`decide::migrated_wake`], with the record's own conditional write:
    /// the bounded repair of docs/design.md §11, run by every `init` (so an
    /// interrupted one is finished by the next). One filtered `Scan` over
    /// the table (records with a wake are skipped), then [`repair_wake`]
    /// for each record found; one that does not decode is left as it is.
    async fn repair_wakes(&self) -> Result<(), StoreError> {
        let filter = format!(
            "attribute_not_exists(#{WAKE}) \
             AND (contains(#{STATE}, :pending) OR contains(#{STATE}, :leases))"
        );
        let values = [(":pending", "\"pending\":[{"), (":leases", "\"leases\":[{")];
        let found = self
            .scan_jobs(
                "finding records that need a wake",
                Some(ScanFilter {
                    expression: &filter,
                    names: &[(WAKE, WAKE), (STATE, STATE)],
                    values: &values,
                }),
            )
            .await?;
        for job in found {
            match repair_wake(self, &job).await {
                // Reading it reports it.
                Err(e) if e.kind == StoreErrorKind::Corrupt => {}
                other => {
                    other?;
                }
            }
        }
        Ok(())
    }

    /// Adds the wake index to a table that lacks it (made by a cronslot
    /// from before it), checks the shape of one that has it, and waits
    /// until it is active: DynamoDB refuses queries of an index that is
    /// still being built, so a tick would fail until then.
    async fn ensure_wake_index(&self, table: &TableDescription) -> Result<(), StoreError> {
        let mut table = table.clone();
        if find_wake_index(&table).is_none() {
            let what = self.what(&format!("adding the wake index {WAKE_INDEX:?}"));
            let definitions =
                wake_index_definitions().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
            let index = wake_index().map_err(|e| StoreError::other(format!("{what}: {e}")))?;
            let create = CreateGlobalSecondaryIndexAction::builder()
                .index_name(WAKE_INDEX)
                .set_key_schema(Some(index.key_schema().to_vec()))
                .set_projection(index.projection().cloned())
                .build()
                .map_err(|e| StoreError::other(format!("{what}: {e}")))?;
            let update = GlobalSecondaryIndexUpdate::builder().create(create).build();
            // Repeating it is harmless: a repeat (or a concurrent `init`)
            // is refused because the index exists, and the description
            // read next shows it.
            let added = call(self.budget(), &what, Kind::Read, no_more, || {
                self.client
                    .update_table()
                    .table_name(&self.table)
                    .set_attribute_definitions(Some(definitions.clone()))
                    .global_secondary_index_updates(update.clone())
                    .send()
            })
            .await;
            table = self.describe().await?;
            if let Err(e) = added {
                // Another `init` may have added it meanwhile.
                if find_wake_index(&table).is_none() {
                    let e = store_error(e);
                    return Err(StoreError::new(
                        e.kind,
                        format!(
                            "{}; ticks need this index: update the stack from the rendered template (it declares the index) if a stack owns the table, else run `cronslot init` with permission for dynamodb:UpdateTable",
                            e.message
                        ),
                    ));
                }
            }
            tracing::info!(
                table = %self.table,
                index = WAKE_INDEX,
                "added the wake index; waiting until DynamoDB has built it"
            );
        }
        let started = Instant::now();
        loop {
            match find_wake_index(&table) {
                None => {
                    return Err(StoreError::other(format!(
                        "DynamoDB table {}: the wake index {WAKE_INDEX:?} was added but is not described; run `cronslot init` again",
                        self.table
                    )));
                }
                Some(index) => {
                    check_wake_index(&self.table, index)?;
                    match index.index_status() {
                        Some(IndexStatus::Active) | None => return Ok(()),
                        Some(IndexStatus::Creating) | Some(IndexStatus::Updating) => {}
                        Some(other) => {
                            return Err(StoreError::other(format!(
                                "DynamoDB table {}: the wake index {WAKE_INDEX:?} is {}; cronslot's ticks need it: once it is gone, run `cronslot init` to add it again",
                                self.table,
                                other.as_str()
                            )));
                        }
                    }
                }
            }
            if started.elapsed() > INDEX_ACTIVE_TIMEOUT {
                return Err(StoreError::unavailable(format!(
                    "DynamoDB table {}: the wake index {WAKE_INDEX:?} is still being built after {INDEX_ACTIVE_TIMEOUT:?} (a large table takes longer); ticks fail until it is active: run `cronslot init` again later to wait for it",
                    self.table
                )));
            }
            tokio::time::sleep(Duration::from_secs(2)).await;
            table = self.describe().await?;
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

    /// The effect ledger's read-decide-write (the kit's loop): `decide`
    /// sees the current entry and says what to answer and what to store;
    /// the store happens only if the entry is still the one decided on.
    async fn ledger_update<D: Clone>(
        &self,
        key: &str,
        doing: &str,
        decide: impl Fn(Option<&EffectRecord>) -> (D, Option<EffectRecord>),
    ) -> Result<D, StoreError> {
        self.effect_pk_checked(key)?;
        let what = self.what(&format!("{doing} effect {key:?}"));
        let mut entry = DynamoEffect {
            store: self,
            key,
            what: &what,
        };
        settle_effect(&mut entry, decide, |attempts| {
            StoreError::unavailable(format!(
                "{what}: the entry changed under {attempts} writes in a row; too many workers on one effect"
            ))
        })
        .await
    }
}

/// One effect's item, as the kit's ledger loop reads and writes it: each
/// write a conditional `PutItem` on the item's `rev`, which hands back the
/// item that beat it.
struct DynamoEffect<'a> {
    store: &'a DynamoStore,
    key: &'a str,
    what: &'a str,
}

impl EffectEntry for DynamoEffect<'_> {
    type Rev = u64;

    async fn read(&mut self) -> Result<Option<Entry<u64>>, StoreError> {
        Ok(self.store.read_effect_raw(self.key).await?.map(|e| Entry {
            rev: e.rev,
            record: e.record,
        }))
    }

    async fn write(
        &mut self,
        current: Option<&Entry<u64>>,
        record: &EffectRecord,
    ) -> Result<(u64, Written<u64>), StoreError> {
        let what = self.what;
        let text = serde_json::to_string(record)
            .map_err(|e| StoreError::other(format!("{what}: encoding the record: {e}")))?;
        // DynamoDB refuses placeholders the expression does not use, and an
        // empty value map.
        let (rev, condition, names, values) = match current {
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
        let store = self.store;
        let item = effect_item(record, &text, rev, store.effect_retention);
        let result = call(store.budget(), what, Kind::Write, no_more, || {
            store
                .conditional_put(&item, &condition, &names, &values)
                .send()
        })
        .await;
        let written = match result {
            Ok(_) => Written::Yes,
            Err(CallError::Service {
                err: PutItemError::ConditionalCheckFailedException(e),
                maybe_applied,
                ..
            }) => {
                let current = match e.item().filter(|i| !i.is_empty()) {
                    Some(item) => Some(read_effect_item(&store.table, self.key, item)?),
                    None => None,
                };
                Written::Lost {
                    current: Some(current.map(|c| Entry {
                        rev: c.rev,
                        record: c.record,
                    })),
                    maybe_applied,
                }
            }
            // The write may have landed: the loop reads back and judges
            // again (and recognises our own record).
            Err(CallError::Store(e)) if e.kind == StoreErrorKind::Ambiguous => Written::InDoubt(e),
            Err(e) => return Err(store_error(e)),
        };
        Ok((rev, written))
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

fn key_element(name: &str, key_type: KeyType) -> Result<KeySchemaElement, BuildError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
}

fn attribute(name: &str, kind: ScalarAttributeType) -> Result<AttributeDefinition, BuildError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(kind)
        .build()
}

/// The table's key attribute and the wake index's two.
fn wake_index_definitions() -> Result<Vec<AttributeDefinition>, BuildError> {
    Ok(vec![
        attribute(PK, ScalarAttributeType::S)?,
        attribute(WAKE_SHARD, ScalarAttributeType::S)?,
        attribute(WAKE, ScalarAttributeType::N)?,
    ])
}

/// The wake index: `wk` (the one shard) and `wake` (in order), projecting
/// the table's key (the job) and the tick mark. With on-demand billing it
/// needs no capacity of its own.
fn wake_index() -> Result<GlobalSecondaryIndex, BuildError> {
    GlobalSecondaryIndex::builder()
        .index_name(WAKE_INDEX)
        .key_schema(key_element(WAKE_SHARD, KeyType::Hash)?)
        .key_schema(key_element(WAKE, KeyType::Range)?)
        .projection(
            Projection::builder()
                .projection_type(ProjectionType::Include)
                .non_key_attributes(MARK)
                .build(),
        )
        .build()
}

fn find_wake_index(table: &TableDescription) -> Option<&GlobalSecondaryIndexDescription> {
    table
        .global_secondary_indexes()
        .iter()
        .find(|i| i.index_name() == Some(WAKE_INDEX))
}

/// An index named like the wake index must be the wake index: keyed on
/// `wk` and `wake`, projecting the mark.
fn check_wake_index(
    table: &str,
    index: &GlobalSecondaryIndexDescription,
) -> Result<(), StoreError> {
    let key: Vec<(&str, &KeyType)> = index
        .key_schema()
        .iter()
        .map(|k| (k.attribute_name(), k.key_type()))
        .collect();
    let projection = index.projection();
    let projects_mark = match projection.and_then(|p| p.projection_type()) {
        Some(ProjectionType::All) => true,
        Some(ProjectionType::Include) => {
            projection.is_some_and(|p| p.non_key_attributes().iter().any(|a| a == MARK))
        }
        _ => false,
    };
    if key != [(WAKE_SHARD, &KeyType::Hash), (WAKE, &KeyType::Range)] || !projects_mark {
        return Err(StoreError::other(format!(
            "DynamoDB table {table}: has an index named {WAKE_INDEX:?} that is not cronslot's wake index (key {key:?}, projection {:?}); cronslot needs {WAKE_INDEX:?} keyed on {WAKE_SHARD:?} (S, hash) and {WAKE:?} (N, range), projecting {MARK:?}: delete that index and run `cronslot init`, or use a table of cronslot's own",
            projection
                .and_then(|p| p.projection_type())
                .map(|t| t.as_str())
        )));
    }
    Ok(())
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

/// The tick index (docs/design.md §11) in the wake index [`WAKE_INDEX`].
///
/// A job's wake travels in its state item (`wk` and `wake`, written by the
/// same conditional write as the record, absent when the record has no
/// wake), so the index is only ever behind the records, never ahead or
/// apart. The tick mark is one item (`tick#mark`) that is in the index
/// too, with the lowest sort value ([`MARK_SORT`]) and its `mark`
/// projected: one `Query` of `wk = "w" AND wake <= now` returns the mark
/// first, then the woken jobs, earliest wake first.
///
/// **Eventual consistency.** A global secondary index cannot be read
/// consistently; it trails the table by a fraction of a second. Neither
/// way it can trail loses anything:
/// - a stale (earlier) mark makes the tick's window longer: the jobs it
///   plans again were served already, and their claims find the slots
///   resolved (the compare-and-set refuses a second run);
/// - a stale wake that a later write removed wakes a job with nothing to
///   do: its claim reads the record and finds nothing;
/// - a wake that has not arrived yet stays in the index: the next tick
///   serves it.
///
/// The one stale answer that would cost something is a missing mark (the
/// first `tick_end` of a store not yet in the index): the tick would take
/// itself for the store's first and plan an empty window, skipping the
/// slots since that first mark. So when the index shows no mark,
/// `tick_start` reads the mark's item consistently (a second request, made
/// only until the store's first mark has reached the index).
///
/// **Throughput.** The index has one partition key value, so every write
/// that sets, moves or clears a wake (a claim and its completion, about
/// two per run) lands on one index partition, which DynamoDB documents at
/// about 1,000 write units a second; beyond a few hundred runs a second,
/// throttled index writes slow the table's writes (retried here like any
/// throttling). More shard values would spread them, at the price of one
/// `Query` per shard.
///
/// **Pages.** A `Query` page holds at most 1 MB; the index projects a
/// job's key and the two small index attributes, so the runtime's limit
/// (`MAX_WOKEN_PER_TICK`, 1000) fits in one page for job names of up to
/// about 1 KB. If a page ends early anyway, `tick_start` stops there: the
/// jobs left out have later wakes than those returned and stay in the
/// index, so the next tick serves them, exactly as for the jobs beyond
/// the limit.
impl TickIndex for DynamoStore {
    async fn tick_start(&self, now: Timestamp, limit: usize) -> Result<TickStart, StoreError> {
        let what = self.what("reading the tick mark and the woken jobs");
        // One more than the limit: the mark's item comes first.
        let page = i32::try_from(limit.saturating_add(1)).unwrap_or(i32::MAX);
        // Floored like the wakes: every wake at or before `now` is in,
        // plus those later within the same millisecond (woken a fraction
        // of a millisecond early, which a claim judges by its own clock).
        let until = AttributeValue::N(floor_millis(now).to_string());
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .query()
                .table_name(&self.table)
                .index_name(WAKE_INDEX)
                .key_condition_expression("#wk = :shard AND #wake <= :until")
                .expression_attribute_names("#wk", WAKE_SHARD)
                .expression_attribute_names("#wake", WAKE)
                .expression_attribute_values(
                    ":shard",
                    AttributeValue::S(WAKE_SHARD_VALUE.to_string()),
                )
                .expression_attribute_values(":until", until.clone())
                .scan_index_forward(true)
                .limit(page)
                .send()
        })
        .await
        .map_err(store_error)?;
        let mut start = TickStart {
            mark: None,
            now,
            woken: Vec::new(),
            carried: Vec::new(),
        };
        for item in out.items() {
            match item.get(PK) {
                Some(AttributeValue::S(pk)) if pk == TICK_MARK_PK => {
                    start.mark = Some(read_mark(&self.table, item)?);
                }
                Some(AttributeValue::S(pk)) => {
                    // Items of the jobs' own in this table that happen to
                    // carry `wk` and `wake` are none of the index's.
                    if let Some(job) = pk.strip_prefix(JOB_PREFIX) {
                        if start.woken.len() < limit {
                            start.woken.push(job.to_string());
                        }
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
        if start.mark.is_none() {
            start.mark = self.read_mark_consistently().await?;
        }
        Ok(start)
    }

    /// One conditional `PutItem` of the mark's item, on condition that the
    /// stored mark is earlier (or absent). A failed condition means the
    /// mark is already there or later: success. Repeating it is harmless
    /// for the same reason, so it is retried like a read.
    async fn tick_end(&self, mark: Timestamp) -> Result<(), StoreError> {
        let what = self.what("moving the tick mark");
        let item = mark_item(mark, Timestamp::now().to_string());
        let result = call(self.budget(), &what, Kind::IdempotentWrite, no_more, || {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item.clone()))
                .condition_expression("attribute_not_exists(#mark) OR #mark < :mark")
                .expression_attribute_names("#mark", MARK)
                .expression_attribute_values(
                    ":mark",
                    AttributeValue::N(mark.as_nanosecond().to_string()),
                )
                .send()
        })
        .await;
        match result {
            Ok(_)
            | Err(CallError::Service {
                err: PutItemError::ConditionalCheckFailedException(_),
                ..
            }) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }
}

impl DynamoStore {
    /// The tick mark from its item, read consistently (see [`TickIndex`]).
    async fn read_mark_consistently(&self) -> Result<Option<Timestamp>, StoreError> {
        let what = self.what("reading the tick mark");
        let out = call(self.budget(), &what, Kind::Read, no_more, || {
            self.client
                .get_item()
                .table_name(&self.table)
                .set_key(Some(key_of(TICK_MARK_PK.to_string())))
                .consistent_read(true)
                .send()
        })
        .await
        .map_err(store_error)?;
        match out.item() {
            Some(item) if !item.is_empty() => Ok(Some(read_mark(&self.table, item)?)),
            _ => Ok(None),
        }
    }
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
