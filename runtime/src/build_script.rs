//! What a Worker's build script writes besides its precompiled manifest
//! (feature `build`): the dashboard's files as static assets, so that
//! Cloudflare serves them and the Worker's module carries none of them (its
//! size budget, docs/performance.md). The only code of the crate that
//! touches files.

use std::path::Path;

use crate::admin::dashboard;

/// Writes the dashboard under `dir` (wrangler.toml's `[assets]
/// directory`) for routes under `base` (the Worker's prefix, `/cronslot`):
/// `{base}/index.html`, `{base}/dashboard.js`, `{base}/dashboard.css`,
/// and `_headers`, which gives them the headers `cronslot serve` gives its
/// own (the security policy, `no-cache`). A file already as it should be
/// is left alone, so a build that changes nothing touches nothing.
///
/// # Errors
///
/// `base` is not `""` or `/` and path segments, or a file cannot be
/// written: the message says which.
pub fn write_dashboard(dir: impl AsRef<Path>, base: &str) -> Result<(), String> {
    let dir = dir.as_ref();
    let segments: Vec<&str> = base.split('/').skip(1).collect();
    let valid = base.is_empty()
        || (base.starts_with('/')
            && segments.iter().all(|s| {
                !s.is_empty()
                    && *s != "."
                    && *s != ".."
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            }));
    if !valid {
        return Err(format!(
            "the dashboard's base {base:?} must be empty or /-separated path segments of \
             letters, digits and - _ . (like /cronslot)"
        ));
    }
    let folder = segments.iter().fold(dir.to_path_buf(), |p, s| p.join(s));
    let mut headers =
        format!("# Written by cronslot's build script: the dashboard's headers.\n{base}/*\n");
    for (name, value) in dashboard::HEADERS {
        headers.push_str(&format!("  {name}: {value}\n"));
    }
    let files = [
        (folder.join("index.html"), dashboard::page(base)),
        (folder.join("dashboard.js"), dashboard::SCRIPT.to_string()),
        (folder.join("dashboard.css"), dashboard::STYLE.to_string()),
        (dir.join("_headers"), headers),
    ];
    std::fs::create_dir_all(&folder).map_err(|e| format!("creating {}: {e}", folder.display()))?;
    for (path, text) in files {
        if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
            continue;
        }
        std::fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    Ok(())
}
