//! Validates `cronslot.toml` at build time and writes its precompiled form
//! (`$OUT_DIR/manifest.json`), which `src/main.rs` embeds. The function
//! then links no TOML parser (docs/performance.md, "Lambda size"), and a
//! manifest error fails the build, located by file, line and column, instead
//! of the function's cold start.

use std::path::PathBuf;
use std::process::ExitCode;

use cronslot_core::manifest::parse_manifest;

const MANIFEST: &str = "cronslot.toml";

fn main() -> ExitCode {
    println!("cargo::rerun-if-changed={MANIFEST}");
    let text = match std::fs::read_to_string(MANIFEST) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("error: cannot read {MANIFEST}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let manifest = match parse_manifest(&text, MANIFEST) {
        Ok(manifest) => manifest,
        Err(errors) => {
            eprintln!("{errors}");
            return ExitCode::FAILURE;
        }
    };
    for warning in &manifest.warnings {
        println!(
            "cargo::warning={MANIFEST}:{}:{}: {}",
            warning.line, warning.column, warning.message
        );
    }
    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        eprintln!("error: OUT_DIR is not set (cargo sets it for build scripts)");
        return ExitCode::FAILURE;
    };
    let out = out_dir.join("manifest.json");
    if let Err(e) = std::fs::write(&out, manifest.to_precompiled(MANIFEST)) {
        eprintln!("error: cannot write {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
