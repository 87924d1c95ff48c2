//! Checking a Kubernetes YAML (`render kubernetes`) against the manifest:
//! the manifest embedded in its ConfigMap, job by job (schedules by fire
//! times, zones, settings), and the Deployment or CronJob that runs it
//! (the command on the mounted manifest, the store from a Secret, the
//! tick's schedule and deadlines).

use std::collections::BTreeSet;

use cronslot_core::manifest::{Action, JobSpec, Manifest, format_duration, parse_manifest};
use cronslot_core::schedule::Zone;
use cronslot_core::{CronExpr, Dialect};
use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::fires::{Span, compare, is_every_minute, platform_schedule};
use super::{Report, bad_template};
use crate::exit::Failure;
use crate::render::kubernetes::{
    CONCURRENCY_POLICY, HASH_ANNOTATION, STORE_ENV, TICK_SCHEDULE, active_deadline,
    longest_timeout, starting_deadline, termination_grace,
};
use crate::render::plan::manifest_hash;

type Node<'a> = MarkedYaml<'a>;

/// The documents of a Kubernetes YAML, or `None` when the text is not one
/// (not YAML, or no document with `apiVersion` and `kind`).
pub fn read(text: &str) -> Option<Vec<Node<'_>>> {
    let docs = MarkedYaml::load_from_str(text).ok()?;
    docs.iter()
        .any(|d| str_at(d, &["apiVersion"]).is_some() && str_at(d, &["kind"]).is_some())
        .then_some(docs)
}

fn line_of(node: &Node<'_>) -> usize {
    node.span.start.line().max(1)
}

fn get<'n, 'a>(node: &'n Node<'a>, key: &str) -> Option<&'n Node<'a>> {
    match &node.data {
        YamlData::Mapping(map) => map
            .iter()
            .find(|(k, _)| scalar(k).as_deref() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn at<'n, 'a>(node: &'n Node<'a>, path: &[&str]) -> Option<&'n Node<'a>> {
    path.iter().try_fold(node, |n, key| get(n, key))
}

fn scalar(node: &Node<'_>) -> Option<String> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Some(i.to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Some(b.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
        _ => None,
    }
}

fn str_at(node: &Node<'_>, path: &[&str]) -> Option<String> {
    at(node, path).and_then(scalar)
}

fn int_at(node: &Node<'_>, path: &[&str]) -> Option<i64> {
    match &at(node, path)?.data {
        YamlData::Value(Scalar::Integer(i)) => Some(*i),
        YamlData::Value(Scalar::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
}

fn items<'n, 'a>(node: Option<&'n Node<'a>>) -> &'n [Node<'a>] {
    match node.map(|n| &n.data) {
        Some(YamlData::Sequence(items)) => items,
        _ => &[],
    }
}

fn strings(node: Option<&Node<'_>>) -> Vec<String> {
    items(node).iter().filter_map(scalar).collect()
}

/// An object of the file.
struct Object<'n, 'a> {
    kind: String,
    name: String,
    namespace: Option<String>,
    line: usize,
    node: &'n Node<'a>,
}

impl Object<'_, '_> {
    fn what(&self) -> String {
        format!("{} {}", self.kind, self.name)
    }
}

/// A ConfigMap's manifest that a workload runs (or the file holds).
struct Embedded {
    /// `ConfigMap NAME data.KEY`.
    what: String,
    text: String,
    /// The line of the data key.
    line: usize,
}

/// `cronslot SUBCOMMAND ...` as a container runs it.
struct Invocation {
    subcommand: String,
    manifest: Option<String>,
    /// `--flag value` and `--flag=value`; flags without a value map to "".
    flags: Vec<(String, String)>,
}

impl Invocation {
    fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(f, _)| f == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The flags of `cronslot run` and `cronslot tick` that take a value.
const VALUE_FLAGS: [&str; 8] = [
    "--store",
    "--health-listen",
    "--workers",
    "--speed",
    "--until",
    "--log-format",
    "--token-env",
    "--manifest",
];

/// The container's command and args read as a cronslot command line:
/// `command: [cronslot]` (or a path ending in /cronslot) with the
/// subcommand in args, or the image's entrypoint with args alone.
fn invocation(container: &Node<'_>) -> Option<Invocation> {
    let command = strings(get(container, "command"));
    let args = strings(get(container, "args"));
    let mut argv: Vec<String> = command.into_iter().chain(args).collect();
    let program = argv.first()?;
    if program == "cronslot" || program.ends_with("/cronslot") {
        argv.remove(0);
    }
    let mut rest = argv.into_iter();
    let subcommand = rest.next()?;
    if subcommand != "run" && subcommand != "tick" {
        return None;
    }
    let mut manifest = None;
    let mut flags = Vec::new();
    while let Some(arg) = rest.next() {
        if arg.starts_with("--") {
            match arg.split_once('=') {
                Some((f, v)) => flags.push((f.to_string(), v.to_string())),
                None if VALUE_FLAGS.contains(&arg.as_str()) => {
                    flags.push((arg, rest.next().unwrap_or_default()));
                }
                None => flags.push((arg, String::new())),
            }
        } else if manifest.is_none() {
            manifest = Some(arg);
        }
    }
    Some(Invocation {
        subcommand,
        manifest,
        flags,
    })
}

pub fn check(
    file: &str,
    text: &str,
    docs: &[Node<'_>],
    manifest: &Manifest,
    manifest_text: &str,
    span: Span,
) -> Result<Report, Failure> {
    let mut report = Report::default();
    let objects: Vec<Object<'_, '_>> = docs
        .iter()
        .filter_map(|d| {
            Some(Object {
                kind: str_at(d, &["kind"])?,
                name: str_at(d, &["metadata", "name"]).unwrap_or_default(),
                namespace: str_at(d, &["metadata", "namespace"]),
                line: line_of(d),
                node: d,
            })
        })
        .collect();
    let lines: Vec<&str> = text.lines().collect();

    let mut embedded: Vec<Embedded> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut workloads = 0;
    for object in &objects {
        let (subcommand, pod) = match object.kind.as_str() {
            "Deployment" => ("run", at(object.node, &["spec", "template"])),
            "CronJob" => (
                "tick",
                at(object.node, &["spec", "jobTemplate", "spec", "template"]),
            ),
            "Secret" => {
                if get(object.node, "data").is_some() || get(object.node, "stringData").is_some() {
                    report.note(
                        Some(object.line),
                        format!(
                            "{}: a Secret with its data in this file: the store URL (and its credentials) would be wherever this file is; create the Secret apart (kubectl create secret)",
                            object.what()
                        ),
                    );
                }
                continue;
            }
            _ => continue,
        };
        workloads += 1;
        let Some(pod) = pod else {
            report.problem(
                Some(object.line),
                format!("{}: no pod template", object.what()),
                Vec::new(),
            );
            continue;
        };
        if object.kind == "CronJob" {
            cron_job(file, &mut report, object, manifest, span)?;
        } else {
            deployment(&mut report, object);
        }
        if let Some(pod_spec) = get(pod, "spec") {
            grace(&mut report, object, pod_spec, manifest);
        }
        let found = workload(&mut report, object, pod, subcommand, &objects);
        if let Some(e) = found {
            // A Deployment's pods read the manifest once, when they start; a
            // CronJob's pods start afresh each minute.
            let annotation = str_at(pod, &["metadata", "annotations", HASH_ANNOTATION])
                .filter(|_| object.kind == "Deployment");
            if let Some(annotation) = annotation {
                let hash = manifest_hash(&e.text);
                if annotation != hash {
                    report.note(
                        Some(object.line),
                        format!(
                            "{}: the pod template's {HASH_ANNOTATION} is {annotation}, but the {} hashes to {hash}: applying this file does not restart the pods, which keep the manifest they started with",
                            object.what(),
                            e.what
                        ),
                    );
                }
            }
            if seen.insert(e.what.clone()) {
                embedded.push(e);
            }
        }
    }
    if workloads == 0 {
        report.problem(
            None,
            "no Deployment or CronJob: nothing runs the jobs (`cronslot render kubernetes` writes a Deployment, or with --kind cronjob a CronJob)",
            Vec::new(),
        );
        // Still compare the manifest a ConfigMap holds.
        for object in objects.iter().filter(|o| o.kind == "ConfigMap") {
            let key = crate::render::kubernetes::MANIFEST_KEY;
            if let Some(e) = config_map_entry(object, key) {
                embedded.push(e);
            }
        }
    }
    for function in manifest
        .jobs
        .iter()
        .filter(|j| j.action == Action::Function)
    {
        report.problem(
            None,
            format!(
                "job {:?} is a Rust function job: `cronslot run` and `cronslot tick` refuse the manifest (they run command and http jobs only)",
                function.name.as_str()
            ),
            Vec::new(),
        );
    }
    if workloads > 1 {
        report.note(
            None,
            format!(
                "{workloads} workloads run the jobs: each slot still runs once, but one is enough"
            ),
        );
    }
    for e in &embedded {
        compare_manifests(&mut report, file, &lines, e, manifest, manifest_text, span);
    }
    if embedded.is_empty() && workloads == 0 {
        report.problem(
            None,
            "no ConfigMap holds the manifest: nothing to compare it with",
            Vec::new(),
        );
    }
    Ok(report)
}

fn config_map_entry(object: &Object<'_, '_>, key: &str) -> Option<Embedded> {
    let data = get(object.node, "data")?;
    let value = get(data, key)?;
    Some(Embedded {
        what: format!("ConfigMap {} data.{key}", object.name),
        text: scalar(value)?,
        line: line_of(value).max(line_of(data)),
    })
}

/// The cronslot container of a workload's pod: its command on the mounted
/// manifest and its store. Returns the manifest it runs.
fn workload(
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

/// `$(NAME)` → `NAME`.
fn env_reference(arg: &str) -> Option<&str> {
    arg.strip_prefix("$(")?.strip_suffix(')')
}

/// The store URL must come from a Secret: no `--store` (cronslot reads
/// CRONSLOT_STORE), or `--store "$(VAR)"`, with the variable from
/// `secretKeyRef`.
fn store(report: &mut Report, what: &str, line: usize, container: &Node<'_>, inv: &Invocation) {
    let expected = || {
        vec![format!(
            "expected: no --store, and env {STORE_ENV} from valueFrom.secretKeyRef (key url)"
        )]
    };
    let var = match inv.flag("--store") {
        None => STORE_ENV,
        Some(value) => match env_reference(value) {
            Some(var) => {
                report.note(
                    Some(line),
                    format!(
                        "{what}: --store {value:?} puts the store URL on the process's command line, where the jobs can read it; leave --store out: cronslot reads {STORE_ENV}"
                    ),
                );
                var
            }
            None => {
                report.problem(
                    Some(line),
                    format!(
                        "{what}: --store is written in the file ({}): the store URL, with any credentials in it, belongs in a Secret",
                        redact(value)
                    ),
                    expected(),
                );
                return;
            }
        },
    };
    let env = items(get(container, "env"))
        .iter()
        .find(|e| str_at(e, &["name"]).as_deref() == Some(var));
    match env {
        Some(e) if at(e, &["valueFrom", "secretKeyRef"]).is_some() => {
            if str_at(e, &["valueFrom", "secretKeyRef", "name"]).is_none() {
                report.problem(
                    Some(line_of(e)),
                    format!("{what}: env {var}: secretKeyRef names no Secret"),
                    expected(),
                );
            }
        }
        Some(e) if get(e, "value").is_some() => report.problem(
            Some(line_of(e)),
            format!(
                "{what}: env {var} is written in the file (value): the store URL, with any credentials in it, belongs in a Secret (missing store Secret reference)"
            ),
            expected(),
        ),
        Some(e) => report.problem(
            Some(line_of(e)),
            format!("{what}: env {var} does not come from a Secret (missing store Secret reference)"),
            expected(),
        ),
        None => {
            let secrets: Vec<String> = items(get(container, "envFrom"))
                .iter()
                .filter_map(|e| str_at(e, &["secretRef", "name"]))
                .collect();
            if secrets.is_empty() {
                let without = if inv.flag("--store").is_some() {
                    format!("--store reads $({var}), which nothing sets")
                } else {
                    format!(
                        "no --store and no env {STORE_ENV}: `cronslot {}` would use its default store, a file inside the pod",
                        inv.subcommand
                    )
                };
                report.problem(
                    Some(line),
                    format!("{what}: missing store Secret reference: {without}"),
                    expected(),
                );
            } else {
                report.note(
                    Some(line),
                    format!(
                        "{what}: {var} presumably comes from envFrom Secret {} (not checked)",
                        secrets.join(", ")
                    ),
                );
            }
        }
    }
}

/// A URL's credentials hidden: `scheme://***@host...`, or the scheme alone.
fn redact(value: &str) -> String {
    match value.split_once("://") {
        Some((scheme, rest)) if rest.contains('@') => {
            let host = rest.rsplit_once('@').map_or("", |(_, h)| h);
            format!("{scheme}://***@{host}")
        }
        _ => format!("{value:?}"),
    }
}

/// `cronslot run`'s flags that make no sense in a Deployment, and the
/// probes it serves.
fn run_flags(report: &mut Report, what: &str, line: usize, container: &Node<'_>, inv: &Invocation) {
    if let Some(speed) = inv.flag("--speed") {
        if speed.parse::<f64>().ok() != Some(1.0) {
            report.problem(
                Some(line),
                format!("{what}: --speed {speed}: the runner's clock would not be real time"),
                Vec::new(),
            );
        }
    }
    if let Some(until) = inv.flag("--until") {
        report.problem(
            Some(line),
            format!("{what}: --until {until}: the runner stops, and the Deployment restarts it"),
            Vec::new(),
        );
    }
    let probes: Vec<&str> = ["livenessProbe", "readinessProbe"]
        .into_iter()
        .filter(|p| at(container, &[p, "httpGet"]).is_some())
        .collect();
    match inv.flag("--health-listen") {
        None if !probes.is_empty() => report.problem(
            Some(line),
            format!(
                "{what}: {} over HTTP, but no --health-listen: nothing answers them, so the pods are restarted",
                probes.join(" and ")
            ),
            vec!["expected: --health-listen 0.0.0.0:8080".into()],
        ),
        Some(_) if !probes.contains(&"livenessProbe") => report.note(
            Some(line),
            format!("{what}: --health-listen, but no livenessProbe: a stuck runner is not restarted"),
        ),
        _ => {}
    }
}

fn deployment(report: &mut Report, object: &Object<'_, '_>) {
    if int_at(object.node, &["spec", "replicas"]) == Some(0) {
        report.problem(
            at(object.node, &["spec", "replicas"]).map(line_of),
            format!("{}: replicas 0: nothing runs the jobs", object.what()),
            Vec::new(),
        );
    }
}

/// Grace on SIGTERM, in both kinds of pod.
fn grace(report: &mut Report, object: &Object<'_, '_>, pod_spec: &Node<'_>, manifest: &Manifest) {
    let (longest, job) = longest_timeout(manifest);
    let node = get(pod_spec, "terminationGracePeriodSeconds");
    let grace = node.and_then(|_| int_at(pod_spec, &["terminationGracePeriodSeconds"]));
    let (grace, default) = match grace {
        Some(g) => (g, ""),
        None => (30, " (the default)"),
    };
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

fn cron_job(
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

/// Compares the embedded manifest with the manifest, job by job.
fn compare_manifests(
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

    fn container(yaml: &str) -> Option<Invocation> {
        let docs = MarkedYaml::load_from_str(yaml).expect("yaml");
        invocation(&docs[0])
    }

    #[test]
    fn command_lines() {
        let i = container(
            "command: [cronslot]\nargs: [run, /m/c.toml, --store, \"$(S)\", --health-listen=0.0.0.0:1]\n",
        )
        .expect("a cronslot command");
        assert_eq!(i.subcommand, "run");
        assert_eq!(i.manifest.as_deref(), Some("/m/c.toml"));
        assert_eq!(i.flag("--store"), Some("$(S)"));
        assert_eq!(i.flag("--health-listen"), Some("0.0.0.0:1"));
        let i = container("args: [tick, --store, x, /m.toml]\n").expect("entrypoint");
        assert_eq!(i.subcommand, "tick");
        assert_eq!(i.manifest.as_deref(), Some("/m.toml"));
        assert!(container("command: [sh, -c, x]\n").is_none());
        assert!(container("args: [status]\n").is_none());
    }

    #[test]
    fn redacts_credentials() {
        assert_eq!(
            redact("postgres://u:p@db:5432/x"),
            "postgres://***@db:5432/x"
        );
        assert_eq!(redact("sqlite:a.db"), "\"sqlite:a.db\"");
    }

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
