//! The bearer token check.

use super::{ErrorKind, Reply, TOKEN_SECRET};

/// Compares a presented token with the secret in time that depends only on
/// the presented token's length: every byte of it is compared (against the
/// secret repeated to that length) and the results are OR-ed together, with
/// no early exit. The secret's content and length do not change the time
/// taken, so a timing attacker learns nothing about either; the one thing
/// that varies, the presented length, the attacker already knows.
/// An empty secret matches nothing.
pub fn token_matches(presented: &[u8], secret: &[u8]) -> bool {
    if secret.is_empty() {
        return false;
    }
    let mut diff: u8 = 0;
    for (i, &b) in presented.iter().enumerate() {
        // `i % len` keeps the index in range without a branch on the data.
        let s = secret[i % secret.len()];
        diff |= std::hint::black_box(b ^ s);
    }
    // Lengths are compared without branching on their values either.
    let len_diff = (presented.len() ^ secret.len()) as u64;
    let len_diff = (len_diff | len_diff.wrapping_neg()) >> 63;
    std::hint::black_box(u64::from(diff) | len_diff) == 0
}

/// A bearer secret a route needs: the variable (a Worker's secret, or
/// `cronslot serve`'s environment) that holds it, and what it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BearerSecret {
    /// The secret's name: [`TOKEN_SECRET`] or [`TICK_SECRET`].
    pub name: &'static str,
    /// What it opens, for messages ("the admin routes").
    pub opens: &'static str,
}

/// The admin routes' token ([`TOKEN_SECRET`]).
pub const ADMIN: BearerSecret = BearerSecret {
    name: TOKEN_SECRET,
    opens: "the admin routes (all but {prefix}/health)",
};

/// The secret of `POST {prefix}/tick` on `cronslot serve` (Vercel Cron's
/// `CRON_SECRET` convention).
pub const TICK_SECRET: &str = "CRONSLOT_TICK_SECRET";

/// The tick route's secret ([`TICK_SECRET`]).
pub const TICK: BearerSecret = BearerSecret {
    name: TICK_SECRET,
    opens: "the tick route",
};

/// Checks the `Authorization` header against the admin token.
pub(crate) fn authorize(authorization: Option<&str>, token: Option<&str>) -> Result<(), Reply> {
    authorize_bearer(authorization, token, ADMIN)
}

/// Checks the `Authorization` header against the configured `secret`
/// (compared in constant time: [`token_matches`]). Whitespace around
/// either is ignored (a secret set with `echo` often ends in a newline;
/// bearer tokens never contain whitespace). A secret that is missing or
/// blank means the deployment is not configured: refused (503), never
/// open.
pub fn authorize_bearer(
    authorization: Option<&str>,
    secret: Option<&str>,
    kind: BearerSecret,
) -> Result<(), Reply> {
    let BearerSecret { name, opens } = kind;
    let secret = secret.map(str::trim).unwrap_or_default();
    if secret.is_empty() {
        return Err(Reply::error(
            503,
            ErrorKind::NotConfigured,
            format!(
                "{opens} are disabled: no {name} is configured. Set it (on a Worker, the secret \
                 `wrangler secret put {name}`; for `cronslot serve`, its environment) and send it \
                 as `Authorization: Bearer <token>`"
            ),
        ));
    }
    let Some(header) = authorization.map(str::trim).filter(|h| !h.is_empty()) else {
        return Err(unauthorized(
            &format!("missing token: send `Authorization: Bearer <token>` with the {name} token"),
            None,
        ));
    };
    let (scheme, rest) = header.split_once([' ', '\t']).unwrap_or((header, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(unauthorized(
            "the Authorization header must use the Bearer scheme: `Authorization: Bearer <token>`",
            Some("invalid_request"),
        ));
    }
    let presented = rest.trim();
    if presented.is_empty() {
        return Err(unauthorized(
            "empty bearer token: send `Authorization: Bearer <token>`",
            Some("invalid_request"),
        ));
    }
    if token_matches(presented.as_bytes(), secret.as_bytes()) {
        Ok(())
    } else {
        Err(unauthorized(
            &format!("token refused: it does not match {name}"),
            Some("invalid_token"),
        ))
    }
}

/// 401 with the challenge RFC 6750 asks for.
fn unauthorized(message: &str, error: Option<&str>) -> Reply {
    let challenge = match error {
        Some(e) => format!("Bearer realm=\"cronslot\", error=\"{e}\""),
        None => "Bearer realm=\"cronslot\"".to_string(),
    };
    Reply::error(401, ErrorKind::Unauthorized, message).with_header("WWW-Authenticate", challenge)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_whole_tokens() {
        assert!(token_matches(b"s3cret", b"s3cret"));
        assert!(!token_matches(b"s3cret", b"s3creT"));
        assert!(!token_matches(b"s3cre", b"s3cret"));
        assert!(!token_matches(b"s3crets3cret", b"s3cret"));
        assert!(!token_matches(b"", b"s3cret"));
        assert!(!token_matches(b"", b""));
        assert!(!token_matches(b"x", b""));
    }

    #[test]
    fn header_forms() {
        let t = Some("abc");
        assert!(authorize(Some("Bearer abc"), t).is_ok());
        assert!(authorize(Some("bearer   abc "), t).is_ok());
        assert!(authorize(Some("Bearer abc"), Some("abc\n")).is_ok());
        assert_eq!(authorize(Some("Basic abc"), t).unwrap_err().status, 401);
        assert_eq!(authorize(Some("Bearer"), t).unwrap_err().status, 401);
        assert_eq!(authorize(None, t).unwrap_err().status, 401);
        assert_eq!(authorize(Some("Bearer abc"), None).unwrap_err().status, 503);
        assert_eq!(
            authorize(Some("Bearer "), Some(" ")).unwrap_err().status,
            503
        );
    }
}
