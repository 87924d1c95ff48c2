//! Infrastructure templates (SAM, CloudFormation, wrangler.toml,
//! Kubernetes) and an operations table (Markdown) from the manifest: what `cronslot render`
//! writes (the command is `commands/render.rs`).
//!
//! Every output is a pure function of the manifest's text, its path as
//! given and the flags (Markdown's next runs also of `--after`), so the
//! templates checked into the repository can be compared byte for byte
//! with a fresh render.

pub mod aws;
pub mod kubernetes;
pub mod markdown;
pub mod plan;
pub mod wrangler;
pub mod yaml;

use std::path::{Component, Path, PathBuf};

use cronslot_core::manifest::{Action, Manifest};

use crate::exit::Failure;

/// What a renderer is given.
pub struct Source<'a> {
    pub manifest: &'a Manifest,
    /// The manifest's path as given on the command line (for the header).
    pub path: &'a Path,
    /// Its text (Kubernetes embeds it in a ConfigMap).
    pub text: &'a str,
    /// [`plan::manifest_hash`] of its text.
    pub hash: String,
}

/// A rendered document and the notes to show on stderr.
pub struct Rendered {
    pub text: String,
    pub notes: Vec<String>,
}

/// Refuses a manifest with command jobs for a platform that cannot run
/// them.
pub fn refuse_commands(manifest: &Manifest, platform: &str) -> Result<(), Failure> {
    let commands: Vec<String> = manifest
        .jobs
        .iter()
        .filter(|j| matches!(j.action, Action::Command { .. }))
        .map(|j| format!("{:?}", j.name.as_str()))
        .collect();
    if commands.is_empty() {
        return Ok(());
    }
    Err(Failure::bad_input(format!(
        "error: command jobs cannot run in {platform}: {}; run them with `cronslot run`, or make them http jobs or Rust functions",
        commands.join(", ")
    )))
}

/// Writes `text` to `out` (its directory created), never half a file.
pub fn write_file(out: &Path, text: &str) -> Result<(), Failure> {
    let fail = |e: std::io::Error| {
        Failure::bad_input(format!("error: cannot write {}: {e}", out.display()))
    };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    // Write beside the target and rename, so a reader never sees half a file.
    let mut tmp = out.as_os_str().to_owned();
    tmp.push(".cronslot-tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(fail)?;
    std::fs::rename(&tmp, out).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        fail(e)
    })
}

/// The binary cargo-lambda builds: the only `[[bin]]` of the Cargo.toml
/// beside the manifest, else its package name; `None` without a Cargo.toml.
pub fn cargo_binary(manifest: &Path) -> Result<Option<String>, Failure> {
    let dir = manifest.parent().unwrap_or(Path::new(""));
    let cargo = if dir.as_os_str().is_empty() {
        PathBuf::from("Cargo.toml")
    } else {
        dir.join("Cargo.toml")
    };
    let Ok(text) = std::fs::read_to_string(&cargo) else {
        return Ok(None);
    };
    let bad = |what: String| {
        Failure::bad_input(format!(
            "error: {}: {what} (pass --binary NAME)",
            cargo.display()
        ))
    };
    let table: toml::Table = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let bins: Vec<&str> = table
        .get("bin")
        .and_then(|b| b.as_array())
        .map(|bins| {
            bins.iter()
                .filter_map(|b| b.get("name").and_then(|n| n.as_str()))
                .collect()
        })
        .unwrap_or_default();
    match bins.as_slice() {
        [one] => return Ok(Some((*one).to_string())),
        [] => {}
        _ => return Err(bad(format!("several binaries ({})", bins.join(", ")))),
    }
    Ok(table
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(|n| n.as_str())
        .map(str::to_string))
}

/// The manifest's directory, relative to the directory `out` is written
/// to (or to the working directory when writing to stdout).
pub fn default_code_uri(manifest: &Path, out: Option<&Path>) -> String {
    let manifest_dir = normalise(manifest.parent().unwrap_or(Path::new("")));
    let base = normalise(out.and_then(Path::parent).unwrap_or(Path::new("")));
    let rel = relative(&manifest_dir, &base);
    if rel.is_empty() {
        ".".to_string()
    } else {
        rel.join("/")
    }
}

/// A path as absolute components, `.` and `..` resolved lexically.
fn normalise(path: &Path) -> Vec<String> {
    let joined = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(path)
    };
    let mut parts: Vec<String> = Vec::new();
    for component in joined.components() {
        match component {
            Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
            Component::ParentDir => {
                parts.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    parts
}

/// The components leading from `base` to `target`.
fn relative(target: &[String], base: &[String]) -> Vec<String> {
    let common = target.iter().zip(base).take_while(|(a, b)| a == b).count();
    let mut out: Vec<String> = base[common..].iter().map(|_| "..".to_string()).collect();
    out.extend(target[common..].iter().cloned());
    out
}

/// `text` as comment lines (`# ...`), wrapped at about 78 columns, with
/// continuation lines indented by `hang` spaces.
pub fn comment_lines(text: &str, prefix: &str, hang: usize) -> Vec<String> {
    const WIDTH: usize = 78;
    let mut lines = Vec::new();
    let mut line = String::from(prefix);
    let mut fresh = true;
    for word in words(text) {
        if !fresh && line.chars().count() + 1 + word.chars().count() > WIDTH {
            lines.push(std::mem::take(&mut line));
            line = " ".repeat(hang);
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(&word);
        fresh = false;
    }
    if !line.trim().is_empty() {
        lines.push(line);
    }
    lines
}

/// Words separated by spaces, where a double-quoted run (a cron
/// expression) or a backquoted one (a command) counts as one word.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut ticked = false;
    for c in text.chars() {
        if c == '"' && !ticked {
            quoted = !quoted;
        }
        if c == '`' && !quoted {
            ticked = !ticked;
        }
        if c == ' ' && !quoted && !ticked {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            relative(
                &s(&["w", "examples", "aws"]),
                &s(&["w", "infra", "templates"])
            ),
            s(&["..", "..", "examples", "aws"])
        );
        assert!(relative(&s(&["w"]), &s(&["w"])).is_empty());
    }

    #[test]
    fn wrapping() {
        let lines = comment_lines(&"word ".repeat(30), "  - ", 4);
        assert!(lines.len() > 1);
        assert!(lines.iter().all(|l| l.len() <= 78));
        assert!(lines[1].starts_with("    word"));
        let quoted = comment_lines(&format!("{} \"0 2 * * *\" end", "x".repeat(70)), "", 0);
        assert_eq!(quoted[1], "\"0 2 * * *\" end");
    }
}
