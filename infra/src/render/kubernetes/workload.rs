//! The two workloads: a Deployment of `cronslot run` replicas with its
//! health probes, or a CronJob of `cronslot tick` every minute with its
//! deadlines. Apart from the pod they share (pod.rs).

use super::*;

pub(super) fn deployment(source: &Source<'_>, options: &Options) -> Node {
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
    let grace = format!("{}s", drain_grace(manifest));
    let mut c = container(
        options,
        "run",
        &["--health-listen", &health, "--grace", &grace],
        10,
    );
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
        wrap(
            "200 when the last store operation succeeded; 503 from SIGTERM on, while the runner drains.",
            10,
        ),
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

pub(super) fn cron_job(source: &Source<'_>, options: &Options) -> Node {
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
