//! Version 2's layout of policies: `[defaults]` writes every one, a job
//! only those that differ (a patch over the defaults'), which is what
//! keeps a file of thousands of jobs small. Reading a patch gives back the
//! whole policy ([`PolicyDoc`]), which `policy.rs` checks.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::policy::{HistoryDoc, PolicyDoc, RetryDoc};
use super::{DurationText, Problems, Text};
use crate::manifest::rules::OverlapMode;
use crate::manifest::{CatchUp, Delivery, Trigger};
use crate::schedule::{DstGap, DstOverlap};

/// The policies as the file writes them: every one in `[defaults]`, and in
/// a job only those that differ from the defaults' (version 1 wrote them
/// all, which reads the same). In a job, `stale_after` has three states:
/// absent (the default's), `null` (none, where the default has one) or a
/// duration.
#[derive(Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PolicyPatch<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(super) timezone: Option<Text<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) trigger: Option<Trigger>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(super) lease: Option<DurationText<'a>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(super) starting_deadline: Option<DurationText<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) catch_up: Option<CatchUp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) max_catch_up: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) overlap: Option<OverlapMode>,
    /// Written with `overlap`, whenever either differs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) max_concurrency: Option<u32>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(super) retry: Option<RetryDoc<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) delivery: Option<Delivery>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) dst_gap: Option<DstGap>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) dst_overlap: Option<DstOverlap>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(super) skew_margin: Option<DurationText<'a>>,
    /// `"0s"` in a job: none, where the defaults have one.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub(super) jitter: Option<DurationText<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) paused: Option<bool>,
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub(super) stale_after: Option<Option<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) history: Option<HistoryDoc>,
}

/// The text of `t`, borrowed.
fn borrowed<'b>(t: &'b Option<Text<'_>>) -> Option<Text<'b>> {
    t.as_deref().map(Cow::Borrowed)
}

/// A key that is present, even as `null`, is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `job` where it differs from `default`.
fn differing<T: PartialEq + Clone>(job: &T, default: &T) -> Option<T> {
    (job != default).then(|| job.clone())
}

impl PolicyPatch<'_> {
    /// `[defaults]`' policy as written: every key (`stale_after` and
    /// `max_concurrency` only when they have a value).
    pub(super) fn whole(p: &PolicyDoc<'static>) -> PolicyPatch<'static> {
        PolicyPatch {
            timezone: Some(p.timezone.clone()),
            trigger: Some(p.trigger),
            lease: Some(p.lease.clone()),
            starting_deadline: Some(p.starting_deadline.clone()),
            catch_up: Some(p.catch_up),
            max_catch_up: Some(p.max_catch_up),
            overlap: Some(p.overlap),
            max_concurrency: p.max_concurrency,
            retry: Some(p.retry.clone()),
            delivery: Some(p.delivery),
            dst_gap: Some(p.dst_gap),
            dst_overlap: Some(p.dst_overlap),
            skew_margin: Some(p.skew_margin.clone()),
            jitter: p.jitter.clone(),
            paused: Some(p.paused),
            stale_after: p.stale_after.as_ref().map(|t| Some(t.to_string())),
            history: Some(p.history),
        }
    }

    /// `[defaults]`' whole policy; `None` when a key is missing (each one
    /// reported under `place`).
    pub(super) fn complete(&self, place: &str, problems: &mut Problems) -> Option<PolicyDoc<'_>> {
        let before = problems.0.len();
        let mut need = |key: &str, present: bool| {
            if !present {
                problems.push(place.into(), format!("{key} is missing"));
            }
        };
        need("timezone", self.timezone.is_some());
        need("trigger", self.trigger.is_some());
        need("lease", self.lease.is_some());
        need("starting_deadline", self.starting_deadline.is_some());
        need("catch_up", self.catch_up.is_some());
        need("max_catch_up", self.max_catch_up.is_some());
        need("overlap", self.overlap.is_some());
        need("retry", self.retry.is_some());
        need("delivery", self.delivery.is_some());
        need("dst_gap", self.dst_gap.is_some());
        need("dst_overlap", self.dst_overlap.is_some());
        need("skew_margin", self.skew_margin.is_some());
        need("paused", self.paused.is_some());
        need("history", self.history.is_some());
        if problems.0.len() > before {
            return None;
        }
        let retry = self.retry.as_ref()?;
        Some(PolicyDoc {
            timezone: borrowed(&self.timezone)?,
            trigger: self.trigger?,
            lease: borrowed(&self.lease)?,
            starting_deadline: borrowed(&self.starting_deadline)?,
            catch_up: self.catch_up?,
            max_catch_up: self.max_catch_up?,
            overlap: self.overlap?,
            max_concurrency: self.max_concurrency,
            retry: RetryDoc {
                max_attempts: retry.max_attempts,
                backoff: Cow::Borrowed(&retry.backoff),
                max_backoff: Cow::Borrowed(&retry.max_backoff),
                past_next_slot: retry.past_next_slot,
            },
            delivery: self.delivery?,
            dst_gap: self.dst_gap?,
            dst_overlap: self.dst_overlap?,
            skew_margin: borrowed(&self.skew_margin)?,
            jitter: borrowed(&self.jitter),
            paused: self.paused?,
            stale_after: self
                .stale_after
                .as_ref()
                .and_then(|t| t.as_deref().map(Cow::Borrowed)),
            history: self.history?,
        })
    }

    /// What `job` changes of `defaults`.
    pub(super) fn between(
        job: &PolicyDoc<'static>,
        defaults: &PolicyDoc<'_>,
    ) -> PolicyPatch<'static> {
        let overlap_differs =
            job.overlap != defaults.overlap || job.max_concurrency != defaults.max_concurrency;
        PolicyPatch {
            timezone: (job.timezone != defaults.timezone).then(|| job.timezone.clone()),
            trigger: differing(&job.trigger, &defaults.trigger),
            lease: (job.lease != defaults.lease).then(|| job.lease.clone()),
            starting_deadline: (job.starting_deadline != defaults.starting_deadline)
                .then(|| job.starting_deadline.clone()),
            catch_up: differing(&job.catch_up, &defaults.catch_up),
            max_catch_up: differing(&job.max_catch_up, &defaults.max_catch_up),
            overlap: overlap_differs.then_some(job.overlap),
            max_concurrency: job.max_concurrency.filter(|_| overlap_differs),
            retry: (job.retry != defaults.retry).then(|| job.retry.clone()),
            delivery: differing(&job.delivery, &defaults.delivery),
            dst_gap: differing(&job.dst_gap, &defaults.dst_gap),
            dst_overlap: differing(&job.dst_overlap, &defaults.dst_overlap),
            skew_margin: (job.skew_margin != defaults.skew_margin).then(|| job.skew_margin.clone()),
            jitter: (job.jitter != defaults.jitter)
                .then(|| job.jitter.clone().unwrap_or(Cow::Borrowed("0s"))),
            paused: differing(&job.paused, &defaults.paused),
            stale_after: (job.stale_after != defaults.stale_after)
                .then(|| job.stale_after.as_ref().map(|t| t.to_string())),
            history: differing(&job.history, &defaults.history),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        let PolicyPatch {
            timezone,
            trigger,
            lease,
            starting_deadline,
            catch_up,
            max_catch_up,
            overlap,
            max_concurrency,
            retry,
            delivery,
            dst_gap,
            dst_overlap,
            skew_margin,
            jitter,
            paused,
            stale_after,
            history,
        } = self;
        timezone.is_none()
            && trigger.is_none()
            && lease.is_none()
            && starting_deadline.is_none()
            && catch_up.is_none()
            && max_catch_up.is_none()
            && overlap.is_none()
            && max_concurrency.is_none()
            && retry.is_none()
            && delivery.is_none()
            && dst_gap.is_none()
            && dst_overlap.is_none()
            && skew_margin.is_none()
            && jitter.is_none()
            && paused.is_none()
            && stale_after.is_none()
            && history.is_none()
    }

    /// The job's whole policy: this patch over the defaults'.
    pub(super) fn over<'b>(&'b self, d: &'b PolicyDoc<'_>) -> PolicyDoc<'b> {
        let text = |own: &'b Option<Text<'_>>, default: &'b Text<'_>| -> Text<'b> {
            Cow::Borrowed(own.as_deref().unwrap_or(default))
        };
        let (overlap, max_concurrency) = match self.overlap {
            Some(mode) => (mode, self.max_concurrency),
            None => (d.overlap, self.max_concurrency.or(d.max_concurrency)),
        };
        let retry = self.retry.as_ref().unwrap_or(&d.retry);
        PolicyDoc {
            timezone: text(&self.timezone, &d.timezone),
            trigger: self.trigger.unwrap_or(d.trigger),
            lease: text(&self.lease, &d.lease),
            starting_deadline: text(&self.starting_deadline, &d.starting_deadline),
            catch_up: self.catch_up.unwrap_or(d.catch_up),
            max_catch_up: self.max_catch_up.unwrap_or(d.max_catch_up),
            overlap,
            max_concurrency,
            retry: RetryDoc {
                max_attempts: retry.max_attempts,
                backoff: Cow::Borrowed(&retry.backoff),
                max_backoff: Cow::Borrowed(&retry.max_backoff),
                past_next_slot: retry.past_next_slot,
            },
            delivery: self.delivery.unwrap_or(d.delivery),
            dst_gap: self.dst_gap.unwrap_or(d.dst_gap),
            dst_overlap: self.dst_overlap.unwrap_or(d.dst_overlap),
            skew_margin: text(&self.skew_margin, &d.skew_margin),
            jitter: self
                .jitter
                .as_deref()
                .or(d.jitter.as_deref())
                .map(Cow::Borrowed),
            paused: self.paused.unwrap_or(d.paused),
            stale_after: match &self.stale_after {
                Some(own) => own.as_deref().map(Cow::Borrowed),
                None => d.stale_after.as_deref().map(Cow::Borrowed),
            },
            history: self.history.unwrap_or(d.history),
        }
    }
}
