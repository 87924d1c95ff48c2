//! The AWS check: a SAM/CloudFormation template's EventBridge schedules
//! (read by [`super::cfn`]), or with `--live aws` a schedule group's (read
//! by [`super::live`]), compared with the manifest by fire times in
//! EventBridge's dialect: each job's dedicated schedule, the tick, retry
//! policies that outlive the next slot, zones and POSIX weekday numbers.

use std::collections::BTreeMap;

use cronslot_core::manifest::{JobSpec, Manifest, format_duration};
use cronslot_core::schedule::{Schedule, Zone};
use cronslot_core::translate::Platform;
use cronslot_core::{CronExpr, Dialect};

use super::cfn::{Entry, Via};
use super::fires::{Span, compare, is_every_minute, platform_schedule, posix_reading, same};
use super::input::Identity;
use super::{Report, bad_template};
use crate::exit::Failure;
use crate::render::plan::{self, EVENTBRIDGE_TICK, MAX_EVENT_AGE, Plan};

fn expected_text(plan: &Plan) -> String {
    match plan {
        Plan::Dedicated {
            expression,
            timezone,
        } => format!("{expression} in {timezone}"),
        Plan::Tick { .. } => format!("no schedule of its own: the tick ({EVENTBRIDGE_TICK})"),
    }
}

/// Seconds of `rate(n unit)`.
fn parse_rate(text: &str) -> Option<u64> {
    let inner = text.trim().strip_prefix("rate(")?.strip_suffix(')')?;
    let mut parts = inner.split_whitespace();
    let n: u64 = parts.next()?.parse().ok()?;
    let unit = parts.next()?;
    if parts.next().is_some() || n == 0 {
        return None;
    }
    let seconds = match (unit, n) {
        ("minute", 1) | ("minutes", 2..) => 60,
        ("hour", 1) | ("hours", 2..) => 3600,
        ("day", 1) | ("days", 2..) => 86_400,
        _ => return None,
    };
    Some(n * seconds)
}

/// How a template's schedule fires.
enum Fires {
    Cron(Box<Schedule>),
    /// `rate(...)`: every so many seconds from the schedule's creation.
    Rate(u64),
}

/// Reads an EventBridge expression; a malformed one is bad input.
fn eventbridge_fires(
    file: &str,
    e: &Entry,
    expression: &str,
    zone: &Zone,
) -> Result<Option<Fires>, Failure> {
    let trimmed = expression.trim();
    if trimmed.starts_with("rate(") {
        return parse_rate(trimmed).map(|s| Some(Fires::Rate(s))).ok_or_else(|| {
            bad_template(
                file,
                Some(e.line),
                &format!(
                    "{}: {trimmed:?} is not a rate expression (write rate(1 minute), rate(5 minutes), rate(2 hours)…)",
                    e.name
                ),
            )
        });
    }
    if trimmed.starts_with("at(") {
        return Ok(None);
    }
    let cron = CronExpr::parse_dialect(trimmed, Dialect::EventBridge).map_err(|err| {
        bad_template(
            file,
            Some(e.line),
            &format!(
                "{}: invalid EventBridge expression {trimmed:?}: {err}",
                e.name
            ),
        )
    })?;
    Ok(Some(Fires::Cron(Box::new(platform_schedule(
        cron,
        zone.clone(),
    )))))
}

/// Compares a template's (or a schedule group's) EventBridge schedules with
/// the manifest: each job's own schedule, the tick, and what matches no job.
pub fn check(
    file: &str,
    entries: &[Entry],
    manifest: &Manifest,
    span: Span,
) -> Result<Report, Failure> {
    let mut report = Report::default();
    let mut by_job: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    let mut ticks: Vec<&Entry> = Vec::new();
    for e in entries {
        if let Some(problem) = &e.input_problem {
            report.problem(Some(e.line), format!("{}: {problem}", e.name), Vec::new());
        }
        match &e.identity {
            Identity::Job(job) => by_job.entry(job.clone()).or_default().push(e),
            Identity::Tick => ticks.push(e),
            Identity::Unknown(why) => report.note(
                Some(e.line),
                format!("{}: not a cronslot schedule ({why}); not compared", e.name),
            ),
        }
    }
    report.schedules = entries
        .iter()
        .filter(|e| !matches!(e.identity, Identity::Unknown(_)))
        .count();

    // Jobs the tick has to serve: tick-mode ones without an exact schedule
    // of their own.
    let mut needs_tick: Vec<&str> = Vec::new();
    for spec in &manifest.jobs {
        let name = spec.name.as_str();
        let p = plan::plan(spec, Platform::EventBridge);
        let found = by_job.remove(name).unwrap_or_default();
        if found.is_empty() {
            match &p {
                Plan::Dedicated { .. } => report.problem(
                    None,
                    format!(
                        "job {name:?}: missing: no schedule triggers it (expected {})",
                        expected_text(&p)
                    ),
                    Vec::new(),
                ),
                Plan::Tick { .. } => needs_tick.push(name),
            }
            continue;
        }
        if found.len() > 1 {
            let lines: Vec<String> = found.iter().map(|e| e.line.to_string()).collect();
            report.problem(
                Some(found[1].line),
                format!(
                    "job {name:?}: {} schedules trigger it (lines {}): each slot is triggered {} times",
                    found.len(),
                    lines.join(", "),
                    found.len()
                ),
                Vec::new(),
            );
        }
        let mut exact = false;
        for e in &found {
            exact |= job_entry(file, &mut report, spec, &p, e, span)?;
        }
        if !exact && !p.is_dedicated() {
            needs_tick.push(name);
        }
    }
    // Dynamic jobs' schedules run from the tick alone.
    needs_tick.extend(manifest.templates.iter().map(|t| t.name.as_str()));
    for (job, found) in &by_job {
        for e in found {
            report.problem(
                Some(e.line),
                format!(
                    "{}: extra: it triggers job {job:?}, which the manifest does not have (the function refuses such events as cronslot.InvalidEvent)",
                    e.name
                ),
                Vec::new(),
            );
        }
    }
    if ticks.is_empty() && !needs_tick.is_empty() {
        report.problem(
            None,
            format!(
                "missing: the tick ({EVENTBRIDGE_TICK} with input {{\"cronslot\":{{\"tick\":true,…}}}}) that runs the tick-mode and dynamic jobs {}",
                quoted(&needs_tick)
            ),
            Vec::new(),
        );
    }
    if ticks.len() > 1 {
        let lines: Vec<String> = ticks.iter().map(|e| e.line.to_string()).collect();
        report.note(
            Some(ticks[1].line),
            format!(
                "{} ticks (lines {}): one is enough",
                ticks.len(),
                lines.join(", ")
            ),
        );
    }
    if !ticks.is_empty() && needs_tick.is_empty() {
        report.note(
            Some(ticks[0].line),
            format!(
                "{}: a tick, but no job runs on it (it costs an invocation a minute)",
                ticks[0].name
            ),
        );
    }
    for e in &ticks {
        if e.disabled {
            report.problem(
                Some(e.line),
                format!("{}: the tick is disabled: tick-mode jobs never run", e.name),
                Vec::new(),
            );
        }
        let Ok(expression) = &e.expression else {
            if let Err(why) = &e.expression {
                report.problem(
                    Some(e.line),
                    format!("{}: the tick's expression cannot be read: {why}", e.name),
                    Vec::new(),
                );
            }
            continue;
        };
        let zone = entry_zone(file, e)?;
        let ok = match eventbridge_fires(file, e, expression, &zone)? {
            Some(Fires::Rate(60)) => true,
            Some(Fires::Cron(s)) => is_every_minute(&s, span),
            _ => false,
        };
        if !ok {
            report.problem(
                Some(e.line),
                format!(
                    "{}: the tick is {expression:?}, not every minute: tick-mode jobs' slots between its firings run late or are missed (expected {EVENTBRIDGE_TICK})",
                    e.name
                ),
                Vec::new(),
            );
        }
    }
    Ok(report)
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn entry_zone(file: &str, e: &Entry) -> Result<Zone, Failure> {
    match &e.timezone {
        None => Ok(Zone::utc()),
        Some((name, line)) => Zone::get(name).map_err(|err| {
            bad_template(
                file,
                Some(*line),
                &format!("{}: ScheduleExpressionTimezone: {err}", e.name),
            )
        }),
    }
}

/// Checks one schedule of a job; true when it fires exactly at the job's
/// slots.
fn job_entry(
    file: &str,
    report: &mut Report,
    spec: &JobSpec,
    plan: &Plan,
    e: &Entry,
    span: Span,
) -> Result<bool, Failure> {
    let name = spec.name.as_str();
    let what = format!("{} (job {name:?})", e.name);
    if e.disabled {
        report.problem(
            Some(e.line),
            format!("{what}: disabled: the job's slots are never triggered"),
            Vec::new(),
        );
    }
    if let Some(flexible) = &e.flexible {
        report.problem(
            Some(e.line),
            format!(
                "{what}: FlexibleTimeWindow is {flexible}: slots fire late; cronslot needs Mode OFF"
            ),
            Vec::new(),
        );
    }
    let expression = match &e.expression {
        Ok(x) => x.trim().to_string(),
        Err(why) => {
            report.problem(
                Some(e.line),
                format!("{what}: its expression cannot be read: {why}"),
                Vec::new(),
            );
            return Ok(false);
        }
    };
    let zone = entry_zone(file, e)?;
    let zone_text = match &e.timezone {
        Some((z, _)) => z.clone(),
        None if e.via == Via::Rule => "UTC (rules run in UTC)".to_string(),
        None => "UTC (no ScheduleExpressionTimezone)".to_string(),
    };
    let expected = format!("expected: {}", expected_text(plan));
    let mut exact = false;
    let fires = match eventbridge_fires(file, e, &expression, &zone) {
        Ok(fires) => fires,
        Err(failure) => {
            // `cron(0 9 ? * 0 *)`: a crontab's Sunday = 0, which EventBridge
            // refuses; if that reading is the job's schedule, it is drift.
            let posix = posix_reading(&expression, Dialect::EventBridge);
            let matches = posix.is_some_and(|p| {
                [&zone, spec.schedule.zone()].into_iter().any(|z| {
                    same(
                        &platform_schedule(p.clone(), z.clone()),
                        &spec.schedule,
                        span,
                    )
                })
            });
            if !matches {
                return Err(failure);
            }
            report.problem(
                Some(e.line),
                format!(
                    "{what}: weekday numbers: {expression} is the job's schedule with POSIX weekday numbers (Sunday = 0), which EventBridge refuses (it counts 1-7 from Sunday)"
                ),
                vec![expected],
            );
            return Ok(false);
        }
    };
    match fires {
        None => report.problem(
            Some(e.line),
            format!("{what}: {expression:?} is a one-time schedule, not the job's"),
            vec![expected],
        ),
        Some(Fires::Rate(seconds)) => {
            if seconds == 60 && is_every_minute(&spec.schedule, span) {
                exact = true;
            } else {
                report.problem(
                    Some(e.line),
                    format!(
                        "{what}: different: {expression} fires every {} counted from when the schedule was created, not at the job's slots ({:?} in {})",
                        format_duration(std::time::Duration::from_secs(seconds)),
                        spec.schedule_text,
                        spec.timezone
                    ),
                    vec![expected],
                );
            }
        }
        Some(Fires::Cron(template)) => {
            if same(&template, &spec.schedule, span) {
                exact = true;
            } else {
                diagnose(
                    report,
                    spec,
                    plan,
                    e,
                    &what,
                    &expression,
                    &zone,
                    &zone_text,
                    &template,
                    span,
                );
            }
        }
    }
    // Deliveries must not outlive the next slot.
    if !spec.retry.past_next_slot {
        if let Some(gap) = plan::shortest_gap(&spec.schedule, span.from).map(|g| g.as_secs()) {
            let (age, line, default) = match e.max_event_age {
                Some((age, line)) => (age, line, ""),
                None => (MAX_EVENT_AGE, e.line, " (the default: no RetryPolicy)"),
            };
            if age > gap {
                report.problem(
                    Some(line),
                    format!(
                        "{what}: retries: MaximumEventAgeInSeconds {age}{default} outlives the next slot: the job's slots are {} apart at the closest, so a late delivery could run a slot after the next one began (at most {gap}; `cronslot render` writes {})",
                        format_duration(std::time::Duration::from_secs(gap)),
                        plan::scheduler_retry(spec).max_event_age
                    ),
                    Vec::new(),
                );
            }
        }
    }
    if !e.dead_letter {
        report.note(
            Some(e.line),
            format!(
                "{what}: no DeadLetterConfig: undeliverable events are dropped without a trace"
            ),
        );
    }
    Ok(exact)
}

/// Why a job's EventBridge schedule fires at other instants: a zone, POSIX
/// weekday numbers, or just a different schedule.
#[allow(clippy::too_many_arguments)]
fn diagnose(
    report: &mut Report,
    spec: &JobSpec,
    plan: &Plan,
    e: &Entry,
    what: &str,
    expression: &str,
    zone: &Zone,
    zone_text: &str,
    template: &Schedule,
    span: Span,
) {
    let job_zone = spec.schedule.zone();
    let expected = format!("expected: {}", expected_text(plan));
    let mut details = compare(template, &spec.schedule, span).describe(job_zone);
    details.push(expected);
    if let Plan::Tick { note: Some(note) } = plan {
        details.push(note.clone());
    }
    let cron = template.cron().clone();
    if zone != job_zone {
        let in_job_zone = platform_schedule(cron, job_zone.clone());
        if same(&in_job_zone, &spec.schedule, span) {
            report.problem(
                Some(e.timezone.as_ref().map_or(e.line, |t| t.1)),
                format!(
                    "{what}: wrong zone: {expression} is evaluated in {zone_text}, but the job's slots are in {}",
                    spec.timezone
                ),
                details,
            );
            return;
        }
    }
    if let Some(posix) = posix_reading(expression, Dialect::EventBridge) {
        for z in [zone, job_zone] {
            if same(
                &platform_schedule(posix.clone(), z.clone()),
                &spec.schedule,
                span,
            ) {
                report.problem(
                    Some(e.line),
                    format!(
                        "{what}: weekday numbers: {expression} means the job's days only if weekdays count from Sunday = 0 (POSIX cron); EventBridge counts Sunday = 1, so it fires a day early"
                    ),
                    details,
                );
                return;
            }
        }
    }
    report.problem(
        Some(e.line),
        format!(
            "{what}: different: {expression} in {zone_text} fires at other instants than {:?} in {}",
            spec.schedule_text, spec.timezone
        ),
        details,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("rate(1 minute)"), Some(60));
        assert_eq!(parse_rate("rate(5 minutes)"), Some(300));
        assert_eq!(parse_rate("rate(2 hours)"), Some(7200));
        assert_eq!(parse_rate("rate(1 minutes)"), None);
        assert_eq!(parse_rate("rate(0 minutes)"), None);
        assert_eq!(parse_rate("rate(1 week)"), None);
    }
}
