//! Kubernetes: the manifest in a ConfigMap, and either a Deployment of
//! `cronslot run` replicas or a CronJob running `cronslot tick` every
//! minute, in one multi-document YAML file. The store URL comes from a
//! Secret the file only names.
//!
//! `check` (check/kubernetes.rs) compares such a file with the manifest
//! using the values this module computes.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use cronslot_core::manifest::{Action, JobSpec, Manifest, format_duration};

use super::yaml::{Map, Node, scalar_text, write_document};
use super::{Rendered, Source, comment_lines};

use crate::cli::KubernetesKind;
use crate::exit::Failure;

/// Where the ConfigMap is mounted, and the key (file) that holds the manifest.
pub const MOUNT_DIR: &str = "/etc/cronslot";
pub const MANIFEST_KEY: &str = "cronslot.toml";
/// The environment variable `cronslot run` and `tick` read the store URL
/// from when `--store` is not given, and the Secret's key that fills it.
/// No `--store` is rendered: its value would be on the process's command
/// line, which the jobs can read (`/proc/PID/cmdline`), while the runner
/// withholds this variable from their environment.
pub const STORE_ENV: &str = "CRONSLOT_STORE";
pub const SECRET_KEY: &str = "url";
/// `cronslot run --health-listen`: `GET /healthz` and `GET /readyz`.
pub const HEALTH_PORT: u16 = 8080;
pub const HEALTH_PORT_NAME: &str = "health";
pub const LIVENESS_PATH: &str = "/healthz";
pub const READINESS_PATH: &str = "/readyz";
/// The tick: every minute, in UTC (cronslot plans each job in its own zone).
pub const TICK_SCHEDULE: &str = "* * * * *";
pub const TIME_ZONE: &str = "Etc/UTC";
pub const CONCURRENCY_POLICY: &str = "Forbid";
/// The CronJob controller looks for due schedules every 10 s: a shorter
/// starting deadline may skip ticks that were on time.
pub const MIN_STARTING_DEADLINE: u64 = 10;
/// After the longest job timeout: time to record the outcome on SIGTERM.
pub const GRACE_MARGIN: u64 = 30;
/// After the longest job timeout: time for a tick's pod to start, plan
/// and record.
pub const TICK_MARGIN: u64 = 60;
pub const DEFAULT_REPLICAS: u32 = 2;
/// Annotations: the manifest a file was rendered from and its FNV-1a 64
/// hash (on the pod template too, so a changed manifest rolls the pods).
pub const MANIFEST_ANNOTATION: &str = "cronslot/manifest";
pub const HASH_ANNOTATION: &str = "cronslot/manifest-fnv1a64";
/// The container's name.
pub const CONTAINER: &str = "cronslot";
/// A fixed non-root user: `runAsNonRoot` needs a numeric user to verify,
/// and an image's `USER nonroot` is not one.
pub const RUN_AS_USER: u32 = 65_532;

/// A CronJob's name is at most 52 characters: its Jobs add 11.
const MAX_CRONJOB_NAME: usize = 52;
const MAX_LABEL: usize = 63;

/// What `render kubernetes` writes.
pub struct Options {
    pub kind: KubernetesKind,
    pub name: String,
    pub namespace: Option<String>,
    pub image: String,
    pub replicas: u32,
    pub secret: String,
}

/// The image when `--image` is not given: the release of this CLI.
pub fn default_image() -> String {
    format!("ghcr.io/cronslot/cronslot:{}", env!("CARGO_PKG_VERSION"))
}

/// The path of the manifest inside the container.
pub fn manifest_path() -> String {
    format!("{MOUNT_DIR}/{MANIFEST_KEY}")
}

/// The ConfigMap that holds the manifest.
pub fn config_map_name(name: &str) -> String {
    format!("{name}-manifest")
}

/// The Secret when `--secret` is not given.
pub fn default_secret(name: &str) -> String {
    format!("{name}-store")
}

/// Whether `s` is a DNS-1123 label: lowercase letters, digits and dashes,
/// starting and ending with a letter or digit, at most `max` characters.
pub fn is_dns_label(s: &str, max: usize) -> bool {
    !s.is_empty()
        && s.len() <= max
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// Whether `s` is a DNS-1123 subdomain: dot-separated labels, at most 253.
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|label| is_dns_label(label, MAX_LABEL))
}

/// The longest `--name` of a kind.
pub fn max_name(kind: KubernetesKind) -> usize {
    match kind {
        KubernetesKind::Deployment => MAX_LABEL,
        KubernetesKind::CronJob => MAX_CRONJOB_NAME,
    }
}

pub fn check_name(name: &str, kind: KubernetesKind) -> Result<(), Failure> {
    let max = max_name(kind);
    if is_dns_label(name, max) {
        return Ok(());
    }
    let why = if kind == KubernetesKind::CronJob && is_dns_label(name, MAX_LABEL) {
        " (a CronJob's name is at most 52: its Jobs add 11 characters)"
    } else {
        ""
    };
    Err(Failure::bad_input(format!(
        "error: --name {name:?}: a Kubernetes name here is a DNS-1123 label: 1 to {max} lowercase letters, digits and dashes, starting and ending with a letter or digit{why}"
    )))
}

pub fn check_namespace(namespace: &str) -> Result<(), Failure> {
    if is_dns_label(namespace, MAX_LABEL) {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: --namespace {namespace:?}: a namespace is a DNS-1123 label: 1 to 63 lowercase letters, digits and dashes, starting and ending with a letter or digit"
    )))
}

pub fn check_secret(secret: &str) -> Result<(), Failure> {
    if is_dns_subdomain(secret) {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: --secret {secret:?}: a Secret's name is a DNS-1123 subdomain: at most 253 lowercase letters, digits, dashes and dots, each dot-separated part starting and ending with a letter or digit"
    )))
}

/// An image reference: no whitespace or control characters, not empty.
pub fn check_image(image: &str) -> Result<(), Failure> {
    let ok = !image.is_empty()
        && image.len() <= 4096
        && !image.starts_with(['-', ':', '@', '/'])
        && image
            .chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '\\' | '$' | '`'));
    if ok {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: --image {image:?}: an image reference such as registry.example.com/team/cronslot:1.2.3 or …@sha256:DIGEST (no spaces or quotes)"
    )))
}

/// The manifest's file stem made a DNS-1123 label of at most `max`
/// characters, or `cronslot`.
pub fn default_name(manifest: &Path, kind: KubernetesKind) -> String {
    let stem = manifest
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut cleaned = String::new();
    for c in stem.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            cleaned.push(c);
        } else if !cleaned.ends_with('-') {
            cleaned.push('-');
        }
    }
    let cleaned: String = cleaned
        .trim_matches('-')
        .chars()
        .take(max_name(kind))
        .collect();
    let cleaned = cleaned.trim_end_matches('-').to_string();
    if cleaned.is_empty() {
        "cronslot".to_string()
    } else {
        cleaned
    }
}

/// `cronslot run` and `cronslot tick` run command and http jobs only.
pub fn refuse_functions(manifest: &Manifest) -> Result<(), Failure> {
    let names: Vec<String> = manifest
        .jobs
        .iter()
        .filter(|j| j.action == Action::Function)
        .map(|j| format!("{:?}", j.name.as_str()))
        .collect();
    if names.is_empty() {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: `cronslot run` and `cronslot tick` run command and http jobs only; these jobs need a Rust function registered by a program that embeds cronslot-runner: {}",
        names.join(", ")
    )))
}

/// How long a run of the job may take: its `timeout` (command and http
/// jobs), else its lease.
pub fn job_timeout(spec: &JobSpec) -> Duration {
    spec.action.timeout().unwrap_or(spec.lease)
}

/// The longest timeout over the manifest's jobs, with the job that has it
/// (`[defaults]`' timeout or lease without jobs).
pub fn longest_timeout(manifest: &Manifest) -> (Duration, Option<&JobSpec>) {
    match manifest.jobs.iter().max_by_key(|j| job_timeout(j)) {
        Some(job) => (job_timeout(job), Some(job)),
        None => (
            manifest.defaults.timeout.unwrap_or(manifest.defaults.lease),
            None,
        ),
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// `terminationGracePeriodSeconds`: on SIGTERM the runner stops claiming
/// and lets running jobs finish, so the longest timeout plus time to
/// record the outcome.
pub fn termination_grace(manifest: &Manifest) -> u64 {
    ceil_secs(longest_timeout(manifest).0) + GRACE_MARGIN
}

/// A tick's `activeDeadlineSeconds`: it waits for the jobs it started
/// within their timeouts, and no longer.
pub fn active_deadline(manifest: &Manifest) -> u64 {
    ceil_secs(longest_timeout(manifest).0) + TICK_MARGIN
}

/// A CronJob's `startingDeadlineSeconds` and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartingDeadline {
    pub seconds: u64,
    pub reason: String,
}

/// The smallest `starting_deadline` over the manifest's jobs, in whole
/// seconds, at least [`MIN_STARTING_DEADLINE`]: a tick that starts later
/// than that finds that job's slot already missed; the next minute's tick
/// plans every job again.
pub fn starting_deadline(manifest: &Manifest) -> StartingDeadline {
    let (deadline, what) = match manifest.jobs.iter().min_by_key(|j| j.starting_deadline) {
        Some(job) => (
            job.starting_deadline,
            format!(
                "the smallest starting_deadline of the manifest's jobs (job {}: {})",
                job.name.as_str(),
                format_duration(job.starting_deadline)
            ),
        ),
        None => (
            manifest.defaults.starting_deadline,
            format!(
                "the manifest's default starting_deadline ({})",
                format_duration(manifest.defaults.starting_deadline)
            ),
        ),
    };
    let seconds = deadline.as_secs();
    if seconds < MIN_STARTING_DEADLINE {
        return StartingDeadline {
            seconds: MIN_STARTING_DEADLINE,
            reason: format!(
                "{what} is shorter than the CronJob controller's 10 s check interval, which is the least that does not skip ticks that were on time"
            ),
        };
    }
    StartingDeadline {
        seconds,
        reason: what,
    }
}

/// `text` as comment lines for an entry `depth` spaces deep, wrapped so
/// that the lines end by about column 78.
fn wrap(text: &str, depth: usize) -> Vec<String> {
    let width = 78usize.saturating_sub(depth + 2).max(40);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + 1 + word.len() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn labels(name: &str, component: &str) -> Map {
    Map::new()
        .put("app.kubernetes.io/name", "cronslot")
        .put("app.kubernetes.io/instance", name)
        .put("app.kubernetes.io/component", component)
}

fn metadata(options: &Options, name: &str, component: &str, annotations: Option<Map>) -> Map {
    Map::new()
        .put("name", name)
        .put_opt("namespace", options.namespace.as_deref())
        .put("labels", labels(&options.name, component))
        .put_opt("annotations", annotations)
}

fn annotations(source: &Source<'_>) -> Map {
    Map::new()
        .put(MANIFEST_ANNOTATION, source.path.display().to_string())
        .put(HASH_ANNOTATION, source.hash.clone())
}

fn strings(items: &[&str]) -> Node {
    Node::Seq(items.iter().map(|s| Node::from(*s)).collect())
}

/// The cronslot container: `cronslot SUBCOMMAND MANIFEST [extra...]`, the
/// store URL in CRONSLOT_STORE from the Secret. `depth`: the column of the
/// container's keys.
fn container(options: &Options, subcommand: &str, extra: &[&str], depth: usize) -> Map {
    let manifest = manifest_path();
    let mut args = vec![subcommand, manifest.as_str()];
    args.extend_from_slice(extra);
    let mut c = Map::new()
        .put("name", CONTAINER)
        .put("image", options.image.as_str())
        .put("command", strings(&["cronslot"]))
        .put("args", strings(&args));
    c.push_commented(
        wrap(
            "The root filesystem is read-only: jobs start in /tmp, an emptyDir.",
            depth,
        ),
        "workingDir",
        "/tmp",
    );
    c.push_commented(
        wrap(
            &format!(
                "The store URL, from the Secret: `cronslot {subcommand}` reads {STORE_ENV} when --store is not given, which keeps the URL off its command line, and withholds it from the jobs' environment."
            ),
            depth,
        ),
        "env",
        vec![Node::from(
            Map::new().put("name", STORE_ENV).put(
                "valueFrom",
                Map::new().put(
                    "secretKeyRef",
                    Map::new()
                        .put("name", options.secret.as_str())
                        .put("key", SECRET_KEY),
                ),
            ),
        )],
    );
    c
}

const RESOURCES_COMMENT: &str =
    "The runner's own needs; add what the command jobs need (and limits to suit them).";

fn container_security() -> Map {
    Map::new()
        .put("allowPrivilegeEscalation", false)
        .put("readOnlyRootFilesystem", true)
        .put("capabilities", Map::new().put("drop", strings(&["ALL"])))
}

fn resources() -> Map {
    Map::new().put(
        "requests",
        Map::new().put("cpu", "50m").put("memory", "64Mi"),
    )
}

fn volume_mounts() -> Node {
    Node::Seq(vec![
        Map::new()
            .put("name", "manifest")
            .put("mountPath", MOUNT_DIR)
            .put("readOnly", true)
            .into(),
        Map::new()
            .put("name", "tmp")
            .put("mountPath", "/tmp")
            .into(),
    ])
}

fn volumes(options: &Options) -> Node {
    Node::Seq(vec![
        Map::new()
            .put("name", "manifest")
            .put(
                "configMap",
                Map::new().put("name", config_map_name(&options.name)),
            )
            .into(),
        Map::new()
            .put("name", "tmp")
            .put("emptyDir", Map::new().put("sizeLimit", "1Gi"))
            .into(),
    ])
}

/// The pod spec shared by both kinds, with the container given; `depth`:
/// the column of the pod spec's keys.
fn pod_spec(
    manifest: &Manifest,
    options: &Options,
    container: Map,
    restart: Option<&str>,
    depth: usize,
) -> Map {
    let (longest, job) = longest_timeout(manifest);
    let grace = termination_grace(manifest);
    let whose = job.map_or_else(String::new, |j| format!(" (job {})", j.name.as_str()));
    let mut spec = Map::new();
    if let Some(restart) = restart {
        spec.push("restartPolicy", restart);
    }
    spec.push_commented(
        wrap("cronslot does not call the Kubernetes API.", depth),
        "automountServiceAccountToken",
        false,
    );
    spec.push_commented(
        wrap(
            &format!(
                "On SIGTERM the runner stops claiming and lets running jobs finish: the longest job timeout{whose}, {}, + {GRACE_MARGIN} s to record the outcome.",
                format_duration(longest)
            ),
            depth,
        ),
        "terminationGracePeriodSeconds",
        grace,
    );
    spec.push_commented(
        wrap(
            "A numeric non-root user, so that the kubelet can verify runAsNonRoot: the image must run as it.",
            depth,
        ),
        "securityContext",
        Map::new()
            .put("runAsNonRoot", true)
            .put("runAsUser", RUN_AS_USER)
            .put("runAsGroup", RUN_AS_USER)
            .put("seccompProfile", Map::new().put("type", "RuntimeDefault")),
    );
    spec.push("containers", vec![Node::from(container)]);
    spec.push("volumes", volumes(options));
    spec
}

fn config_map(source: &Source<'_>, options: &Options, text: &mut String) {
    let comment = comment_lines(
        &format!(
            "The manifest, mounted read-only at {MOUNT_DIR}. The pod template carries its hash, so applying a changed manifest rolls the pods."
        ),
        "",
        0,
    );
    let mut root = Map::new();
    root.push_commented(comment, "apiVersion", "v1");
    root.push("kind", "ConfigMap");
    root.push(
        "metadata",
        metadata(
            options,
            &config_map_name(&options.name),
            "manifest",
            Some(annotations(source)),
        ),
    );
    write_document(text, &root.into());
    let manifest_text = source.text;
    text.push_str("data:\n");
    let _ = write!(text, "  {}: ", scalar_text(MANIFEST_KEY));
    match literal_block(manifest_text, 4) {
        Some(block) => text.push_str(&block),
        None => {
            text.push_str(&serde_json::to_string(manifest_text).unwrap_or_default());
            text.push('\n');
        }
    }
}

/// `text` as a YAML literal block scalar (`|`, `|-` or `|+`, then the
/// lines indented by `indent`), or `None` when a literal block cannot hold
/// it exactly (control characters, carriage returns, leading whitespace).
pub fn literal_block(text: &str, indent: usize) -> Option<String> {
    let printable = |c: char| {
        c == '\t'
            || c == '\n'
            || (' '..='~').contains(&c)
            || (c >= '\u{A0}'
                && !matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{FEFF}' | '\u{FFFE}' | '\u{FFFF}'
                ))
    };
    // The first line with content sets the block's indentation: it may
    // not begin with whitespace (empty lines before it are fine).
    let first = text.split('\n').find(|l| !l.is_empty())?;
    if first.starts_with([' ', '\t']) || !text.chars().all(printable) {
        return None;
    }
    let body = text.trim_end_matches('\n');
    let trailing = text.len() - body.len();
    let indicator = match trailing {
        0 => "|-",
        1 => "|",
        _ => "|+",
    };
    let mut out = format!("{indicator}\n");
    for line in body.split('\n') {
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
        out.push('\n');
    }
    for _ in 1..trailing {
        out.push('\n');
    }
    Some(out)
}

fn deployment(source: &Source<'_>, options: &Options) -> Node {
    let manifest = source.manifest;
    let health = format!("0.0.0.0:{HEALTH_PORT}");
    let probe = |path: &str, failures: u32| -> Map {
        Map::new()
            .put(
                "httpGet",
                Map::new().put("path", path).put("port", HEALTH_PORT_NAME),
            )
            .put("periodSeconds", 10u32)
            .put("timeoutSeconds", 5u32)
            .put("failureThreshold", failures)
    };
    let mut c = container(options, "run", &["--health-listen", &health], 10);
    c.push(
        "ports",
        vec![Node::from(
            Map::new()
                .put("name", HEALTH_PORT_NAME)
                .put("containerPort", u32::from(HEALTH_PORT)),
        )],
    );
    c.push_commented(
        wrap(
            "200 while every worker loop is alive; 503 when one has not looped within its poll bound.",
            10,
        ),
        "livenessProbe",
        probe(LIVENESS_PATH, 3),
    );
    c.push_commented(
        wrap("200 when the last store operation succeeded.", 10),
        "readinessProbe",
        probe(READINESS_PATH, 2),
    );
    c.push_commented(wrap(RESOURCES_COMMENT, 10), "resources", resources());
    c.push("securityContext", container_security());
    c.push("volumeMounts", volume_mounts());
    let template = Map::new()
        .put(
            "metadata",
            Map::new()
                .put("labels", labels(&options.name, "runner"))
                .put(
                    "annotations",
                    Map::new().put(HASH_ANNOTATION, source.hash.clone()),
                ),
        )
        .put("spec", pod_spec(manifest, options, c, None, 6));
    let mut spec = Map::new();
    spec.push_commented(
        wrap(
            "Each replica plans every job and competes for each slot; the store lets one claim win, so a slot runs once however many replicas run.",
            2,
        ),
        "replicas",
        options.replicas,
    );
    spec.push(
        "selector",
        Map::new().put(
            "matchLabels",
            Map::new()
                .put("app.kubernetes.io/name", "cronslot")
                .put("app.kubernetes.io/instance", options.name.as_str())
                .put("app.kubernetes.io/component", "runner"),
        ),
    );
    spec.push("template", template);
    Map::new()
        .put("apiVersion", "apps/v1")
        .put("kind", "Deployment")
        .put(
            "metadata",
            metadata(options, &options.name, "runner", Some(annotations(source))),
        )
        .put("spec", spec)
        .into()
}

fn cron_job(source: &Source<'_>, options: &Options) -> Node {
    let manifest = source.manifest;
    let deadline = starting_deadline(manifest);
    let active = active_deadline(manifest);
    let (longest, job) = longest_timeout(manifest);
    let whose = job.map_or_else(String::new, |j| format!(" (job {})", j.name.as_str()));
    let mut c = container(options, "tick", &[], 14);
    c.push_commented(wrap(RESOURCES_COMMENT, 14), "resources", resources());
    c.push("securityContext", container_security());
    c.push("volumeMounts", volume_mounts());
    let pod = Map::new()
        .put(
            "metadata",
            Map::new().put("labels", labels(&options.name, "tick")).put(
                "annotations",
                Map::new().put(HASH_ANNOTATION, source.hash.clone()),
            ),
        )
        .put("spec", pod_spec(manifest, options, c, Some("Never"), 10));
    let mut job_spec = Map::new();
    job_spec.push_commented(
        wrap(
            "A failed tick is not retried: the next minute's tick plans every job again.",
            6,
        ),
        "backoffLimit",
        0u32,
    );
    job_spec.push_commented(
        wrap(
            &format!(
                "A tick waits for the jobs it started within their timeouts: the longest{whose}, {}, + {TICK_MARGIN} s to start, plan and record; no longer, since a tick still running holds back the next (concurrencyPolicy Forbid).",
                format_duration(longest)
            ),
            6,
        ),
        "activeDeadlineSeconds",
        active,
    );
    job_spec.push("template", pod);
    let mut spec = Map::new();
    spec.push_commented(
        wrap(
            "Every minute, in UTC: `cronslot tick` plans every job at the time it runs, in the job's own zone, and runs what is due.",
            2,
        ),
        "schedule",
        TICK_SCHEDULE,
    );
    spec.push("timeZone", TIME_ZONE);
    spec.push_commented(
        wrap(
            "One tick at a time; a slot runs once however ticks overlap, but a tick that is still running has the jobs the next would start.",
            2,
        ),
        "concurrencyPolicy",
        CONCURRENCY_POLICY,
    );
    spec.push_commented(
        wrap(
            &format!(
                "A tick that cannot start within {} s of its minute is skipped: {}. A later tick would find that job's slot missed; the next minute's tick plans every job again.",
                deadline.seconds, deadline.reason
            ),
            2,
        ),
        "startingDeadlineSeconds",
        deadline.seconds,
    );
    spec.push_commented(
        wrap(
            "A tick a minute: keep the last success, and the last failures' pods for their logs.",
            2,
        ),
        "successfulJobsHistoryLimit",
        1u32,
    );
    spec.push("failedJobsHistoryLimit", 3u32);
    spec.push(
        "jobTemplate",
        Map::new()
            .put(
                "metadata",
                Map::new().put("labels", labels(&options.name, "tick")),
            )
            .put("spec", job_spec),
    );
    Map::new()
        .put("apiVersion", "batch/v1")
        .put("kind", "CronJob")
        .put(
            "metadata",
            metadata(options, &options.name, "tick", Some(annotations(source))),
        )
        .put("spec", spec)
        .into()
}

fn header(source: &Source<'_>, options: &Options) -> Vec<String> {
    let manifest = source.manifest;
    let path = source.path.display();
    let kind = match options.kind {
        KubernetesKind::Deployment => "deployment",
        KubernetesKind::CronJob => "cronjob",
    };
    let mut lines = comment_lines(
        &format!(
            "Generated by `cronslot render kubernetes --kind {kind}` from {path} (manifest fnv1a64 {}). Do not edit: change the manifest and render again; `cronslot check THIS_FILE --manifest {path}` compares this file with the manifest.",
            source.hash
        ),
        "",
        0,
    );
    lines.push(String::new());
    let what = match options.kind {
        KubernetesKind::Deployment => format!(
            "A Deployment of {} `cronslot run` replicas: each plans every job and competes for each slot; the store lets one claim win, so every slot runs once. More replicas mean less downtime, not more runs.",
            options.replicas
        ),
        KubernetesKind::CronJob => "A CronJob that runs `cronslot tick` every minute: each tick plans every job, runs what is due and waits for it within the jobs' timeouts.".to_string(),
    };
    lines.extend(comment_lines(&what, "", 0));
    lines.extend(comment_lines(
        &format!(
            "The store URL comes from the Secret {} (key {SECRET_KEY}), never from this file. It must be a store every pod shares (postgres://…, redis://… or dynamodb://…, credentials from the Secret or the pod's identity), not a file inside a pod; create it once with `cronslot init --store URL`, then `kubectl create secret generic {} --from-literal={SECRET_KEY}='dynamodb://TABLE?region=REGION'`.",
            options.secret, options.secret
        ),
        "",
        0,
    ));
    lines.extend(comment_lines(
        &format!(
            "The image is {}: pin your own (--image, by digest), with the cronslot binary and whatever the command jobs run.",
            options.image
        ),
        "",
        0,
    ));
    lines.push(String::new());
    lines.push("Jobs:".into());
    let width = manifest
        .jobs
        .iter()
        .map(|j| j.name.as_str().len())
        .max()
        .unwrap_or(0);
    for spec in &manifest.jobs {
        lines.push(format!(
            "  {:width$}  {:?} in {}, timeout {}, starting deadline {}",
            spec.name.as_str(),
            spec.schedule_text,
            spec.timezone,
            format_duration(job_timeout(spec)),
            format_duration(spec.starting_deadline)
        ));
    }
    lines
}

pub fn render(source: &Source<'_>, options: &Options) -> Rendered {
    let mut text = String::new();
    for line in header(source, options) {
        if line.is_empty() {
            text.push_str("#\n");
        } else {
            let _ = writeln!(text, "# {line}");
        }
    }
    text.push_str("---\n");
    config_map(source, options, &mut text);
    text.push_str("---\n");
    let workload = match options.kind {
        KubernetesKind::Deployment => deployment(source, options),
        KubernetesKind::CronJob => cron_job(source, options),
    };
    write_document(&mut text, &workload);
    Rendered {
        text,
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use saphyr::{LoadableYamlNode, Yaml};

    #[test]
    fn dns_labels() {
        assert!(is_dns_label("cronslot", 63));
        assert!(is_dns_label("a-1", 63));
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"a".repeat(64)] {
            assert!(!is_dns_label(bad, 63), "{bad:?}");
        }
        assert!(is_dns_subdomain("jobs.store-1"));
        assert!(!is_dns_subdomain("jobs..store"));
        assert!(check_name(&"a".repeat(53), KubernetesKind::CronJob).is_err());
        assert!(check_name(&"a".repeat(53), KubernetesKind::Deployment).is_ok());
    }

    #[test]
    fn default_names_come_from_the_file_stem() {
        let d = KubernetesKind::Deployment;
        assert_eq!(default_name(Path::new("x/cronslot.toml"), d), "cronslot");
        assert_eq!(default_name(Path::new("My_Jobs.toml"), d), "my-jobs");
        assert_eq!(default_name(Path::new("__.toml"), d), "cronslot");
        let long = format!("{}.toml", "a".repeat(80));
        assert_eq!(
            default_name(Path::new(&long), KubernetesKind::CronJob).len(),
            52
        );
    }

    #[test]
    fn literal_blocks_read_back_exactly() {
        for text in [
            "a = 1\n",
            "a = 1",
            "a = 1\n\n\n",
            "# c\n\n[x]\n  y = \"two  spaces\"  \n\tz = 1\n",
            "a = \"é ✓\"\n---\n...\n",
            "\n\na = 1\n",
        ] {
            let block = literal_block(text, 4).expect("representable");
            let doc = format!("k: {block}");
            let docs = Yaml::load_from_str(&doc).expect("yaml");
            assert_eq!(docs[0]["k"].as_str(), Some(text), "{doc}");
        }
        for text in ["", "\n\n", " a", "\n a", "\n  \na", "a\r\nb", "a\u{7}"] {
            assert!(literal_block(text, 4).is_none(), "{text:?}");
        }
    }
}
