//! For build scripts only (feature `build`): validate a `cronslot.toml` at
//! build time and write its precompiled form for the program to embed.
//! This is the one place the crate touches files, and it runs in `build.rs`,
//! never in a deployed function or Worker.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::manifest::parse_manifest;
use crate::schedule::Zone;

/// Reads `manifest` (relative to the package), validates it, and writes
/// `$OUT_DIR/manifest.json`, which the program embeds with
/// `include_str!(concat!(env!("OUT_DIR"), "/manifest.json"))`. A manifest
/// error fails the build with file, line and column; warnings become cargo
/// warnings.
pub fn precompile_manifest(manifest: &str) -> ExitCode {
    precompile_manifest_with_zones(manifest, &[])
}

/// [`precompile_manifest`], and the schedules of the manifest's dynamic
/// jobs may name the IANA zones `zones` as well as those the manifest names
/// itself: the precompiled form carries the TZif data of each, and a
/// program without the tz database (a Worker) knows only those (and UTC).
/// An unknown zone fails the build, naming it.
pub fn precompile_manifest_with_zones(manifest: &str, zones: &[&str]) -> ExitCode {
    println!("cargo::rerun-if-changed={manifest}");
    let text = match std::fs::read_to_string(manifest) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: cannot read {manifest}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut parsed = match parse_manifest(&text, manifest) {
        Ok(parsed) => parsed,
        Err(errors) => {
            eprintln!("{errors}");
            return ExitCode::FAILURE;
        }
    };
    let mut carried = Vec::with_capacity(zones.len());
    for name in zones {
        match Zone::get(name) {
            Ok(zone) => carried.push(zone),
            Err(e) => {
                eprintln!("error: the zones for {manifest}'s dynamic jobs: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if !parsed.templates.is_empty() {
        // What the manifest names (its defaults' zone, its jobs') is known
        // to its schedules as well.
        let named = std::iter::once(parsed.defaults.timezone.as_str())
            .chain(parsed.jobs.iter().map(|j| j.timezone.as_str()));
        for name in named {
            if !carried.iter().any(|z| z.name() == name) {
                if let Ok(zone) = Zone::get(name) {
                    carried.push(zone);
                }
            }
        }
        carried.retain(|z| z.tzif().is_some());
        for template in &mut parsed.templates {
            template.zones = carried.clone();
        }
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
