//! For build scripts only (feature `build`): validate a `cronslot.toml` at
//! build time and write its precompiled form for the program to embed.
//! This is the one place the crate touches files, and it runs in `build.rs`,
//! never in a deployed function or Worker.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::manifest::parse_manifest;

/// Reads `manifest` (relative to the package), validates it, and writes
/// `$OUT_DIR/manifest.json`, which the program embeds with
/// `include_str!(concat!(env!("OUT_DIR"), "/manifest.json"))`. A manifest
/// error fails the build with file, line and column; warnings become cargo
/// warnings.
pub fn precompile_manifest(manifest: &str) -> ExitCode {
    println!("cargo::rerun-if-changed={manifest}");
    let text = match std::fs::read_to_string(manifest) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: cannot read {manifest}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let parsed = match parse_manifest(&text, manifest) {
        Ok(parsed) => parsed,
        Err(errors) => {
            eprintln!("{errors}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(t) = parsed.templates.first() {
        // The precompiled form (what a Worker or a Lambda embeds) does not
        // carry dynamic jobs yet: refuse rather than drop one silently.
        eprintln!(
            "error: {manifest}: job {:?} is dynamic, and a precompiled manifest (a Worker's \
             or a Lambda's) cannot hold dynamic jobs yet",
            t.name.as_str()
        );
        return ExitCode::FAILURE;
    }
    for warning in &parsed.warnings {
        println!(
            "cargo::warning={manifest}:{}:{}: {}",
            warning.line, warning.column, warning.message
        );
    }
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!("error: OUT_DIR is not set (cargo sets it for build scripts)");
        return ExitCode::FAILURE;
    };
    let out = out_dir.join("manifest.json");
    if let Err(e) = std::fs::write(&out, parsed.to_precompiled(manifest)) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
