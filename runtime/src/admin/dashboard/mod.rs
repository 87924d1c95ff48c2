//! The dashboard: one page and its script and style sheet, embedded in
//! the binary (nothing is loaded from elsewhere). The page holds no data:
//! its script asks for the admin token, keeps it in the tab's
//! `sessionStorage`, and reads and acts through the JSON routes with
//! `Authorization: Bearer`. So the assets are served without a token, and
//! every action is a POST with a header no other site can make a browser
//! send: nothing for cross-site request forgery to use.

use super::Reply;

/// One of the dashboard's files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asset {
    /// `GET {p}/`: the page, with the routes' prefix written into it.
    Page {
        /// The prefix the routes are served under (`/cronslot`; empty at
        /// the root).
        base: String,
    },
    /// `GET {p}/dashboard.js`.
    Script,
    /// `GET {p}/dashboard.css`.
    Style,
}

#[cfg(feature = "dashboard")]
pub(crate) const PAGE: &str = include_str!("index.html");
/// `dashboard.js` as the build writes it (build.rs): without its comments
/// and indentation.
#[cfg(feature = "dashboard")]
pub(crate) const SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/dashboard.js"));
#[cfg(feature = "dashboard")]
pub(crate) const STYLE: &str = include_str!("dashboard.css");

/// Content type of the page.
pub const HTML: &str = "text/html; charset=utf-8";
/// Content type of the script.
pub const JAVASCRIPT: &str = "text/javascript; charset=utf-8";
/// Content type of the style sheet.
pub const CSS: &str = "text/css; charset=utf-8";

/// The page's own script and style sheet and requests to its own origin,
/// nothing else: no inline script or style, no frames, no form posts.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

impl Asset {
    /// The asset a path below the prefix names, if any (`[]` is the page).
    pub(super) fn named(segments: &[&str], base: &str) -> Option<Asset> {
        match segments {
            [] => Some(Asset::Page {
                base: base.to_string(),
            }),
            ["dashboard.js"] => Some(Asset::Script),
            ["dashboard.css"] => Some(Asset::Style),
            _ => None,
        }
    }

    /// The reply: the file, its type, the security policy, and
    /// `no-cache` (a new deployment's files are fetched at once).
    #[cfg(feature = "dashboard")]
    pub fn reply(&self) -> Reply {
        let (content_type, body) = match self {
            Asset::Page { base } => (HTML, page(base)),
            Asset::Script => (JAVASCRIPT, SCRIPT.to_string()),
            Asset::Style => (CSS, STYLE.to_string()),
        };
        Reply {
            status: 200,
            content_type,
            headers: HEADERS
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            body,
        }
    }

    /// Without the files (a Worker): a 404 that says where they are.
    #[cfg(not(feature = "dashboard"))]
    pub fn reply(&self) -> Reply {
        Reply::error(
            404,
            super::ErrorKind::NotFound,
            "this build serves the dashboard's files as static assets (wrangler.toml's [assets], \
             written by the build script): deploy them with the Worker",
        )
    }
}

/// The headers of every file of the dashboard: the security policy,
/// `no-cache` (a new deployment's files are fetched at once), no sniffing,
/// no referrer, no framing.
#[cfg(feature = "dashboard")]
pub(crate) const HEADERS: [(&str, &str); 5] = [
    ("Cache-Control", "no-cache"),
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("X-Frame-Options", "DENY"),
];

/// The page, with the routes' prefix written into it.
#[cfg(feature = "dashboard")]
pub(crate) fn page(base: &str) -> String {
    PAGE.replace("{BASE}", &attribute(base))
}

/// `text` escaped for an HTML attribute value in double quotes.
#[cfg(feature = "dashboard")]
fn attribute(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
