//! The pieces both workloads share: labels, metadata and annotations,
//! the cronslot container (its command, working directory and store from
//! the Secret), its security context, resources and mounts, the volumes
//! and the pod spec, and the wrapping of the comments rendered with
//! them.

use super::*;

/// `text` as comment lines for an entry `depth` spaces deep, wrapped so
/// that the lines end by about column 78.
pub(super) fn wrap(text: &str, depth: usize) -> Vec<String> {
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

pub(super) fn labels(name: &str, component: &str) -> Map {
    Map::new()
        .put("app.kubernetes.io/name", "cronslot")
        .put("app.kubernetes.io/instance", name)
        .put("app.kubernetes.io/component", component)
}

pub(super) fn metadata(
    options: &Options,
    name: &str,
    component: &str,
    annotations: Option<Map>,
) -> Map {
    Map::new()
        .put("name", name)
        .put_opt("namespace", options.namespace.as_deref())
        .put("labels", labels(&options.name, component))
        .put_opt("annotations", annotations)
}

pub(super) fn annotations(source: &Source<'_>) -> Map {
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
pub(super) fn container(options: &Options, subcommand: &str, extra: &[&str], depth: usize) -> Map {
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

pub(super) const RESOURCES_COMMENT: &str =
    "The runner's own needs; add what the command jobs need (and limits to suit them).";

pub(super) fn container_security() -> Map {
    Map::new()
        .put("allowPrivilegeEscalation", false)
        .put("readOnlyRootFilesystem", true)
        .put("capabilities", Map::new().put("drop", strings(&["ALL"])))
}

pub(super) fn resources() -> Map {
    Map::new().put(
        "requests",
        Map::new().put("cpu", "50m").put("memory", "64Mi"),
    )
}

pub(super) fn volume_mounts() -> Node {
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
pub(super) fn pod_spec(
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
                "On SIGTERM the runner stops claiming and lets running jobs finish for its --grace (a Deployment's), the longest job timeout{whose}, {}; + {GRACE_MARGIN} s to record the outcome. A run still going then is left to its lease, and retried elsewhere.",
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
