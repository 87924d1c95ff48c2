//! Validates `cronslot.toml` at build time and writes its precompiled form
//! (`$OUT_DIR/manifest.json`) for the program to embed: it then links no
//! TOML parser (docs/performance.md), and a manifest error fails the build,
//! located by file, line and column, instead of the first invocation.
//! Writes the dashboard's files into `assets/` (wrangler.toml's `[assets]`),
//! which Cloudflare serves beside the Worker: the module carries none of
//! them. The second argument is the Worker's prefix (`Cronslot::prefix`).

fn main() -> std::process::ExitCode {
    if let Err(e) = cronslot_runtime::build_script::write_dashboard("assets", "/cronslot") {
        eprintln!("error: the dashboard's assets: {e}");
        return std::process::ExitCode::FAILURE;
    }
    cronslot_core::build_script::precompile_manifest("cronslot.toml")
}
