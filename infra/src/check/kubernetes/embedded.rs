//! The manifest a ConfigMap holds, compared with the manifest job by job:
//! missing and extra jobs, schedules by fire times, zones, and every other
//! setting.

use cronslot_core::manifest::{Action, JobSpec, Manifest, format_duration, parse_manifest};

use super::Embedded;
use crate::check::Report;
use crate::check::fires::{Span, compare};

/// Compares the embedded manifest with the manifest, job by job.
pub(super) fn compare_manifests(
    report: &mut Report,
    file: &str,
    lines: &[&str],
    e: &Embedded,
    manifest: &Manifest,
    manifest_text: &str,
    span: Span,
) {
    if e.text == manifest_text {
        report.schedules += manifest.jobs.len();
        return;
    }
    let embedded = match parse_manifest(&e.text, &format!("{file}: {}", e.what)) {
        Ok(m) => m,
        Err(errors) => {
            report.problem(
                Some(e.line),
                format!(
                    "{}: not a valid manifest: the runner refuses to start",
                    e.what
                ),
                errors
                    .to_string()
                    .lines()
                    .take(12)
                    .map(str::to_string)
                    .collect(),
            );
            return;
        }
    };
    let mut differs = false;
    for spec in &manifest.jobs {
        let name = spec.name.as_str();
        let Some(theirs) = embedded.job(name) else {
            differs = true;
            report.problem(
                Some(e.line),
                format!("job {name:?}: missing from the {}: it never runs", e.what),
                Vec::new(),
            );
            continue;
        };
        report.schedules += 1;
        let line = job_line(lines, e.line, name).unwrap_or(e.line);
        if theirs.schedule != spec.schedule {
            let diff = compare(&theirs.schedule, &spec.schedule, span);
            if !diff.is_empty() {
                differs = true;
                let mut details = diff.describe(spec.schedule.zone());
                details.push(format!(
                    "expected: {:?} in {}",
                    spec.schedule_text, spec.timezone
                ));
                let kind = if theirs.schedule_text == spec.schedule_text
                    && theirs.timezone != spec.timezone
                {
                    "wrong zone"
                } else {
                    "different schedule"
                };
                report.problem(
                    Some(line),
                    format!(
                        "job {name:?}: {kind}: the {} has {:?} in {}, which fires at other instants than {:?} in {}",
                        e.what,
                        theirs.schedule_text,
                        theirs.timezone,
                        spec.schedule_text,
                        spec.timezone
                    ),
                    details,
                );
            }
        }
        let ours = settings(spec);
        let different: Vec<String> = settings(theirs)
            .into_iter()
            .zip(ours)
            .filter(|(a, b)| a.1 != b.1)
            .map(|(a, b)| format!("{}: {} (the manifest: {})", a.0, a.2, b.2))
            .collect();
        if !different.is_empty() {
            differs = true;
            report.problem(
                Some(line),
                format!(
                    "job {name:?}: different settings in the {}: {}",
                    e.what,
                    different
                        .iter()
                        .map(|d| d.split(':').next().unwrap_or_default())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                different,
            );
        }
    }
    for extra in &embedded.jobs {
        let name = extra.name.as_str();
        if manifest.job(name).is_none() {
            differs = true;
            report.problem(
                Some(job_line(lines, e.line, name).unwrap_or(e.line)),
                format!(
                    "job {name:?}: extra: the {} has it, the manifest does not: it runs all the same ({:?} in {})",
                    e.what, extra.schedule_text, extra.timezone
                ),
                Vec::new(),
            );
        }
    }
    if !differs {
        report.note(
            Some(e.line),
            format!(
                "the {}'s text differs from the manifest's, but its jobs are the same (comments, layout or defaults written another way)",
                e.what
            ),
        );
    }
}

/// The line of `name = "JOB"` in the block after `from`.
fn job_line(lines: &[&str], from: usize, job: &str) -> Option<usize> {
    let wanted = [format!("name=\"{job}\""), format!("name='{job}'")];
    lines
        .iter()
        .enumerate()
        .skip(from)
        .take_while(|(_, l)| !l.starts_with("---"))
        .find(|(_, l)| {
            let compact: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            wanted.iter().any(|w| compact.starts_with(w.as_str()))
        })
        .map(|(i, _)| i + 1)
}

/// A job's settings besides its schedule: (name, value compared, value shown).
fn settings(spec: &JobSpec) -> Vec<(&'static str, String, String)> {
    let d = |d: std::time::Duration| format_duration(d);
    let same = |name: &'static str, v: String| (name, v.clone(), v);
    let opt_time = |t: Option<jiff::Timestamp>| t.map_or_else(|| "none".into(), |t| t.to_string());
    let (action, action_shown, timeout, env) = match &spec.action {
        Action::Function => (
            "function".to_string(),
            "a Rust function".to_string(),
            "none".into(),
            String::new(),
        ),
        Action::Command { argv, timeout, env } => {
            let argv = serde_json::to_string(argv).unwrap_or_default();
            (
                format!("command {argv}"),
                format!("command {argv}"),
                d(*timeout),
                format!("{env:?}"),
            )
        }
        Action::Http {
            url,
            method,
            headers,
            timeout,
        } => {
            let names: Vec<&str> = headers.keys().map(String::as_str).collect();
            (
                format!("http {} {url} {headers:?}", method.as_str()),
                format!(
                    "http {} {url} (headers: {})",
                    method.as_str(),
                    names.join(", ")
                ),
                d(*timeout),
                String::new(),
            )
        }
    };
    let env_names = match &spec.action {
        Action::Command { env, .. } => env.keys().cloned().collect::<Vec<_>>().join(", "),
        _ => String::new(),
    };
    vec![
        ("action", action, action_shown),
        ("env", env, format!("[{env_names}]")),
        same("timeout", timeout),
        same("dst", format!("{:?}", spec.dst_policy())),
        same("trigger", format!("{:?}", spec.trigger).to_lowercase()),
        same("lease", d(spec.lease)),
        same("starting_deadline", d(spec.starting_deadline)),
        same("catch_up", format!("{:?}", spec.catch_up).to_lowercase()),
        same("max_catch_up", spec.max_catch_up.to_string()),
        same("overlap", format!("{:?}", spec.overlap)),
        same("retry", format!("{:?}", spec.retry)),
        same("delivery", format!("{:?}", spec.delivery)),
        same("skew_margin", d(spec.skew_margin)),
        same("paused", spec.paused.to_string()),
        same("start_at", opt_time(spec.start_at)),
        same("end_at", opt_time(spec.end_at)),
        same(
            "stale_after",
            spec.stale_after.map_or_else(|| "derived".into(), d),
        ),
        same("history", format!("{:?}", spec.history)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_job_line() {
        let lines = [
            "a:",
            "  k: |",
            "    [[job]]",
            "    name = \"x\"",
            "---",
            "name = \"y\"",
        ];
        assert_eq!(job_line(&lines, 1, "x"), Some(4));
        assert_eq!(job_line(&lines, 1, "y"), None);
    }
}
