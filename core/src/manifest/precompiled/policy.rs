//! The policies a job and `[defaults]` share, as the file writes them, and
//! their checks: what a loaded policy must satisfy, with the rules the TOML
//! path applies. Kept apart from the layout of version 2 (`patch.rs`),
//! which only says which of them a job writes.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::patch::PolicyPatch;
use super::{DurationText, Problems, Report, Text, Zones};
use crate::manifest::duration::format_duration;
use crate::manifest::rules::{
    Across, Origin, OverlapMode, Setting, check_across, history_problem, jitter_problem,
    lease_problem, max_attempts_problem, max_concurrency_problem, stale_after_problem,
    starting_deadline_problem, timeout_problem, zone_problem,
};
use crate::manifest::{
    CatchUp, Defaults, Delivery, HistoryLimits, Overlap, RetryPolicy, Trigger, defaults,
};
use crate::schedule::{DstGap, DstOverlap, DstPolicy, Zone};

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
    /// `None`: no jitter (a file written before jitter has none).
    pub(super) jitter: Option<DurationText<'a>>,
    pub(super) paused: bool,
    pub(super) stale_after: Option<DurationText<'a>>,
    pub(super) history: HistoryDoc,
}

/// A value of a table as the checks across keys read it: its own (`own`)
/// or inherited from `[defaults]`.
fn setting<T>(value: T, own: bool, refused: bool) -> Setting<T, ()> {
    Setting {
        value,
        origin: if own { Origin::Here } else { Origin::Parent },
        refused,
        at: (),
    }
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
    pub(super) jitter: Duration,
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
        jitter: Duration,
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
            jitter: (!jitter.is_zero()).then(|| format_duration(jitter).into()),
            paused,
            stale_after: stale_after.map(|d| format_duration(d).into()),
            history: HistoryDoc {
                succeeded: history.succeeded,
                failed: history.failed,
            },
        }
    }

    /// Checks the values on their own and across keys with the rules of
    /// the TOML path (`rules.rs`); `None` when a value is bad. As there, a
    /// table reports the problems of the values it writes itself: `own` is
    /// what a job writes (`None` for `[defaults]`, which writes every
    /// policy), and a value it inherits is checked, once, with
    /// `[defaults]`. `timeout` is the table's timeout ([`DefaultsDoc`]'
    /// own, or a job's action's: [`ActionDoc::timeout`]).
    ///
    /// [`ActionDoc::timeout`]: super::job::ActionDoc::timeout
    pub(super) fn resolve(
        &self,
        place: &str,
        own: Option<&PolicyPatch<'_>>,
        timeout: &Setting<Option<Duration>, ()>,
        function_job: bool,
        zones: &mut Zones,
        problems: &mut Problems,
    ) -> Option<Policy> {
        let before = problems.0.len();
        let mut r = Report { place, problems };
        let writes = |key: fn(&PolicyPatch<'_>) -> bool| own.is_none_or(key);
        let own_timezone = writes(|p| p.timezone.is_some());
        let own_lease = writes(|p| p.lease.is_some());
        let own_deadline = writes(|p| p.starting_deadline.is_some());
        let own_catch_up = writes(|p| p.catch_up.is_some());
        let own_max_catch_up = writes(|p| p.max_catch_up.is_some());
        let own_overlap = writes(|p| p.overlap.is_some());
        let own_max_concurrency = writes(|p| p.max_concurrency.is_some());
        let own_retry = writes(|p| p.retry.is_some());
        let own_skew = writes(|p| p.skew_margin.is_some());
        let own_jitter = writes(|p| p.jitter.is_some());
        let own_trigger = writes(|p| p.trigger.is_some());
        let own_stale = writes(|p| p.stale_after.is_some());
        let own_history = writes(|p| p.history.is_some());

        let zone = match zones.get(&self.timezone) {
            Ok(zone) if zone.name() == self.timezone => Some(zone),
            Ok(zone) => {
                r.problem(
                    own_timezone,
                    Some(format!(
                        "timezone {:?} is not written by its canonical name {:?}",
                        self.timezone,
                        zone.name()
                    )),
                );
                None
            }
            Err(e) => {
                r.problem(own_timezone, Some(zone_problem(&self.timezone, &e)));
                None
            }
        };
        let lease = r.duration(own_lease, "lease", &self.lease);
        let starting_deadline =
            r.duration(own_deadline, "starting_deadline", &self.starting_deadline);
        let backoff = r.duration(own_retry, "retry.backoff", &self.retry.backoff);
        let max_backoff = r.duration(own_retry, "retry.max_backoff", &self.retry.max_backoff);
        let skew_margin = r.duration(own_skew, "skew_margin", &self.skew_margin);
        let jitter = match &self.jitter {
            Some(text) => r.duration(own_jitter, "jitter", text),
            None => Some(Duration::ZERO),
        };
        let stale_after = self
            .stale_after
            .as_ref()
            .map(|text| r.duration(own_stale, "stale_after", text));

        // Single values: a refused one keeps the checks across keys that
        // involve it quiet.
        let lease_refused = lease.is_none_or(|l| r.problem(own_lease, lease_problem(l)));
        if let Some(d) = starting_deadline {
            r.problem(own_deadline, starting_deadline_problem(d));
        }
        if let Some(Some(d)) = stale_after {
            r.problem(own_stale, stale_after_problem(d));
        }
        let jitter_refused = jitter.is_none_or(|j| r.problem(own_jitter, jitter_problem(j)));
        let max_concurrency_refused = self
            .max_concurrency
            .is_some_and(|n| r.problem(own_max_concurrency, max_concurrency_problem(n)));
        r.problem(own_retry, max_attempts_problem(self.retry.max_attempts));
        for (key, n) in [
            ("succeeded", self.history.succeeded),
            ("failed", self.history.failed),
        ] {
            r.problem(own_history, history_problem(key, n));
        }
        let overlap = match (self.overlap, self.max_concurrency) {
            (OverlapMode::Forbid, _) => Overlap::Forbid,
            (OverlapMode::Replace, _) => Overlap::Replace,
            (OverlapMode::Allow, Some(n)) => Overlap::Allow { max_concurrency: n },
            (OverlapMode::Allow, None) => {
                r.problem(
                    own_overlap,
                    Some("overlap \"allow\" needs its max_concurrency".into()),
                );
                Overlap::Forbid
            }
        };

        let lease_setting = setting(lease.unwrap_or_default(), own_lease, lease_refused);
        let catch_up = setting(self.catch_up, own_catch_up, false);
        let max_catch_up = setting(self.max_catch_up, own_max_catch_up, false);
        let overlap_mode = setting(self.overlap, own_overlap, false);
        // Without a max_concurrency, the built-in one (which only
        // `overlap = "allow"` would read).
        let max_concurrency = Setting {
            value: self.max_concurrency.unwrap_or(defaults::MAX_CONCURRENCY),
            origin: match self.max_concurrency {
                None => Origin::Builtin,
                Some(_) if own_max_concurrency => Origin::Here,
                Some(_) => Origin::Parent,
            },
            refused: max_concurrency_refused,
            at: (),
        };
        let backoff_setting = setting(backoff.unwrap_or_default(), own_retry, backoff.is_none());
        let max_backoff_setting = setting(
            max_backoff.unwrap_or_default(),
            own_retry,
            max_backoff.is_none(),
        );
        let skew_setting = setting(
            skew_margin.unwrap_or_default(),
            own_skew,
            skew_margin.is_none(),
        );
        let jitter_setting = setting(jitter.unwrap_or_default(), own_jitter, jitter_refused);
        let deadline_setting = setting(
            starting_deadline.unwrap_or_default(),
            own_deadline,
            starting_deadline.is_none(),
        );
        let trigger_setting = setting(self.trigger, own_trigger, false);
        let across = Across {
            lease: &lease_setting,
            catch_up: &catch_up,
            max_catch_up: &max_catch_up,
            overlap: &overlap_mode,
            max_concurrency: &max_concurrency,
            backoff: &backoff_setting,
            max_backoff: &max_backoff_setting,
            skew_margin: &skew_setting,
            jitter: &jitter_setting,
            starting_deadline: &deadline_setting,
            trigger: &trigger_setting,
            timeout,
            function_job,
        };
        check_across(&across, |(), problem| {
            r.problem(true, Some(problem));
        });

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
            jitter: jitter?,
            paused: self.paused,
            stale_after: match stale_after {
                // Unreadable (reported with [defaults] when inherited).
                Some(None) => return None,
                s => s.flatten(),
            },
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
        d.jitter,
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
        let mut r = Report { place, problems };
        let timeout = self
            .timeout
            .as_ref()
            .map(|text| r.duration(true, "timeout", text));
        let refused = match timeout {
            Some(None) => true,
            Some(Some(t)) => r.problem(true, timeout_problem(t)),
            None => false,
        };
        let timeout_setting = Setting {
            value: timeout.flatten(),
            origin: if timeout.is_some() {
                Origin::Here
            } else {
                Origin::Builtin
            },
            refused,
            at: (),
        };
        let p = policy.resolve(place, None, &timeout_setting, false, zones, problems)?;
        // An unreadable timeout was reported above.
        let timeout = match timeout {
            Some(None) => return None,
            t => t.flatten(),
        };
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
            jitter: p.jitter,
            paused: p.paused,
            stale_after: p.stale_after,
            history: p.history,
            timeout,
        })
    }
}
