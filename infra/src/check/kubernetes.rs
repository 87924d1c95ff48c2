//! Checking a Kubernetes YAML (`render kubernetes`) against the manifest:
//! the manifest embedded in its ConfigMap, job by job (schedules by fire
//! times, zones, settings), and the Deployment or CronJob that runs it
//! (the command on the mounted manifest, the store from a Secret, the
//! tick's schedule and deadlines).
//!
//! This module reads the file and walks its objects; [`workload`] checks
//! what runs the jobs (the Deployment or CronJob, its pod and the
//! cronslot container's mounted manifest), [`command`] that container's
//! command line (its store from a Secret, `run`'s flags and probes), and
//! [`embedded`] the manifest a ConfigMap holds, job by job.

mod command;
mod embedded;
mod workload;

use std::collections::BTreeSet;

use cronslot_core::manifest::{Action, Manifest};
use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::Report;
use super::fires::Span;
use crate::exit::Failure;
use crate::render::kubernetes::HASH_ANNOTATION;
use crate::render::plan::manifest_hash;

use embedded::compare_manifests;
use workload::{cron_job, deployment, grace, workload};

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
