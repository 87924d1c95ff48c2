//! The policies a job and `[defaults]` share, as the file writes them, and
//! their checks: what a loaded policy must satisfy, with the rules the TOML
//! path applies. Kept apart from the layout of version 2 (`patch.rs`),
//! which only says which of them a job writes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::patch::PolicyPatch;
use super::{DurationText, Problems, Text, Zones, duration};
use crate::manifest::duration::format_duration;
use crate::manifest::{
    CatchUp, Defaults, Delivery, HistoryLimits, Overlap, RetryPolicy, Trigger, defaults,
};
use crate::schedule::{DstGap, DstOverlap, DstPolicy, Zone};

#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum OverlapMode {
    Forbid,
    Allow,
    Replace,
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RetryDoc<'a> {
    pub(super) max_attempts: u32,
    #[serde(borrow)]
    pub(super) backoff: DurationText<'a>,
    #[serde(borrow)]
    pub(super) max_backoff: DurationText<'a>,
    pub(super) past_next_slot: bool,
}

#[derive(Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct HistoryDoc {
    pub(super) succeeded: u32,
    pub(super) failed: u32,
}

/// The policies a job and `[defaults]` share, every one of them, as text:
/// a job's is its [`PolicyPatch`] over the defaults'.
pub(super) struct PolicyDoc<'a> {
    pub(super) timezone: Text<'a>,
    pub(super) trigger: Trigger,
    pub(super) lease: DurationText<'a>,
    pub(super) starting_deadline: DurationText<'a>,
    pub(super) catch_up: CatchUp,
    pub(super) max_catch_up: u32,
    pub(super) overlap: OverlapMode,
    /// Only with `overlap = "allow"`.
    pub(super) max_concurrency: Option<u32>,
    pub(super) retry: RetryDoc<'a>,
    pub(super) delivery: Delivery,
    pub(super) dst_gap: DstGap,
    pub(super) dst_overlap: DstOverlap,
    pub(super) skew_margin: DurationText<'a>,
    pub(super) paused: bool,
    pub(super) stale_after: Option<DurationText<'a>>,
    pub(super) history: HistoryDoc,
}

/// [`PolicyDoc`] checked.
pub(super) struct Policy {
    pub(super) zone: Zone,
    pub(super) trigger: Trigger,
    pub(super) lease: Duration,
    pub(super) starting_deadline: Duration,
    pub(super) catch_up: CatchUp,
    pub(super) max_catch_up: u32,
    pub(super) overlap: Overlap,
    pub(super) retry: RetryPolicy,
    pub(super) delivery: Delivery,
    pub(super) dst: DstPolicy,
    pub(super) skew_margin: Duration,
    pub(super) paused: bool,
    pub(super) stale_after: Option<Duration>,
    pub(super) history: HistoryLimits,
}

#[allow(clippy::too_many_arguments)]
impl PolicyDoc<'_> {
    pub(super) fn new(
        timezone: &str,
        trigger: Trigger,
        lease: Duration,
        starting_deadline: Duration,
        catch_up: CatchUp,
        max_catch_up: u32,
        overlap: Overlap,
        retry: &RetryPolicy,
        delivery: Delivery,
        dst: DstPolicy,
        skew_margin: Duration,
        paused: bool,
        stale_after: Option<Duration>,
        history: HistoryLimits,
    ) -> PolicyDoc<'static> {
        let (overlap, max_concurrency) = match overlap {
            Overlap::Forbid => (OverlapMode::Forbid, None),
            Overlap::Allow { max_concurrency } => (OverlapMode::Allow, Some(max_concurrency)),
            Overlap::Replace => (OverlapMode::Replace, None),
        };
        PolicyDoc {
            timezone: timezone.to_string().into(),
            trigger,
            lease: format_duration(lease).into(),
            starting_deadline: format_duration(starting_deadline).into(),
            catch_up,
            max_catch_up,
            overlap,
            max_concurrency,
            retry: RetryDoc {
                max_attempts: retry.max_attempts,
                backoff: format_duration(retry.backoff).into(),
                max_backoff: format_duration(retry.max_backoff).into(),
                past_next_slot: retry.past_next_slot,
            },
            delivery,
            dst_gap: dst.gap,
            dst_overlap: dst.overlap,
            skew_margin: format_duration(skew_margin).into(),
            paused,
            stale_after: stale_after.map(|d| format_duration(d).into()),
            history: HistoryDoc {
                succeeded: history.succeeded,
                failed: history.failed,
            },
        }
    }

    /// Checks the values on their own and across keys, as the TOML path
    /// does; `None` when a value is bad (reported under `place`).
    pub(super) fn resolve(
        &self,
        place: &str,
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<Policy> {
        let before = problems.0.len();
        let mut report = |message: String| problems.push(place.into(), message);
        let zone = match zones.get(&self.timezone) {
            Ok(zone) if zone.name() == self.timezone => Some(zone),
            Ok(zone) => {
                report(format!(
                    "timezone {:?} is not written by its canonical name {:?}",
                    self.timezone,
                    zone.name()
                ));
                None
            }
            Err(e) => {
                report(format!("unknown time zone: {e}"));
                None
            }
        };
        let lease = duration(problems, place, "lease", &self.lease);
        let starting_deadline = duration(
            problems,
            place,
            "starting_deadline",
            &self.starting_deadline,
        );
        let backoff = duration(problems, place, "retry.backoff", &self.retry.backoff);
        let max_backoff = duration(
            problems,
            place,
            "retry.max_backoff",
            &self.retry.max_backoff,
        );
        let skew_margin = duration(problems, place, "skew_margin", &self.skew_margin);
        let stale_after = self
            .stale_after
            .as_ref()
            .map(|text| duration(problems, place, "stale_after", text));
        let mut report = |message: String| problems.push(place.into(), message);
        if let Some(lease) = lease.filter(|l| *l < defaults::MIN_LEASE) {
            report(format!(
                "lease {} is shorter than the minimum of {}",
                format_duration(lease),
                format_duration(defaults::MIN_LEASE)
            ));
        }
        if starting_deadline == Some(Duration::ZERO) {
            report("starting_deadline must be longer than 0s".into());
        }
        if stale_after == Some(Some(Duration::ZERO)) {
            report("stale_after must be longer than 0s".into());
        }
        let overlap = match (self.overlap, self.max_concurrency) {
            (OverlapMode::Forbid, None) => Overlap::Forbid,
            (OverlapMode::Replace, None) => Overlap::Replace,
            (OverlapMode::Allow, Some(n)) if (1..=defaults::MAX_CONCURRENCY_LIMIT).contains(&n) => {
                Overlap::Allow { max_concurrency: n }
            }
            (OverlapMode::Allow, Some(n)) => {
                report(format!(
                    "max_concurrency {n} is outside 1 to {}",
                    defaults::MAX_CONCURRENCY_LIMIT
                ));
                Overlap::Forbid
            }
            (OverlapMode::Allow, None) => {
                report("overlap \"allow\" needs its max_concurrency".into());
                Overlap::Forbid
            }
            (_, Some(_)) => {
                report("max_concurrency applies only to overlap \"allow\"".into());
                Overlap::Forbid
            }
        };
        if self.retry.max_attempts == 0 {
            report("retry.max_attempts must be at least 1 (the first attempt counts)".into());
        }
        if let (Some(b), Some(m)) = (backoff, max_backoff) {
            if b > m {
                report(format!(
                    "retry.backoff {} is longer than retry.max_backoff {}",
                    format_duration(b),
                    format_duration(m)
                ));
            }
        }
        if let (Some(s), Some(l)) = (skew_margin, lease) {
            if s >= l {
                report(format!(
                    "skew_margin {} must be shorter than the lease {}",
                    format_duration(s),
                    format_duration(l)
                ));
            }
        }
        if self.catch_up == CatchUp::All && self.max_catch_up == 0 {
            report("max_catch_up = 0 with catch_up = \"all\" catches up nothing".into());
        }
        for (key, n) in [
            ("history.succeeded", self.history.succeeded),
            ("history.failed", self.history.failed),
        ] {
            if n > defaults::HISTORY_LIMIT {
                report(format!(
                    "{key} {n} is above the limit of {}",
                    defaults::HISTORY_LIMIT
                ));
            }
        }
        if problems.0.len() > before {
            return None;
        }
        Some(Policy {
            zone: zone?,
            trigger: self.trigger,
            lease: lease?,
            starting_deadline: starting_deadline?,
            catch_up: self.catch_up,
            max_catch_up: self.max_catch_up,
            overlap,
            retry: RetryPolicy {
                max_attempts: self.retry.max_attempts,
                backoff: backoff?,
                max_backoff: max_backoff?,
                past_next_slot: self.retry.past_next_slot,
            },
            delivery: self.delivery,
            dst: DstPolicy {
                gap: self.dst_gap,
                overlap: self.dst_overlap,
            },
            skew_margin: skew_margin?,
            paused: self.paused,
            stale_after: stale_after.flatten(),
            history: HistoryLimits {
                succeeded: self.history.succeeded,
                failed: self.history.failed,
            },
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct DefaultsDoc<'a> {
    #[serde(borrow)]
    pub(super) policy: PolicyPatch<'a>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) timeout: Option<DurationText<'a>>,
}

/// `[defaults]`' whole policy.
pub(super) fn defaults_policy(d: &Defaults) -> PolicyDoc<'static> {
    PolicyDoc::new(
        &d.timezone,
        d.trigger,
        d.lease,
        d.starting_deadline,
        d.catch_up,
        d.max_catch_up,
        d.overlap,
        &d.retry,
        d.delivery,
        d.dst,
        d.skew_margin,
        d.paused,
        d.stale_after,
        d.history,
    )
}

impl From<&Defaults> for DefaultsDoc<'static> {
    fn from(d: &Defaults) -> DefaultsDoc<'static> {
        DefaultsDoc {
            policy: PolicyPatch::whole(&defaults_policy(d)),
            timeout: d.timeout.map(|t| format_duration(t).into()),
        }
    }
}

impl DefaultsDoc<'_> {
    /// The defaults, `policy` being their whole policy
    /// ([`PolicyPatch::complete`]).
    pub(super) fn resolve(
        &self,
        policy: &PolicyDoc<'_>,
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<Defaults> {
        let place = "[defaults]";
        let timeout = self
            .timeout
            .as_ref()
            .map(|text| duration(problems, place, "timeout", text));
        if timeout == Some(Some(Duration::ZERO)) {
            problems.push(place.into(), "timeout must be longer than 0s".into());
        }
        let p = policy.resolve(place, zones, problems)?;
        // A bad timeout was reported above.
        let timeout = match timeout {
            Some(None) => return None,
            t => t.flatten(),
        };
        if let Some(t) = timeout.filter(|t| *t > p.lease) {
            problems.push(
                place.into(),
                format!(
                    "timeout {} is longer than the lease {}",
                    format_duration(t),
                    format_duration(p.lease)
                ),
            );
        }
        Some(Defaults {
            timezone: p.zone.name().to_string(),
            trigger: p.trigger,
            lease: p.lease,
            starting_deadline: p.starting_deadline,
            catch_up: p.catch_up,
            max_catch_up: p.max_catch_up,
            overlap: p.overlap,
            retry: p.retry,
            delivery: p.delivery,
            dst: p.dst,
            skew_margin: p.skew_margin,
            paused: p.paused,
            stale_after: p.stale_after,
            history: p.history,
            timeout,
        })
    }
}
