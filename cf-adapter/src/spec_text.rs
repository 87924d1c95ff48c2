//! A job's spec as a self-contained `[[job]]` table, so the Worker can hand
//! the Durable Object exactly the spec it plans with.
//!
//! Why text and not a binary form: the object re-validates it with the same
//! manifest parser every other entry point uses, so a spec the Worker sends
//! can never mean something different inside the object. Every key is
//! written explicitly (no `[defaults]`), so the table stands alone and its
//! spec hash is the job's own.

use std::fmt::Write as _;

use cronslot_core::manifest::{
    Action, CatchUp, Delivery, JobSpec, Overlap, Trigger, format_duration, parse_manifest,
};
use cronslot_core::schedule::{DstGap, DstOverlap};

/// Renders `spec` as a standalone manifest holding one `[[job]]` table.
pub fn job_table(spec: &JobSpec) -> String {
    let mut out = String::from("[[job]]\n");
    let mut key = |k: &str, v: String| {
        let _ = writeln!(out, "{k} = {v}");
    };
    key("name", quote(spec.name.as_str()));
    key("schedule", quote(&spec.schedule_text));
    key("timezone", quote(&spec.timezone));
    key(
        "trigger",
        quote(match spec.trigger {
            Trigger::Tick => "tick",
            Trigger::Dedicated => "dedicated",
        }),
    );
    key("lease", duration(spec.lease));
    key("starting_deadline", duration(spec.starting_deadline));
    key(
        "catch_up",
        quote(match spec.catch_up {
            CatchUp::Latest => "latest",
            CatchUp::All => "all",
            CatchUp::None => "none",
        }),
    );
    key("max_catch_up", spec.max_catch_up.to_string());
    match spec.overlap {
        Overlap::Forbid => key("overlap", quote("forbid")),
        Overlap::Replace => key("overlap", quote("replace")),
        Overlap::Allow { max_concurrency } => {
            key("overlap", quote("allow"));
            key("max_concurrency", max_concurrency.to_string());
        }
    }
    key(
        "retry",
        format!(
            "{{ max_attempts = {}, backoff = {}, max_backoff = {}, past_next_slot = {} }}",
            spec.retry.max_attempts,
            duration(spec.retry.backoff),
            duration(spec.retry.max_backoff),
            spec.retry.past_next_slot
        ),
    );
    key(
        "delivery",
        quote(match spec.delivery {
            Delivery::AtLeastOnce => "at_least_once",
            Delivery::AtMostOnce => "at_most_once",
        }),
    );
    let policy = spec.dst_policy();
    key(
        "dst_gap",
        quote(match policy.gap {
            DstGap::Shift => "shift",
            DstGap::Skip => "skip",
        }),
    );
    key(
        "dst_overlap",
        quote(match policy.overlap {
            DstOverlap::Once => "once",
            DstOverlap::Twice => "twice",
        }),
    );
    key("skew_margin", duration(spec.skew_margin));
    key("paused", spec.paused.to_string());
    if let Some(t) = spec.start_at {
        key("start_at", quote(&t.to_string()));
    }
    if let Some(t) = spec.end_at {
        key("end_at", quote(&t.to_string()));
    }
    if let Some(d) = spec.stale_after {
        key("stale_after", duration(d));
    }
    key(
        "history",
        format!(
            "{{ succeeded = {}, failed = {} }}",
            spec.history.succeeded, spec.history.failed
        ),
    );
    match &spec.action {
        Action::Function => {}
        Action::Command { argv, timeout, env } => {
            let argv: Vec<String> = argv.iter().map(|a| quote(a)).collect();
            key("command", format!("[{}]", argv.join(", ")));
            key("timeout", duration(*timeout));
            if !env.is_empty() {
                key("env", inline_table(env.iter()));
            }
        }
        Action::Http {
            url,
            method,
            headers,
            timeout,
        } => {
            let mut http = format!(
                "{{ url = {}, method = {}",
                quote(url),
                quote(method.as_str())
            );
            if !headers.is_empty() {
                let _ = write!(http, ", headers = {}", inline_table(headers.iter()));
            }
            http.push_str(" }");
            key("http", http);
            key("timeout", duration(*timeout));
        }
    }
    out
}

/// Parses a table written by [`job_table`] (or any one-job manifest).
pub fn parse_job_table(text: &str) -> Result<JobSpec, String> {
    let manifest = parse_manifest(text, "job spec").map_err(|e| e.to_string())?;
    let count = manifest.jobs.len();
    let mut jobs = manifest.jobs.into_iter();
    match (jobs.next(), count) {
        (Some(spec), 1) => Ok(spec),
        _ => Err(format!(
            "a job spec holds exactly one [[job]] table, not {count}"
        )),
    }
}

/// A TOML basic string. JSON's string escapes are a subset of TOML's, so
/// serde_json writes a valid one for any text.
fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_string())
}

fn duration(d: std::time::Duration) -> String {
    quote(&format_duration(d))
}

fn inline_table<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> String {
    let items: Vec<String> = pairs
        .map(|(k, v)| format!("{} = {}", quote(k), quote(v)))
        .collect();
    format!("{{ {} }}", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let text = job_table(&spec);
            let back = parse_job_table(&text).unwrap_or_else(|e| panic!("{text}\n{e}"));
            assert_eq!(back, spec, "{text}");
            assert_eq!(back.spec_hash(), spec.spec_hash());
        }
    }

    #[test]
    fn a_table_with_two_jobs_is_refused() {
        let text = "[[job]]\nname = \"a\"\nschedule = \"* * * * *\"\n[[job]]\nname = \"b\"\nschedule = \"* * * * *\"\n";
        let e = parse_job_table(text).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        assert!(parse_job_table("name = ").is_err());
    }
}
