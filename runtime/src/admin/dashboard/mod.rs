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

const PAGE: &str = include_str!("index.html");
/// `dashboard.js` as the build writes it (build.rs): without its comments
/// and indentation.
const SCRIPT: &str = include_str!(concat!(env!("OUT_DIR"), "/dashboard.js"));
const STYLE: &str = include_str!("dashboard.css");

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
    pub fn reply(&self) -> Reply {
        let (content_type, body) = match self {
            Asset::Page { base } => (HTML, PAGE.replace("{BASE}", &attribute(base))),
            Asset::Script => (JAVASCRIPT, SCRIPT.to_string()),
            Asset::Style => (CSS, STYLE.to_string()),
        };
        Reply {
            status: 200,
            content_type,
            headers: vec![
                ("Cache-Control".into(), "no-cache".into()),
                (
                    "Content-Security-Policy".into(),
                    CONTENT_SECURITY_POLICY.into(),
                ),
                ("X-Content-Type-Options".into(), "nosniff".into()),
                ("Referrer-Policy".into(), "no-referrer".into()),
                ("X-Frame-Options".into(), "DENY".into()),
            ],
            body,
        }
    }
}

/// `text` escaped for an HTML attribute value in double quotes.
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
