//! The dashboard's script as it is served (`src/admin/dashboard/mod.rs`):
//! the source without its whole-line comments, indentation and blank
//! lines, which every program that serves the dashboard carries in its
//! binary. On a Worker that is upload size under Cloudflare's limit
//! (docs/performance.md, "The example Worker's size"): 0.8 KiB of gzip.
//! The script has no template literal and no line continuation, so a
//! line's leading space and a line that is only a comment are never part
//! of a string.

use std::path::PathBuf;

const SCRIPT: &str = "src/admin/dashboard/dashboard.js";

fn main() {
    println!("cargo:rerun-if-changed={SCRIPT}");
    let text = std::fs::read_to_string(SCRIPT).unwrap_or_else(|e| panic!("reading {SCRIPT}: {e}"));
    // A template literal or a line continuation could carry a line's
    // indentation or a `//` line inside a string: then this must not run.
    for (n, line) in text.lines().enumerate() {
        let code = line.trim();
        if !code.starts_with("//") && (code.contains('`') || code.ends_with('\\')) {
            panic!(
                "{SCRIPT}:{}: a string may span lines here; strip the script by hand or \
                 serve it as written",
                n + 1
            );
        }
    }
    let served: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with("//"))
        .collect();
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_else(|e| panic!("OUT_DIR: {e}")));
    let path = out.join("dashboard.js");
    std::fs::write(&path, served.join("\n") + "\n")
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
