//! Records the commit the binary is built from, for `cronslot --version`:
//! the commit `cargo package` wrote into the crate's own
//! `.cargo_vcs_info.json` (a build from crates.io or `cargo install`), else
//! `git rev-parse` in a checkout, else none. A packaged crate is read first
//! so that its build never looks at a repository around it (its source may
//! sit inside another checkout, as `cargo package` verifies it under
//! `target/package/`). Nothing fails without git.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let vcs_info = dir.join(".cargo_vcs_info.json");
    let commit = from_vcs_info(&vcs_info).or_else(|| from_git(&dir));
    if let Some(commit) = commit {
        println!("cargo:rustc-env=CRONSLOT_COMMIT={commit}");
    }
    if vcs_info.is_file() {
        println!("cargo:rerun-if-changed={}", vcs_info.display());
        return;
    }
    // Only paths that exist: a missing one would rerun this every build.
    for watched in git_paths(&dir) {
        if watched.exists() {
            println!("cargo:rerun-if-changed={}", watched.display());
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// The checkout's commit, 12 hex digits.
fn from_git(dir: &Path) -> Option<String> {
    let commit = git(dir, &["rev-parse", "--short=12", "HEAD"])?;
    commit
        .bytes()
        .all(|b| b.is_ascii_hexdigit())
        .then_some(commit)
}

/// `"sha1": "…"` of `.cargo_vcs_info.json`, 12 hex digits.
fn from_vcs_info(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let after = text.split("\"sha1\"").nth(1)?;
    let sha: String = after
        .chars()
        .skip_while(|c| !c.is_ascii_hexdigit())
        .take_while(char::is_ascii_hexdigit)
        .collect();
    (sha.len() >= 12).then(|| sha[..12].to_string())
}

/// What moves when the checkout's commit does: HEAD, the branch it names,
/// and the packed refs.
fn git_paths(dir: &Path) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    for name in ["HEAD", "packed-refs"] {
        if let Some(p) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", name],
        ) {
            paths.push(PathBuf::from(p));
        }
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", &branch],
        ) {
            paths.push(PathBuf::from(p));
        }
    }
    paths
}
