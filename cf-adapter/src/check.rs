//! What a Worker refuses to start with: a manifest job it cannot run, or a
//! registered function no job uses (a typo that would leave the real job
//! without its code).

use cronslot_core::manifest::{Action, Manifest};

/// Every problem, one sentence each; empty when the Worker can run every
/// job.
pub fn check<'a>(manifest: &Manifest, registered: impl Iterator<Item = &'a str>) -> Vec<String> {
    let registered: Vec<&str> = registered.collect();
    let mut problems = Vec::new();
    for job in &manifest.jobs {
        let name = job.name.as_str();
        match &job.action {
            Action::Function if !registered.contains(&name) => problems.push(format!(
                "job {name:?} runs a Rust function, but none is registered under that name"
            )),
            Action::Command { .. } => problems.push(format!(
                "job {name:?} is a command job; a Worker has no processes (use a Rust function or an http job)"
            )),
            Action::Http { .. } if registered.contains(&name) => problems.push(format!(
                "job {name:?} is an http job, but a function is also registered under its name"
            )),
            _ => {}
        }
    }
    for name in registered {
        if !manifest.jobs.iter().any(|j| j.name.as_str() == name) {
            problems.push(format!(
                "a function is registered for {name:?}, but the manifest has no such job"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::manifest::parse_manifest;

    #[test]
    fn missing_extra_and_unrunnable_jobs_are_named() {
        let m = parse_manifest(
            r#"
[[job]]
name = "fn-job"
schedule = "* * * * *"

[[job]]
name = "cmd"
schedule = "* * * * *"
command = ["true"]

[[job]]
name = "hook"
schedule = "* * * * *"
http = { url = "https://example.com/" }
"#,
            "m.toml",
        )
        .unwrap();
        assert!(
            check(&m, ["fn-job"].into_iter()).len() == 1,
            "only the command job"
        );
        let problems = check(&m, ["typo", "hook"].into_iter());
        let all = problems.join("\n");
        assert!(all.contains("\"fn-job\" runs a Rust function"), "{all}");
        assert!(all.contains("\"cmd\" is a command job"), "{all}");
        assert!(all.contains("\"hook\" is an http job"), "{all}");
        assert!(all.contains("registered for \"typo\""), "{all}");
    }
}
