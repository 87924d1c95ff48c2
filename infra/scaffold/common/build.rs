//! Validates `cronslot.toml` at build time and writes its precompiled form
//! (`$OUT_DIR/manifest.json`) for the program to embed: it then links no
//! TOML parser, and a manifest error fails the build, located by file,
//! line and column, instead of the first invocation.

fn main() -> std::process::ExitCode {
    cronslot_core::build_script::precompile_manifest("cronslot.toml")
}
