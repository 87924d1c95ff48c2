//! The compatibility baseline (issue 29): the previous release, named by
//! its commit in `compat/baseline`, which `scripts/baseline` builds from
//! its own tree and `Cargo.lock` into `target/baseline/<commit>/` (its
//! `cronslot` CLI and its test Worker, `cf-worker/`). The tests that run it
//! beside this tree's code find it here; missing, they fail and say to run
//! the script, never skip.

use std::path::PathBuf;

use crate::workerd::repo_root;

/// The baseline's commit, the first line of `compat/baseline` that is not
/// a comment.
///
/// # Panics
///
/// If the file is missing or names no commit.
pub fn commit() -> String {
    let path = repo_root().join("compat/baseline");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_else(|| panic!("{} names no commit", path.display()))
        .to_string()
}

/// `target/baseline/<commit>/<what>`, which must exist.
///
/// # Panics
///
/// If it does not: `scripts/baseline` builds it.
pub fn built(what: &str) -> PathBuf {
    let path = repo_root()
        .join("target/baseline")
        .join(commit())
        .join(what);
    assert!(
        path.exists(),
        "the baseline's {what} ({}) is missing: run scripts/baseline",
        path.display()
    );
    path
}
