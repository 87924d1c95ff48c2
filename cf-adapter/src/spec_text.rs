//! A job's spec as a self-contained one-job manifest in the precompiled
//! form (JSON), so the Worker can hand the Durable Object exactly the spec
//! it plans with.
//!
//! Why this form: the object validates it again with the same rules every
//! other entry point applies (a spec the Worker sends can never mean
//! something different inside the object), it carries every resolved
//! policy (no `[defaults]` to merge, so the spec hash is the job's own),
//! and loading it needs only serde_json, which the Worker links anyway,
//! not a TOML parser.

use cronslot_core::manifest::{Defaults, JobSpec, Manifest, load_precompiled};

/// Renders `spec` as a precompiled manifest holding only that job.
pub fn encode_spec(spec: &JobSpec) -> String {
    let manifest = Manifest {
        defaults: Defaults::default(),
        jobs: vec![spec.clone()],
        templates: Vec::new(),
        warnings: Vec::new(),
    };
    manifest.to_precompiled(spec.name.as_str())
}

/// Parses a spec written by [`encode_spec`] (or any one-job precompiled
/// manifest).
pub fn decode_spec(text: &str) -> Result<JobSpec, String> {
    let manifest = load_precompiled(text).map_err(|e| e.to_string())?;
    let count = manifest.jobs.len();
    let mut jobs = manifest.jobs.into_iter();
    match (jobs.next(), count) {
        (Some(spec), 1) => Ok(spec),
        _ => Err(format!("a job spec holds exactly one job, not {count}")),
    }
}

/// Renders a dynamic job as a precompiled manifest holding only it, with
/// the zones its schedules may name ([`JobTemplate::zones`]): what a
/// schedule object needs to write and list the job's schedules.
#[cfg(feature = "schedules")]
pub fn encode_template(template: &cronslot_core::manifest::JobTemplate) -> String {
    let manifest = Manifest {
        defaults: Defaults::default(),
        jobs: Vec::new(),
        templates: vec![template.clone()],
        warnings: Vec::new(),
    };
    manifest.to_precompiled(template.name.as_str())
}

/// Parses a dynamic job written by [`encode_template`].
#[cfg(feature = "schedules")]
pub fn decode_template(text: &str) -> Result<cronslot_core::manifest::JobTemplate, String> {
    let manifest = load_precompiled(text).map_err(|e| e.to_string())?;
    let (jobs, count) = (manifest.jobs.len(), manifest.templates.len());
    match (manifest.templates.into_iter().next(), jobs, count) {
        (Some(template), 0, 1) => Ok(template),
        _ => Err(format!(
            "a dynamic job's text holds exactly one dynamic job, not {count} (and {jobs} jobs)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::manifest::parse_manifest;

    fn jobs(text: &str) -> Vec<JobSpec> {
        parse_manifest(text, "t.toml").expect("valid").jobs
    }

    #[test]
    fn every_kind_of_job_round_trips_with_its_hash() {
        let manifest = r#"
[defaults]
timezone = "Europe/Berlin"
lease = "2m"
retry = { max_attempts = 5, backoff = "10s", max_backoff = "1h" }

[[job]]
name = "plain"
schedule = "*/5 * * * *"

[[job]]
name = "dst-strict"
schedule = "30 2 * * *"
timezone = "America/New_York"
dst_gap = "skip"
dst_overlap = "twice"
trigger = "dedicated"
catch_up = "all"
max_catch_up = 7
overlap = "allow"
max_concurrency = 3
delivery = "at_most_once"
skew_margin = "9s"
paused = true
start_at = "2026-01-01T00:00:00Z"
end_at = "2027-01-01T00:00:00Z"
stale_after = "3d"
history = { succeeded = 4, failed = 9 }

[[job]]
name = "cmd"
schedule = "0 * * * *"
overlap = "replace"
command = ["./run.sh", "a \"quoted\" arg", "ünïcode\ttab"]
timeout = "90s"
env = { MODE = "fast", "WITH SPACE" = "x=y" }

[[job]]
name = "hook"
schedule = "0 9 * * MON-FRI"
http = { url = "https://example.com/h?a=1&b=2", method = "PUT", headers = { Authorization = "Bearer x" } }
timeout = "30s"
"#;
        for spec in jobs(manifest) {
            let text = encode_spec(&spec);
            let back = decode_spec(&text).unwrap_or_else(|e| panic!("{text}\n{e}"));
            assert_eq!(back, spec, "{text}");
            assert_eq!(back.spec_hash(), spec.spec_hash());
        }
    }

    #[test]
    fn a_spec_with_two_jobs_or_none_is_refused() {
        let two = parse_manifest(
            "[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\n[[job]]\nname = \"b\"\nschedule = \"* * * * *\"\n",
            "t.toml",
        )
        .unwrap();
        let e = decode_spec(&two.to_precompiled("t")).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        assert!(decode_spec("name = ").is_err());
        assert!(decode_spec("{}").is_err());
    }
}
