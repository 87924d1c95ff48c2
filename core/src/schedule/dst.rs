//! DST handling: the policy for gaps and overlaps ([`DstPolicy`]), when a
//! forward jump is a clock change, which gaps a schedule shifts, and the
//! gap slots that do not run ([`Schedule::gap_skips`]). Apart from the
//! searches and the count, which ask it what to do at a transition.

use super::*;

/// A forward jump of the clock of at least this many seconds (three hours)
/// is a clock change, not DST: Vixie cron's rule. (croner and crondst agree
/// on whole skipped days such as Samoa's; croner decides by the calendar
/// date rather than the jump, which docs/semantics.md compares.) Under
/// [`DstGap::Shift`] (the default) and [`DstGap::Skip`], the fixed-time
/// slots whose wall-clock times such a jump skips do not run and are
/// recorded as missed ([`GapCause::ClockChange`]); only
/// [`DstGap::ShiftAlways`] runs them at the end of the jump.
pub const CLOCK_CHANGE_SECONDS: i32 = 3 * 3600;

/// What a fixed-time slot whose wall-clock time falls in a gap (a forward
/// jump of the clock) does. Manifests write `dst_gap = "shift"` (the
/// default), `"skip"` or `"shift_always"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DstGap {
    /// Vixie cron's rule: in a DST gap (the clock jumps less than
    /// [`CLOCK_CHANGE_SECONDS`]), run at the first instant after the gap; in
    /// a longer jump, a clock change, do not run: the slot is recorded as
    /// missed (reason: clock change).
    #[default]
    Shift,
    /// Do not run; the slot is recorded as missed (reason: DST, or clock
    /// change for a jump of three hours or more). What EventBridge Scheduler
    /// does.
    Skip,
    /// Run at the first instant after the gap however far the clock jumps:
    /// Samoa's skipped 2011-12-30 runs its slot at 2011-12-31 00:00. For a
    /// job that must run once for every local day, even one a clock change
    /// removed.
    ShiftAlways,
}

impl DstGap {
    /// The value as a manifest writes it (`"shift_always"`), the same as its
    /// serde form.
    pub fn as_str(self) -> &'static str {
        match self {
            DstGap::Shift => "shift",
            DstGap::Skip => "skip",
            DstGap::ShiftAlways => "shift_always",
        }
    }
}

/// What a fixed-time slot whose wall-clock time occurs twice does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DstOverlap {
    /// Run in the first pass only.
    #[default]
    Once,
    /// Run in both passes.
    Twice,
}

/// What a fixed-time slot does at a DST transition: in a spring-forward gap
/// and in a fall-back overlap. Manifests set it with `dst_gap` and
/// `dst_overlap`.
///
/// The default, shift/once, is Vixie cron's: no fixed-time slot is lost to
/// DST and none runs twice; only a clock change (a jump of three hours or
/// more, see [`CLOCK_CHANGE_SECONDS`]) skips slots. Interval-like expressions
/// (see [`CronExpr::is_interval_like`]) ignore the policy and follow real
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct DstPolicy {
    /// What a slot whose wall-clock time does not exist does.
    pub gap: DstGap,
    /// What a slot whose wall-clock time occurs twice does.
    pub overlap: DstOverlap,
}

impl DstPolicy {
    /// EventBridge Scheduler's behaviour: skip in gaps, once in overlaps.
    pub const SKIP_ONCE: DstPolicy = DstPolicy {
        gap: DstGap::Skip,
        overlap: DstOverlap::Once,
    };
}

/// A forward jump from offset `before` to `after` (seconds) that is a clock
/// change rather than DST.
pub(crate) fn is_clock_change(before: i32, after: i32) -> bool {
    i64::from(after) - i64::from(before) >= i64::from(CLOCK_CHANGE_SECONDS)
}

/// Why a fixed-time slot whose wall-clock time was skipped does not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GapCause {
    /// A DST gap (the clock jumped less than [`CLOCK_CHANGE_SECONDS`])
    /// under `dst_gap = "skip"`. Missed, reason `dst`.
    Dst,
    /// A clock change: the clock jumped [`CLOCK_CHANGE_SECONDS`] or more
    /// (Samoa skipped 2011-12-30), under `dst_gap = "shift"` or `"skip"`.
    /// Missed, reason `clock_change`.
    ClockChange,
}

/// A fixed-time slot whose wall-clock time a forward jump skipped and that
/// does not run: in a DST gap under `dst_gap = "skip"`, or in a clock change
/// under `"shift"` or `"skip"`. The coordinator records it as missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GapSkip {
    /// The wall-clock minute that fell in the gap.
    pub local: Civil,
    /// The transition that opened the gap.
    pub transition: Timestamp,
    /// How far the clock jumped forward there, in seconds.
    pub jump_seconds: i32,
    /// DST or a clock change (decided by the jump).
    pub cause: GapCause,
}

impl Schedule {
    /// Whether fixed-time slots in the gap of a forward transition from
    /// offset `before` to `after` move to the first instant after it: a DST
    /// gap under `shift`, any gap under `shift_always`. A clock change (a
    /// jump of [`CLOCK_CHANGE_SECONDS`] or more) shifts only under
    /// `shift_always`.
    pub(super) fn shifts(&self, before: i32, after: i32) -> bool {
        if self.follows_real_time() {
            return false;
        }
        match self.policy.gap {
            DstGap::Shift => !is_clock_change(before, after),
            DstGap::ShiftAlways => true,
            DstGap::Skip => false,
        }
    }

    /// Fixed-time slots run only in the first pass of an overlap.
    pub(super) fn once(&self) -> bool {
        !self.follows_real_time() && self.policy.overlap == DstOverlap::Once
    }

    /// The first matching wall-clock minute inside the gap opened at `start`.
    pub(super) fn gap_match(&self, start: i64, before: i32, after: i32) -> Option<Civil> {
        let from = ceil_div(start + i64::from(before), 60);
        let until = ceil_div(start + i64::from(after), 60);
        if from >= until {
            return None;
        }
        self.cron
            .next_civil(Civil::from_minutes(from), Civil::from_minutes(until))
    }

    /// The fixed-time slots of the gaps opened in `(after, until]` that do
    /// not run, to be recorded as missed, in order: under `dst_gap = "skip"`
    /// every matching wall-clock minute of every gap; under `"shift"` those
    /// of clock changes (jumps of [`CLOCK_CHANGE_SECONDS`] or more). Each
    /// says its [`GapCause`]. Empty under `"shift_always"` and for
    /// interval-like expressions (whose gap times simply do not exist).
    ///
    /// # Examples
    ///
    /// Samoa moved across the date line: 2011-12-29 24:00 (-10:00) was
    /// followed by 2011-12-31 00:00 (+14:00). A daily `0 2 * * *` has no
    /// slot on the 30th, which `gap_skips` reports as a clock change:
    ///
    /// ```
    /// use cronslot_core::schedule::GapCause;
    /// use cronslot_core::{Civil, CronExpr, DstPolicy, Schedule, Zone};
    /// use jiff::Timestamp;
    ///
    /// let apia = Schedule::new(
    ///     CronExpr::parse("0 2 * * *")?,
    ///     Zone::get("Pacific/Apia")?,
    ///     DstPolicy::default(),
    /// );
    /// let after: Timestamp = "2011-12-29T12:00:00Z".parse()?; // the 29th, 02:00
    /// // The next slot is the 31st's, at 02:00 +14:00.
    /// assert_eq!(apia.next_after(after).unwrap().to_string(), "2011-12-30T12:00:00Z");
    /// let skipped = apia.gap_skips(after, "2011-12-30T12:00:00Z".parse()?);
    /// assert_eq!(skipped.len(), 1);
    /// assert_eq!(skipped[0].local, Civil::new(2011, 12, 30, 2, 0));
    /// assert_eq!(skipped[0].cause, GapCause::ClockChange);
    /// assert_eq!(skipped[0].jump_seconds, 24 * 3600);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn gap_skips(&self, after: Timestamp, until: Timestamp) -> Vec<GapSkip> {
        let mut out = Vec::new();
        if self.follows_real_time() || self.policy.gap == DstGap::ShiftAlways {
            return out;
        }
        let (mut cur, _) = floor_second(after);
        let (end, _) = floor_second(until);
        while let Some((start, after_offset)) = self.zone.next_transition(cur) {
            if start > end {
                break;
            }
            let before = self.zone.offset_at(start - 1);
            if after_offset > before && !self.shifts(before, after_offset) {
                let cause = if is_clock_change(before, after_offset) {
                    GapCause::ClockChange
                } else {
                    GapCause::Dst
                };
                let mut from = ceil_div(start + i64::from(before), 60);
                let until_min = ceil_div(start + i64::from(after_offset), 60);
                while let Some(c) = self
                    .cron
                    .next_civil(Civil::from_minutes(from), Civil::from_minutes(until_min))
                {
                    out.push(GapSkip {
                        local: c,
                        transition: ts(start),
                        jump_seconds: after_offset - before,
                        cause,
                    });
                    from = c.to_minutes() + 1;
                }
            }
            cur = start;
        }
        out
    }
}
