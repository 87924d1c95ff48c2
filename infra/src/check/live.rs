//! `check --live aws`: the comparison `check` makes on a template, made on
//! the EventBridge Scheduler schedules deployed in a group (listed, then
//! read one by one). Each becomes the same [`Entry`] a template's schedule
//! does, without a line (0), so the findings, the diff and the exit codes
//! are `check`'s own.

use crate::cli::ApiPlatform;
use crate::commands::check::CheckArgs;
use crate::exit::Failure;
use crate::manifest::read_manifest;
use crate::parse::parse_instant;
use crate::sync::scheduler::{self, DEFAULT_GROUP, Deployed, valid_name};

use super::cfn::{Entry, Via};
use super::fires::Span;
use super::input::{Identity, identify};

/// A deployed schedule as `check` reads a template's.
fn entry(d: &Deployed) -> Entry {
    let (identity, input_problem) = match &d.input {
        None => (
            Identity::Unknown("no Input (the function would receive {})".into()),
            None,
        ),
        Some(text) => identify(text, true),
    };
    let flexible = d.flexible_mode().map(|mode| match &d.flexible {
        Some((_, Some(minutes))) => format!("{mode} (up to {minutes} minutes late)"),
        _ => mode.to_string(),
    });
    Entry {
        line: 0,
        name: d.name.clone(),
        via: Via::Scheduler,
        expression: d
            .expression
            .clone()
            .ok_or_else(|| "it has no ScheduleExpression".to_string()),
        timezone: d.timezone.clone().map(|tz| (tz, 0)),
        flexible,
        disabled: d.disabled(),
        identity,
        input_problem,
        max_event_age: d
            .max_event_age
            .map(|age| (u64::try_from(age).unwrap_or(0), 0)),
        dead_letter: d.dead_letter_arn.is_some(),
    }
}

pub fn check(args: &CheckArgs, platform: ApiPlatform) -> Result<(), Failure> {
    let ApiPlatform::Aws = platform;
    let group = args.group.as_deref().unwrap_or(DEFAULT_GROUP);
    let prefix = args.prefix.as_deref().unwrap_or("");
    if !valid_name(group) {
        return Err(Failure::bad_input(format!(
            "error: --group {group:?}: a schedule group name is 1 to 64 of 0-9 A-Z a-z - _ ."
        )));
    }
    let path = args.manifest.path();
    let (_, manifest) = read_manifest(&path)?;
    let after = parse_instant("--after", args.after.as_deref())?;
    let span = Span::year_after(after);
    let rt = scheduler::runtime()?;
    let (exists, deployed) = rt.block_on(async {
        let client =
            scheduler::client(args.region.as_deref(), args.endpoint_url.as_deref()).await?;
        let exists = scheduler::group_exists(&client, group).await?;
        let deployed = if exists {
            scheduler::read_group(&client, group, prefix).await?
        } else {
            Vec::new()
        };
        Ok::<_, Failure>((exists, deployed))
    })?;
    let file = if prefix.is_empty() {
        format!("schedule group {group}")
    } else {
        format!("schedule group {group} (prefix {prefix:?})")
    };
    let entries: Vec<Entry> = deployed.iter().map(entry).collect();
    let mut report = super::aws::check(&file, &entries, &manifest, span)?;
    if !exists {
        report.note(
            None,
            format!("the schedule group {group} does not exist (`cronslot sync aws` creates it)"),
        );
    }
    super::conclude(&file, &path, &report, span, args.format)
}
