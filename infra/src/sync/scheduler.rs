//! EventBridge Scheduler's API as `sync aws` and `check --live aws` use it:
//! the client (the AWS adapter's configuration: the default credential
//! chain, `AWS_REGION`, `AWS_ENDPOINT_URL`), and the schedules of a group
//! read in full (list, then get each).

use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_scheduler::Client;
use aws_sdk_scheduler::error::DisplayErrorContext;
use aws_sdk_scheduler::operation::get_schedule::{GetScheduleError, GetScheduleOutput};
use aws_sdk_scheduler::operation::get_schedule_group::GetScheduleGroupError;
use aws_sdk_scheduler::types::{ActionAfterCompletion, FlexibleTimeWindowMode, ScheduleState};

use crate::exit::Failure;

/// The schedule group `sync` and `check --live` use unless told otherwise.
pub const DEFAULT_GROUP: &str = "cronslot";

/// Scheduler's limit on schedule and group names.
pub const MAX_NAME: usize = 64;

/// Whether `name` is a valid Scheduler schedule or group name (up to 64
/// of `0-9 a-z A-Z - _ .`).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// An AWS call that failed: exit 1, with the SDK's whole error chain (its
/// `Display` alone says only "service error").
pub fn aws_failure(what: &str, error: impl std::error::Error) -> Failure {
    Failure {
        code: Failure::PROBLEM,
        message: format!("error: {what}: {}", DisplayErrorContext(error)),
    }
}

/// A current-thread runtime for the command's AWS calls.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure {
            code: Failure::PROBLEM,
            message: format!("error: cannot start the async runtime: {e}"),
        })
}

/// A Scheduler client: credentials from the default chain; the region and
/// endpoint from the flags, else from the environment (`AWS_REGION`,
/// `AWS_ENDPOINT_URL`), as the DynamoDB store loads them.
pub async fn client(region: Option<&str>, endpoint: Option<&str>) -> Result<Client, Failure> {
    let mut loader = aws_config::defaults(BehaviorVersion::latest()).timeout_config(
        TimeoutConfig::builder()
            .connect_timeout(Duration::from_secs(3))
            .operation_attempt_timeout(Duration::from_secs(10))
            .build(),
    );
    if let Some(region) = region {
        loader = loader.region(aws_config::Region::new(region.to_string()));
    }
    if let Some(endpoint) = endpoint {
        loader = loader.endpoint_url(endpoint);
    }
    let config = loader.load().await;
    if config.region().is_none() {
        return Err(Failure::bad_input(
            "error: no AWS region: pass --region REGION or set AWS_REGION",
        ));
    }
    Ok(Client::new(&config))
}

/// A deployed schedule, as `GetSchedule` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployed {
    pub name: String,
    pub expression: Option<String>,
    pub timezone: Option<String>,
    /// The flexible time window's mode and its maximum minutes.
    pub flexible: Option<(String, Option<i32>)>,
    pub state: Option<String>,
    pub description: Option<String>,
    pub target_arn: Option<String>,
    pub role_arn: Option<String>,
    pub input: Option<String>,
    pub max_event_age: Option<i32>,
    pub max_attempts: Option<i32>,
    pub dead_letter_arn: Option<String>,
    pub start_date: Option<String>,
    pub end_date: Option<String>,
    /// Kept as they are by an update (sync does not manage them).
    pub kms_key_arn: Option<String>,
    pub action_after_completion: Option<ActionAfterCompletion>,
}

impl Deployed {
    fn from_output(name: &str, out: &GetScheduleOutput) -> Deployed {
        let target = out.target();
        let retry = target.and_then(|t| t.retry_policy());
        Deployed {
            name: out.name().unwrap_or(name).to_string(),
            expression: out.schedule_expression().map(str::to_string),
            timezone: out.schedule_expression_timezone().map(str::to_string),
            flexible: out
                .flexible_time_window()
                .map(|w| (w.mode().as_str().to_string(), w.maximum_window_in_minutes())),
            state: out.state().map(|s| s.as_str().to_string()),
            description: out.description().map(str::to_string),
            target_arn: target.map(|t| t.arn().to_string()),
            role_arn: target.map(|t| t.role_arn().to_string()),
            input: target.and_then(|t| t.input()).map(str::to_string),
            max_event_age: retry.and_then(|r| r.maximum_event_age_in_seconds()),
            max_attempts: retry.and_then(|r| r.maximum_retry_attempts()),
            dead_letter_arn: target
                .and_then(|t| t.dead_letter_config())
                .and_then(|d| d.arn())
                .map(str::to_string),
            start_date: out.start_date().map(ToString::to_string),
            end_date: out.end_date().map(ToString::to_string),
            kms_key_arn: out.kms_key_arn().map(str::to_string),
            action_after_completion: out.action_after_completion().cloned(),
        }
    }

    /// The zone the expression is evaluated in (Scheduler's default: UTC).
    pub fn zone(&self) -> &str {
        self.timezone.as_deref().unwrap_or("UTC")
    }

    pub fn disabled(&self) -> bool {
        self.state.as_deref() == Some(ScheduleState::Disabled.as_str())
    }

    /// The flexible window's mode when it is not OFF.
    pub fn flexible_mode(&self) -> Option<&str> {
        match &self.flexible {
            Some((mode, _)) if mode == FlexibleTimeWindowMode::Off.as_str() => None,
            Some((mode, _)) => Some(mode),
            None => Some("missing"),
        }
    }
}

/// Whether the group exists.
pub async fn group_exists(client: &Client, group: &str) -> Result<bool, Failure> {
    match client.get_schedule_group().name(group).send().await {
        Ok(_) => Ok(true),
        Err(e) => match e.as_service_error() {
            Some(GetScheduleGroupError::ResourceNotFoundException(_)) => Ok(false),
            _ => Err(aws_failure(&format!("reading schedule group {group}"), e)),
        },
    }
}

/// One schedule, or `None` when it does not exist (any more).
pub async fn get(client: &Client, group: &str, name: &str) -> Result<Option<Deployed>, Failure> {
    match client
        .get_schedule()
        .group_name(group)
        .name(name)
        .send()
        .await
    {
        Ok(out) => Ok(Some(Deployed::from_output(name, &out))),
        Err(e) => match e.as_service_error() {
            Some(GetScheduleError::ResourceNotFoundException(_)) => Ok(None),
            _ => Err(aws_failure(
                &format!("reading schedule {name} in group {group}"),
                e,
            )),
        },
    }
}

/// Every schedule of the group (which exists: see [`group_exists`]) whose
/// name starts with `prefix`, in name order.
pub async fn read_group(
    client: &Client,
    group: &str,
    prefix: &str,
) -> Result<Vec<Deployed>, Failure> {
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut request = client.list_schedules().group_name(group);
        if !prefix.is_empty() {
            request = request.name_prefix(prefix);
        }
        let page = request
            .set_next_token(token.take())
            .send()
            .await
            .map_err(|e| aws_failure(&format!("listing the schedules of group {group}"), e))?;
        for summary in page.schedules() {
            let in_group = summary.group_name().is_none_or(|g| g == group);
            if let Some(name) = summary.name().filter(|n| n.starts_with(prefix) && in_group) {
                names.push(name.to_string());
            }
        }
        match page.next_token() {
            Some(next) if !next.is_empty() => token = Some(next.to_string()),
            _ => break,
        }
    }
    names.sort();
    names.dedup();
    let mut deployed = Vec::new();
    for name in names {
        // Deleted between the list and the get: not deployed.
        if let Some(d) = get(client, group, &name).await? {
            deployed.push(d);
        }
    }
    Ok(deployed)
}
