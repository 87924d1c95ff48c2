//! The values computed from the manifest: the longest job timeout, the
//! termination grace, a tick's active deadline and the CronJob's
//! starting deadline with its reason. Apart because `check`
//! (check/kubernetes.rs) compares a file with these same values.

use super::*;

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

/// The runner's drain grace (`cronslot run --grace`), in seconds: on
/// SIGTERM it stops claiming and lets running jobs go on as long as the
/// longest of them may take.
pub fn drain_grace(manifest: &Manifest) -> u64 {
    ceil_secs(longest_timeout(manifest).0)
}

/// `terminationGracePeriodSeconds`: the runner's drain grace plus time to
/// record the last outcomes and exit before the kubelet's SIGKILL.
pub fn termination_grace(manifest: &Manifest) -> u64 {
    drain_grace(manifest) + GRACE_MARGIN
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
