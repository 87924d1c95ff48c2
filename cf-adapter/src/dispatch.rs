//! Which jobs a Cron Trigger event serves.
//!
//! The tick (`* * * * *`) plans every job of the manifest: tick-mode jobs
//! are due there, and for dedicated jobs it is the backstop that serves
//! their retries (Cloudflare does not re-deliver a failed scheduled event)
//! and their slots when the dedicated cron was not deployed (the account's
//! trigger limit) or did not fire. A dedicated cron serves the jobs whose
//! exact Cloudflare translation it is, with the event's scheduled time as
//! the slot. A cron that is neither (a stale wrangler config) is served
//! like a tick and reported, so nothing stops running while it is fixed.
//!
//! The Worker does not claim every job a tick could serve: it serves the
//! tick with the runtime's `tick` over a `TickPlan` of every job
//! ([`tick_planned`]), which claims only the jobs with a slot since the
//! last tick and those the tick object woke (docs/design.md §11).

use cronslot_core::coord::Trigger;
use cronslot_core::manifest::{JobSpec, Manifest};
use cronslot_core::translate::{Platform, dedicated};
use jiff::Timestamp;

/// The tick cron every cronslot Worker has.
pub const TICK_CRON: &str = "* * * * *";

/// The Cloudflare cron of a dedicated job, when its translation is exact
/// (UTC, the platform's day rules); `None` means the job runs on the tick.
pub fn dedicated_cron(spec: &JobSpec) -> Option<String> {
    dedicated(spec, Platform::Cloudflare)
        .and_then(Result::ok)
        .map(|t| t.expression)
}

/// Whether `cron` is the tick's, in any spacing.
pub fn is_tick(cron: &str) -> bool {
    normalise(cron) == TICK_CRON
}

/// The jobs whose slots a Worker's tick plans from the manifest: every job.
/// Tick-mode jobs are served there; a dedicated job's cron may not be
/// deployed (`cronslot render` caps the crons at the account's limit) or
/// may not fire, and the tick is its backstop, as it always was.
pub fn tick_planned(_spec: &JobSpec) -> bool {
    true
}

/// The jobs an event serves, each with its trigger.
#[derive(Debug)]
pub struct Dispatch<'m> {
    /// The jobs to serve, in manifest order, each with the trigger to
    /// claim it with: `Tick`, or the event's slot for a dedicated cron.
    pub jobs: Vec<(&'m JobSpec, Trigger)>,
    /// The event's cron matched no job and is not the tick.
    pub unknown_cron: bool,
}

/// `cron` is the event's cron as configured; `scheduled` its scheduled
/// time.
pub fn dispatch<'m>(manifest: &'m Manifest, cron: &str, scheduled: Timestamp) -> Dispatch<'m> {
    let cron = normalise(cron);
    let tick = || Dispatch {
        jobs: manifest.jobs.iter().map(|j| (j, Trigger::Tick)).collect(),
        unknown_cron: false,
    };
    if cron == TICK_CRON {
        return tick();
    }
    let jobs: Vec<_> = manifest
        .jobs
        .iter()
        .filter(|j| dedicated_cron(j).is_some_and(|c| normalise(&c) == cron))
        .map(|j| (j, Trigger::Slot(scheduled)))
        .collect();
    if jobs.is_empty() {
        return Dispatch {
            unknown_cron: true,
            ..tick()
        };
    }
    Dispatch {
        jobs,
        unknown_cron: false,
    }
}

/// Whitespace runs collapse and names are uppercased, as Cloudflare reads
/// them.
fn normalise(cron: &str) -> String {
    cron.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_uppercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::manifest::parse_manifest;

    const MANIFEST: &str = r#"
[[job]]
name = "every-minute"
schedule = "* * * * *"

[[job]]
name = "weekday-nine"
schedule = "0 9 * * MON-FRI"
trigger = "dedicated"

[[job]]
name = "zoned"
schedule = "0 9 * * *"
timezone = "America/New_York"
trigger = "dedicated"
"#;

    #[test]
    fn tick_serves_every_job_and_a_dedicated_cron_its_own() {
        let m = parse_manifest(MANIFEST, "m.toml").unwrap();
        let t: Timestamp = "2026-01-05T09:00:00Z".parse().unwrap();
        let d = dispatch(&m, "*  * * * *", t);
        assert_eq!(d.jobs.len(), 3);
        assert!(d.jobs.iter().all(|(_, tr)| *tr == Trigger::Tick));

        let cron = dedicated_cron(&m.jobs[1]).expect("UTC weekday job is exact");
        // Cloudflare counts weekdays 1-7 from Sunday: Monday-Friday is 2-6.
        assert_eq!(cron, "0 9 * * 2-6");
        let d = dispatch(&m, &cron, t);
        assert_eq!(d.jobs.len(), 1);
        assert_eq!(d.jobs[0].0.name.as_str(), "weekday-nine");
        assert_eq!(d.jobs[0].1, Trigger::Slot(t));
        // A zoned job cannot be a UTC cron: it stays on the tick.
        assert_eq!(dedicated_cron(&m.jobs[2]), None);
        // Both day fields restricted: Cloudflare ORs them as Vixie does, so
        // the job gets its own cron.
        let either = parse_manifest(
            "[[job]]\nname = \"first-or-monday\"\nschedule = \"0 12 1 * MON\"\ntrigger = \"dedicated\"\n",
            "m.toml",
        )
        .unwrap();
        assert_eq!(
            dedicated_cron(&either.jobs[0]).as_deref(),
            Some("0 12 1 * 2")
        );
    }

    #[test]
    fn an_unknown_cron_is_served_like_a_tick_and_flagged() {
        let m = parse_manifest(MANIFEST, "m.toml").unwrap();
        let t: Timestamp = "2026-01-05T09:00:00Z".parse().unwrap();
        let d = dispatch(&m, "5 4 * * *", t);
        assert!(d.unknown_cron);
        assert_eq!(d.jobs.len(), 3);
    }
}
