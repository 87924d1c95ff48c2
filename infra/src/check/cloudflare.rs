//! The Cloudflare check: a wrangler.toml (read by [`super::wrangler`])
//! compared with the manifest: the Durable Object binding and migration the
//! Worker needs, the manifest hash, the cron trigger limit, and each cron by
//! its fire times in UTC (the tick, dedicated jobs' crons, zones and POSIX
//! weekday numbers).

use std::collections::BTreeSet;

use cronslot_core::manifest::{JobSpec, Manifest};
use cronslot_core::schedule::{Schedule, Zone};
use cronslot_core::translate::Platform;
use cronslot_core::{CronExpr, Dialect};

use super::fires::{Span, compare, is_every_minute, platform_schedule, posix_reading, same};
use super::wrangler::{self, Wrangler};
use super::{Report, bad_template};
use crate::exit::Failure;
use crate::format::utc;
use crate::render::plan::{self, CLOUDFLARE_TICK, Plan};
use crate::render::wrangler::{DO_BINDING, DO_CLASS, HASH_VAR};

/// Compares a wrangler.toml's crons, Durable Object binding, migration and
/// manifest hash with the manifest.
pub fn check(
    file: &str,
    w: &Wrangler,
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
