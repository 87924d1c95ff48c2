//! Validates `cronslot.toml` at build time and writes its precompiled form
//! (`$OUT_DIR/manifest.json`) for the program to embed: it then links no
//! TOML parser (docs/performance.md), and a manifest error fails the build,
//! located by file, line and column, instead of the first invocation.
//! It carries the TZif data of the zones the dynamic job's schedules may
//! name.

fn main() -> std::process::ExitCode {
    // The dashboard's files, served by Cloudflare as static assets.
    if let Err(e) = cronslot_runtime::build_script::write_dashboard("assets", "/cronslot") {
        eprintln!("error: the dashboard's assets: {e}");
        return std::process::ExitCode::FAILURE;
    }
    // The dynamic job's schedules may name Europe/Paris as well as the
    // zones the manifest names (a Worker links no tz database).
    cronslot_core::build_script::precompile_manifest_with_zones("cronslot.toml", &["Europe/Paris"])
}
