//! What runs the jobs: a Deployment (`cronslot run`) or a CronJob
//! (`cronslot tick`), its pod's grace on SIGTERM, the CronJob's schedule
//! and deadlines, and the cronslot container with the ConfigMap its
//! manifest is mounted from.

use cronslot_core::manifest::{Manifest, format_duration, parse_duration};
use cronslot_core::schedule::Zone;
use cronslot_core::{CronExpr, Dialect};

use super::command::{invocation, run_flags, store};
use super::{Embedded, Node, Object, at, config_map_entry, get, int_at, items, line_of, str_at};
use crate::check::fires::{Span, is_every_minute, platform_schedule};
use crate::check::{Report, bad_template};
use crate::exit::Failure;
use crate::render::kubernetes::{
    CONCURRENCY_POLICY, GRACE_MARGIN, TICK_SCHEDULE, active_deadline, longest_timeout,
    starting_deadline, termination_grace,
};

/// The cronslot container of a workload's pod: its command on the mounted
/// manifest and its store. Returns the manifest it runs.
pub(super) fn workload(
    report: &mut Report,
    object: &Object<'_, '_>,
    pod: &Node<'_>,
    subcommand: &str,
    objects: &[Object<'_, '_>],
) -> Option<Embedded> {
    let what = object.what();
    let spec = get(pod, "spec")?;
    let containers = items(get(spec, "containers"));
    let expected = format!(
        "expected: cronslot {subcommand} {} (the store in env CRONSLOT_STORE)",
        crate::render::kubernetes::manifest_path()
    );
    let found = containers
        .iter()
        .find_map(|c| invocation(c).map(|i| (c, i)));
    let Some((container, inv)) = found else {
        report.problem(
            Some(object.line),
            format!("{what}: no container runs `cronslot {subcommand}`: the jobs do not run"),
            vec![expected],
        );
        return None;
    };
    let line = get(container, "args")
        .or_else(|| get(container, "command"))
        .map_or(object.line, line_of);
    if inv.subcommand != subcommand {
        let why = if subcommand == "run" {
            "a Deployment's container must keep running: `cronslot tick` plans once and exits, so the pod restarts in a loop"
        } else {
            "a CronJob's pod must finish: `cronslot run` never exits, so every tick runs until its deadline and holds back the next"
        };
        report.problem(
            Some(line),
            format!(
                "{what}: runs `cronslot {}`, not `cronslot {subcommand}`: {why}",
                inv.subcommand
            ),
            vec![expected.clone()],
        );
    }
    store(report, &what, line, container, &inv);
    if subcommand == "run" {
        run_flags(report, &what, line, container, &inv);
    }
    let Some(path) = inv.manifest.clone() else {
        report.problem(
            Some(line),
            format!(
                "{what}: `cronslot {}` is given no manifest: it reads cronslot.toml in its working directory, not the mounted one",
                inv.subcommand
            ),
            vec![expected],
        );
        return None;
    };
    let Some((config_map, key)) = mounted(spec, container, &path) else {
        report.problem(
            Some(line),
            format!(
                "{what}: the manifest {path} is not a file of a mounted ConfigMap (volumeMounts, volumes[].configMap): the jobs it runs cannot be compared"
            ),
            vec![expected],
        );
        return None;
    };
    let Some(cm) = objects.iter().find(|o| {
        o.kind == "ConfigMap"
            && o.name == config_map
            && (o.namespace.is_none()
                || object.namespace.is_none()
                || o.namespace == object.namespace)
    }) else {
        report.problem(
            Some(line),
            format!(
                "{what}: runs {path} from ConfigMap {config_map}, which is not in this file: the manifest it holds cannot be compared"
            ),
            Vec::new(),
        );
        return None;
    };
    let entry = config_map_entry(cm, &key);
    if entry.is_none() {
        report.problem(
            Some(cm.line),
            format!(
                "{what}: runs {path}, but ConfigMap {config_map} has no data key {key}: the pod cannot start"
            ),
            Vec::new(),
        );
    }
    entry
}

/// The ConfigMap and key a path in the container is read from.
fn mounted(spec: &Node<'_>, container: &Node<'_>, path: &str) -> Option<(String, String)> {
    let mut best: Option<(usize, String, String)> = None;
    for mount in items(get(container, "volumeMounts")) {
        let Some(dir) = str_at(mount, &["mountPath"]) else {
            continue;
        };
        let Some(volume) = str_at(mount, &["name"]) else {
            continue;
        };
        let dir = dir.trim_end_matches('/').to_string();
        let sub_path = str_at(mount, &["subPath"]);
        let relative = match &sub_path {
            Some(sub) if path == dir => sub.clone(),
            Some(_) => continue,
            None => match path.strip_prefix(&format!("{dir}/")) {
                Some(rest) => rest.to_string(),
                None => continue,
            },
        };
        if best.as_ref().is_none_or(|(len, _, _)| dir.len() > *len) {
            best = Some((dir.len(), volume, relative));
        }
    }
    let (_, volume, relative) = best?;
    let volume = items(get(spec, "volumes"))
        .iter()
        .find(|v| str_at(v, &["name"]).as_deref() == Some(volume.as_str()))?;
    let config_map = get(volume, "configMap")?;
    let name = str_at(config_map, &["name"])?;
    let listed = items(get(config_map, "items"));
    let key = if listed.is_empty() {
        relative
    } else {
        listed
            .iter()
            .find(|i| str_at(i, &["path"]).as_deref() == Some(relative.as_str()))
            .and_then(|i| str_at(i, &["key"]))?
    };
    Some((name, key))
}

pub(super) fn deployment(report: &mut Report, object: &Object<'_, '_>) {
    if int_at(object.node, &["spec", "replicas"]) == Some(0) {
        report.problem(
            at(object.node, &["spec", "replicas"]).map(line_of),
            format!("{}: replicas 0: nothing runs the jobs", object.what()),
            Vec::new(),
        );
    }
}

/// Grace on SIGTERM, in both kinds of pod.
pub(super) fn grace(
    report: &mut Report,
    object: &Object<'_, '_>,
    pod_spec: &Node<'_>,
    manifest: &Manifest,
) {
    let (longest, job) = longest_timeout(manifest);
    let node = get(pod_spec, "terminationGracePeriodSeconds");
    let grace = node.and_then(|_| int_at(pod_spec, &["terminationGracePeriodSeconds"]));
    let (grace, default) = match grace {
        Some(g) => (g, ""),
        None => (30, " (the default)"),
    };
    let drain = items(get(pod_spec, "containers"))
        .iter()
        .find_map(invocation)
        .and_then(|inv| inv.flag("--grace").map(str::to_string));
    if let Some(text) = drain {
        match parse_duration(&text) {
            Err(e) => report.problem(
                Some(object.line),
                format!("{}: the runner's --grace {text:?}: {e}", object.what()),
                Vec::new(),
            ),
            Ok(d) if d.as_secs_f64() >= grace as f64 => report.problem(
                Some(node.map_or(object.line, line_of)),
                format!(
                    "{}: the runner's --grace {text} is not shorter than terminationGracePeriodSeconds {grace}{default}: the kubelet kills the runner before it lets its last runs go and exits",
                    object.what()
                ),
                vec![format!(
                    "expected: terminationGracePeriodSeconds at least the grace + {GRACE_MARGIN}"
                )],
            ),
            Ok(_) => {}
        }
    }
    if u64::try_from(grace).unwrap_or(0) < longest.as_secs() {
        let whose = job.map_or_else(String::new, |j| format!(" (job {})", j.name.as_str()));
        report.problem(
            Some(node.map_or(object.line, line_of)),
            format!(
                "{}: terminationGracePeriodSeconds {grace}{default} is shorter than the longest job timeout{whose}, {}: a rollout or a drained node kills running jobs",
                object.what(),
                format_duration(longest)
            ),
            vec![format!(
                "expected: {} (`cronslot render kubernetes` writes it)",
                termination_grace(manifest)
            )],
        );
    }
}

pub(super) fn cron_job(
    file: &str,
    report: &mut Report,
    object: &Object<'_, '_>,
    manifest: &Manifest,
    span: Span,
) -> Result<(), Failure> {
    let what = object.what();
    let spec = get(object.node, "spec");
    let Some(spec) = spec else {
        report.problem(Some(object.line), format!("{what}: no spec"), Vec::new());
        return Ok(());
    };
    report.schedules += 1;
    let line = |key: &str| get(spec, key).map_or(object.line, line_of);
    match str_at(spec, &["schedule"]) {
        None => report.problem(
            Some(object.line),
            format!("{what}: no schedule"),
            vec![format!("expected: {TICK_SCHEDULE:?}")],
        ),
        Some(schedule) => {
            let cron = CronExpr::parse_dialect(&schedule, Dialect::Standard).map_err(|e| {
                bad_template(
                    file,
                    Some(line("schedule")),
                    &format!("{what}: invalid schedule {schedule:?}: {e}"),
                )
            })?;
            let zone = match str_at(spec, &["timeZone"]) {
                None => Zone::utc(),
                Some(z) => Zone::get(&z).map_err(|e| {
                    bad_template(
                        file,
                        Some(line("timeZone")),
                        &format!("{what}: timeZone: {e}"),
                    )
                })?,
            };
            if !is_every_minute(&platform_schedule(cron, zone), span) {
                report.problem(
                    Some(line("schedule")),
                    format!(
                        "{what}: the tick's schedule is {schedule:?}{}, not every minute: slots between its ticks run late or are missed",
                        str_at(spec, &["timeZone"]).map_or_else(String::new, |z| format!(" in {z}"))
                    ),
                    vec![format!("expected: {TICK_SCHEDULE:?} in Etc/UTC")],
                );
            }
        }
    }
    if str_at(spec, &["suspend"]).as_deref() == Some("true") {
        report.problem(
            Some(line("suspend")),
            format!("{what}: suspended: no tick runs, so no job does"),
            Vec::new(),
        );
    }
    let policy = str_at(spec, &["concurrencyPolicy"]);
    if policy.as_deref() != Some(CONCURRENCY_POLICY) {
        report.problem(
            Some(line("concurrencyPolicy")),
            format!(
                "{what}: concurrencyPolicy {}: ticks pile up behind a slow one (`cronslot render kubernetes` writes {CONCURRENCY_POLICY})",
                policy.unwrap_or_else(|| "Allow (the default)".into())
            ),
            vec![format!("expected: concurrencyPolicy: {CONCURRENCY_POLICY}")],
        );
    }
    let expected = starting_deadline(manifest);
    match int_at(spec, &["startingDeadlineSeconds"]) {
        Some(s) if u64::try_from(s).ok() == Some(expected.seconds) => {}
        found => report.problem(
            Some(line("startingDeadlineSeconds")),
            format!(
                "{what}: startingDeadlineSeconds {} differs from what `cronslot render kubernetes` writes: {} ({})",
                found.map_or_else(|| "unset (no deadline)".to_string(), |s| s.to_string()),
                expected.seconds,
                expected.reason
            ),
            vec![format!("expected: startingDeadlineSeconds: {}", expected.seconds)],
        ),
    }
    let job = at(spec, &["jobTemplate", "spec"]);
    let (longest, _) = longest_timeout(manifest);
    match job.and_then(|j| int_at(j, &["activeDeadlineSeconds"])) {
        None => report.note(
            Some(object.line),
            format!(
                "{what}: no activeDeadlineSeconds: a tick that hangs holds back every later one (concurrencyPolicy Forbid); `cronslot render kubernetes` writes {}",
                active_deadline(manifest)
            ),
        ),
        Some(s) if u64::try_from(s).unwrap_or(0) < longest.as_secs() => report.problem(
            job.and_then(|j| get(j, "activeDeadlineSeconds")).map(line_of),
            format!(
                "{what}: activeDeadlineSeconds {s} is shorter than the longest job timeout, {}: a tick is killed while its jobs run",
                format_duration(longest)
            ),
            vec![format!("expected: {}", active_deadline(manifest))],
        ),
        Some(_) => {}
    }
    let backoff = job.and_then(|j| int_at(j, &["backoffLimit"]));
    if backoff != Some(0) {
        report.note(
            job.and_then(|j| get(j, "backoffLimit")).map(line_of),
            format!(
                "{what}: backoffLimit {}: a failed tick is run again by Kubernetes, though the next minute's tick plans every job anyway (render writes 0)",
                backoff.map_or_else(|| "6 (the default)".to_string(), |b| b.to_string())
            ),
        );
    }
    Ok(())
}
