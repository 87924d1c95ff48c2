//! Comparing a template's schedules with the manifest by the instants they
//! fire at, each read in its platform's dialect: what `cronslot check`
//! reports (the command is `commands/check.rs`).
//!
//! The diff goes to stdout (one finding per line, `FILE:LINE: ...`, with
//! indented details), or with `--format json` as one document
//! ([`CheckDoc`]); exit 0 when consistent, 1 with differences (the
//! document is printed then too), 2 when the template or the manifest
//! cannot be read.

pub mod cfn;
pub mod fires;
mod input;
pub mod kubernetes;
pub mod live;
pub mod wrangler;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use cronslot_core::manifest::{JobSpec, Manifest, format_duration};
use cronslot_core::schedule::{Schedule, Zone};
use cronslot_core::translate::Platform;
use cronslot_core::{CronExpr, Dialect};
use serde::Serialize;

use crate::cli::Format;
use crate::exit::Failure;
use crate::format::{Ts, to_json, utc};
use crate::render::plan::{self, CLOUDFLARE_TICK, EVENTBRIDGE_TICK, MAX_EVENT_AGE, Plan};
use crate::render::wrangler::{DO_BINDING, DO_CLASS, HASH_VAR};

use cfn::{Entry, Via};
use fires::{Span, compare, is_every_minute, platform_schedule, posix_reading, same};
use input::Identity;

/// One difference (or note), at a line of the template when it has one.
#[derive(Debug)]
struct Finding {
    line: Option<usize>,
    message: String,
    details: Vec<String>,
}

#[derive(Debug, Default)]
pub struct Report {
    problems: Vec<Finding>,
    notes: Vec<Finding>,
    /// Schedules (or crons) read from the template.
    schedules: usize,
}

impl Report {
    fn problem(&mut self, line: Option<usize>, message: impl Into<String>, details: Vec<String>) {
        self.problems.push(Finding {
            line,
            message: message.into(),
            details,
        });
    }

    fn note(&mut self, line: Option<usize>, message: impl Into<String>) {
        self.notes.push(Finding {
            line,
            message: message.into(),
            details: Vec::new(),
        });
    }
}

pub fn bad_template(file: &str, line: Option<usize>, message: &str) -> Failure {
    match line.filter(|l| *l > 0) {
        Some(line) => Failure::bad_input(format!("error: {file}:{line}: {message}")),
        None => Failure::bad_input(format!("error: {file}: {message}")),
    }
}

/// A wrangler file, or a CloudFormation/SAM template.
pub fn is_wrangler(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

/// Prints the report (as text or as a [`CheckDoc`]); exit 1 when it found
/// differences.
pub fn conclude(
    file: &str,
    manifest: &Path,
    report: &Report,
    span: Span,
    format: Format,
) -> Result<(), Failure> {
    match format {
        Format::Text => print_report(file, &manifest.display().to_string(), report, span),
        Format::Json => println!("{}", to_json(&document(file, manifest, report, span))?),
    }
    if report.problems.is_empty() {
        Ok(())
    } else {
        let n = report.problems.len();
        Err(Failure {
            code: Failure::PROBLEM,
            message: format!(
                "check: {file} differs from {}: {n} difference{}",
                manifest.display(),
                if n == 1 { "" } else { "s" }
            ),
        })
    }
}

/// `cronslot check --format json`: what was compared, the verdict, every
/// difference and note.
#[derive(Serialize)]
struct CheckDoc {
    /// The template's path, or `schedule group G` (with `(prefix "P")`)
    /// for `--live`: the name the text output gives every finding.
    checked: String,
    /// The manifest's path.
    manifest: String,
    /// True when there is no difference (exit 0).
    consistent: bool,
    /// Schedules (or crons) read from the template or the group.
    schedules: usize,
    /// The window the fire times were compared over.
    from: Ts,
    until: Ts,
    /// Each difference (exit 1 when any).
    differences: Vec<FindingDoc>,
    /// Each note (no effect on the exit code).
    notes: Vec<FindingDoc>,
}

/// One finding in a [`CheckDoc`].
#[derive(Serialize)]
struct FindingDoc {
    /// The template's line; null when the finding has none (and always
    /// for `--live`).
    line: Option<usize>,
    message: String,
    /// The indented lines under the finding in the text output.
    details: Vec<String>,
}

fn document(file: &str, manifest: &Path, report: &Report, span: Span) -> CheckDoc {
    let finding = |f: &Finding| FindingDoc {
        line: f.line.filter(|l| *l > 0),
        message: f.message.clone(),
        details: f.details.clone(),
    };
    CheckDoc {
        checked: file.to_string(),
        manifest: manifest.display().to_string(),
        consistent: report.problems.is_empty(),
        schedules: report.schedules,
        from: Ts(span.from),
        until: Ts(span.until),
        differences: report.problems.iter().map(finding).collect(),
        notes: report.notes.iter().map(finding).collect(),
    }
}

fn print_report(file: &str, manifest: &str, report: &Report, span: Span) {
    let mut out = String::new();
    let n = report.problems.len();
    let window = format!("fire times from {} to {}", utc(span.from), utc(span.until));
    if n == 0 {
        out.push_str(&format!(
            "{file} matches {manifest}: {} schedule{} compared by {window}\n",
            report.schedules,
            if report.schedules == 1 { "" } else { "s" }
        ));
    } else {
        out.push_str(&format!(
            "{file} differs from {manifest}: {n} difference{} ({window})\n",
            if n == 1 { "" } else { "s" }
        ));
    }
    let place = |line: Option<usize>| match line.filter(|l| *l > 0) {
        Some(l) => format!("{file}:{l}"),
        None => file.to_string(),
    };
    for f in &report.problems {
        out.push_str(&format!("{}: {}\n", place(f.line), f.message));
        for d in &f.details {
            out.push_str(&format!("    {d}\n"));
        }
    }
    for f in &report.notes {
        out.push_str(&format!("{}: note: {}\n", place(f.line), f.message));
    }
    print!("{out}");
}

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

pub fn aws(
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
                "missing: the tick ({EVENTBRIDGE_TICK} with input {{\"cronslot\":{{\"tick\":true,…}}}}) that runs the tick-mode jobs {}",
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

pub fn cloudflare(
    file: &str,
    w: &wrangler::Wrangler,
    manifest: &Manifest,
    manifest_text: &str,
    span: Span,
    limit: u32,
) -> Result<Report, Failure> {
    let mut report = Report {
        schedules: w.crons.len(),
        ..Report::default()
    };
    if !w.binding {
        report.problem(
            None,
            format!(
                "no Durable Object binding {DO_BINDING} → {DO_CLASS} ([[durable_objects.bindings]]): the Worker cannot reach its jobs' state"
            ),
            Vec::new(),
        );
    }
    match w.migration {
        None => report.problem(
            None,
            format!("no [[migrations]] entry creates {DO_CLASS} (new_sqlite_classes = [\"{DO_CLASS}\"])"),
            Vec::new(),
        ),
        Some(wrangler::Migration::KeyValue) => report.problem(
            None,
            format!("{DO_CLASS} is created with new_classes (key-value storage); the adapter needs new_sqlite_classes"),
            Vec::new(),
        ),
        Some(wrangler::Migration::Sqlite) => {}
    }
    let hash = plan::manifest_hash(manifest_text);
    match &w.manifest_hash {
        Some(h) if *h != hash => report.note(
            None,
            format!(
                "{HASH_VAR} is {h}, but this manifest's hash is {hash}: the file was rendered from another version of the manifest (its schedules are compared all the same)"
            ),
        ),
        Some(_) => {}
        None => report.note(
            None,
            format!("no [vars] {HASH_VAR}: which manifest the file was rendered from is unknown"),
        ),
    }
    if w.crons.len() > limit as usize {
        report.problem(
            Some(w.crons_line),
            format!(
                "{} crons exceed the cron trigger limit of {limit} (--cron-limit; 5 on the Free plan, 250 on Paid): the deployment would fail",
                w.crons.len()
            ),
            Vec::new(),
        );
    }

    let mut parsed: Vec<(&str, usize, Schedule)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut matched: BTreeSet<&str> = BTreeSet::new();
    for (cron, line) in &w.crons {
        if !seen.insert(cron.trim()) {
            report.note(Some(*line), format!("cron {cron:?} is listed twice"));
            continue;
        }
        let expr = match CronExpr::parse_dialect(cron, Dialect::Cloudflare) {
            Ok(expr) => expr,
            Err(err) => {
                // `30 6 * * 0`: a crontab's Sunday = 0, which Cloudflare
                // refuses; if that reading is a job's schedule, it is drift.
                let job = posix_reading(cron, Dialect::Cloudflare).and_then(|p| {
                    let s = Schedule::utc(p);
                    manifest.jobs.iter().find(|j| same(&s, &j.schedule, span))
                });
                let Some(job) = job else {
                    return Err(bad_template(
                        file,
                        Some(*line),
                        &format!("invalid Cloudflare cron {cron:?}: {err}"),
                    ));
                };
                report.problem(
                    Some(*line),
                    format!(
                        "cron {cron:?} (job {:?}): weekday numbers: it is the job's schedule with POSIX weekday numbers (Sunday = 0), which Cloudflare refuses: {err}",
                        job.name.as_str()
                    ),
                    vec![format!("expected: {}", cloudflare_expected(job))],
                );
                matched.insert(job.name.as_str());
                continue;
            }
        };
        parsed.push((cron.as_str(), *line, platform_schedule(expr, Zone::utc())));
    }

    let mut tick = false;
    let mut unmatched: Vec<&(&str, usize, Schedule)> = Vec::new();
    for entry in &parsed {
        let (_, _, schedule) = entry;
        if is_every_minute(schedule, span) {
            tick = true;
            continue;
        }
        let jobs: Vec<&str> = manifest
            .jobs
            .iter()
            .filter(|j| same(schedule, &j.schedule, span))
            .map(|j| j.name.as_str())
            .collect();
        if jobs.is_empty() {
            unmatched.push(entry);
        }
        matched.extend(jobs);
    }
    if !tick {
        report.problem(
            Some(w.crons_line),
            format!(
                "missing: the tick {CLOUDFLARE_TICK:?}: it plans every job and serves retries; without it tick-mode jobs never run"
            ),
            Vec::new(),
        );
    }
    let expected = plan::cloudflare_crons(manifest, limit);
    let mut missing: Vec<(&JobSpec, &str)> = Vec::new();
    for (cron, jobs) in expected.crons.iter().skip(1) {
        for job in jobs {
            if !matched.contains(job.as_str()) {
                if let Some(spec) = manifest.job(job) {
                    missing.push((spec, cron.as_str()));
                }
            }
        }
    }
    for (cron, line, schedule) in unmatched {
        if let Some(spec) = explain_cloudflare(&mut report, manifest, cron, *line, schedule, span) {
            missing.retain(|(m, _)| m.name != spec.name);
            continue;
        }
        if let [(spec, expected_cron)] = missing.as_slice() {
            let mut details = compare(schedule, &spec.schedule, span).describe(&Zone::utc());
            details.push(format!("expected: {expected_cron:?}"));
            report.problem(
                Some(*line),
                format!(
                    "cron {cron:?} (job {:?}?): different: it fires at other instants than {:?} in {}",
                    spec.name.as_str(),
                    spec.schedule_text,
                    spec.timezone
                ),
                details,
            );
            missing.clear();
            continue;
        }
        let first: Vec<String> = schedule
            .iter_after(span.from)
            .take(3)
            .map(|o| utc(o.instant))
            .collect();
        report.problem(
            Some(*line),
            format!("cron {cron:?}: extra: it matches no job of the manifest"),
            vec![format!("it fires at {}, …", first.join(", "))],
        );
    }
    for (spec, cron) in missing {
        report.problem(
            Some(w.crons_line),
            format!(
                "job {:?}: missing: its cron {cron:?} ({:?}, dedicated); the tick still plans it, but the Worker is not woken for its slots by a trigger of its own",
                spec.name.as_str(),
                spec.schedule_text
            ),
            Vec::new(),
        );
    }
    for note in expected.notes {
        report.note(None, note);
    }
    Ok(report)
}

/// What a job should have in the cron list.
fn cloudflare_expected(spec: &JobSpec) -> String {
    match plan::plan(spec, Platform::Cloudflare) {
        Plan::Dedicated { expression, .. } => format!("{expression:?}"),
        Plan::Tick { .. } => match cronslot_core::translate::translate(&spec.schedule, Platform::Cloudflare) {
            Ok(t) => format!("{:?} (or no cron: the job is in tick mode)", t.expression),
            Err(_) => "no cron of its own (it has no exact Cloudflare translation, so it runs on the tick)".to_string(),
        },
    }
}

/// A cron that matches no job: is it a job's schedule with POSIX weekday
/// numbers, or in the job's zone instead of UTC? Returns the job it
/// explains.
fn explain_cloudflare<'m>(
    report: &mut Report,
    manifest: &'m Manifest,
    cron: &str,
    line: usize,
    schedule: &Schedule,
    span: Span,
) -> Option<&'m JobSpec> {
    let posix = posix_reading(cron, Dialect::Cloudflare);
    let utc_zone = Zone::utc();
    for spec in &manifest.jobs {
        let job_zone = spec.schedule.zone();
        let mut details = compare(schedule, &spec.schedule, span).describe(&utc_zone);
        details.push(format!("expected: {}", cloudflare_expected(spec)));
        let posix_same = |z: &Zone| {
            posix.as_ref().is_some_and(|p| {
                same(
                    &Schedule::new(p.clone(), z.clone(), spec.schedule.policy()),
                    &spec.schedule,
                    span,
                )
            })
        };
        if posix_same(&utc_zone) {
            report.problem(
                Some(line),
                format!(
                    "cron {cron:?} (job {:?}): weekday numbers: it means the job's days only if weekdays count from Sunday = 0 (POSIX cron); Cloudflare counts Sunday = 1, so it fires a day early",
                    spec.name.as_str()
                ),
                details,
            );
            return Some(spec);
        }
        if !job_zone.is_utc() {
            let local = Schedule::new(
                schedule.cron().clone(),
                job_zone.clone(),
                spec.schedule.policy(),
            );
            let zone_dropped = same(&local, &spec.schedule, span);
            if zone_dropped || posix_same(job_zone) {
                report.problem(
                    Some(line),
                    format!(
                        "cron {cron:?} (job {:?}): wrong zone: it is the job's {} time{}, but Cloudflare runs crons in UTC",
                        spec.name.as_str(),
                        spec.timezone,
                        if zone_dropped {
                            ""
                        } else {
                            " with POSIX weekday numbers (Sunday = 0; Cloudflare counts Sunday = 1)"
                        }
                    ),
                    details,
                );
                return Some(spec);
            }
        }
    }
    None
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
