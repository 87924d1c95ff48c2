//! The pieces of a store URL (`SCHEME://USER:PASSWORD@HOST:PORT/PATH?QUERY`)
//! that every store parses the same way: percent-decoding, the user
//! information, the host and port, the query's parameters, and the URL as
//! errors quote it (password hidden). Each store keeps its own schemes,
//! parameters, messages and typed location; its errors are
//! [`LocationError`]s.
//!
//! Errors are worded as the stores word theirs: [`StoreUrl::parse`],
//! [`ParamError::message`] and [`QueryParams::unknown_message`] give whole
//! sentences (`store "URL" …`); the other helpers give the part a store
//! puts after `store "URL": ` (and its syntax after that where it quotes
//! it). None of them quotes a password.

use std::fmt;
use std::time::Duration;

use super::LocationError;
use percent_encoding::{
    AsciiSet, CONTROLS, PercentEncode, percent_decode_str, utf8_percent_encode,
};

/// A password: compared, never shown (its `Debug` is `***`, and it has no
/// `Display`).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a password.
    pub fn new(password: String) -> Secret {
        Secret(password)
    }

    /// The password itself, for the one place that sends it to a server.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// What a URL component (user name, host, database, …) may not contain
/// unencoded when a location is shown.
const COMPONENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b':')
    .add(b'?')
    .add(b'@')
    .add(b'[')
    .add(b']')
    .add(b'&')
    .add(b'=');

/// Why a component could not be percent-decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// A `%` not followed by two hex digits.
    BadEscape,
    /// The decoded bytes are not UTF-8.
    NotUtf8,
}

/// Percent-decodes one URL component (`%2F` is `/`; `+` stays `+`).
pub fn decode_component(text: &str) -> Result<String, DecodeError> {
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
        {
            return Err(DecodeError::BadEscape);
        }
    }
    percent_decode_str(text)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| DecodeError::NotUtf8)
}

/// `text` percent-encoded as one URL component: the characters that
/// separate a URL's parts (`:/@?#&=[]`), `%`, space, `"` and controls
/// are encoded.
pub fn encode_component(text: &str) -> PercentEncode<'_> {
    utf8_percent_encode(text, COMPONENT)
}

/// A host as written in a URL: an IPv6 address (any host with a `:`) in
/// brackets, any other host percent-encoded.
pub fn host_in_url(host: &str) -> impl fmt::Display + '_ {
    struct Host<'a>(&'a str);
    impl fmt::Display for Host<'_> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            if self.0.contains(':') {
                write!(f, "[{}]", self.0)
            } else {
                write!(f, "{}", encode_component(self.0))
            }
        }
    }
    Host(host)
}

/// The parts of a URL after its `SCHEME://`, split but not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlParts<'a> {
    /// The text before the last `@` (before the query), if there is one.
    pub userinfo: Option<&'a str>,
    /// `HOST[:PORT]`: from the `@` (or the start) to the first `/`.
    pub hostport: &'a str,
    /// After that `/`, without it; empty without one.
    pub path: &'a str,
    /// After the first `?`; `None` without one.
    pub query: Option<&'a str>,
}

/// Splits what follows `SCHEME://` into user information, host and port,
/// path and query. The user information ends at the last `@` before the
/// query, so that a password holding an unencoded `/` or `@` is still
/// taken as a password, never quoted as a host or a path in an error.
pub fn split_url(after_slashes: &str) -> UrlParts<'_> {
    let (before_query, query) = match after_slashes.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (after_slashes, None),
    };
    let (userinfo, hostpath) = match before_query.rfind('@') {
        Some(at) => (Some(&before_query[..at]), &before_query[at + 1..]),
        None => (None, before_query),
    };
    let (hostport, path) = match hostpath.find('/') {
        Some(slash) => (&hostpath[..slash], &hostpath[slash + 1..]),
        None => (hostpath, ""),
    };
    UrlParts {
        userinfo,
        hostport,
        path,
        query,
    }
}

/// What a store's URLs look like, for [`StoreUrl::parse`].
#[derive(Debug, Clone, Copy)]
pub struct UrlForm<'a> {
    /// The store's kind, as in `store "URL" is not a Redis store`.
    pub kind: &'a str,
    /// The schemes the store takes (compared without regard to case).
    pub schemes: &'a [&'a str],
    /// The syntax expected, which ends each error about the URL's form.
    pub syntax: &'a str,
    /// How errors quote user information without a `:`.
    pub bare_userinfo: BareUserinfo,
    /// Said after `a # in a password is written %23` when the URL has a
    /// `#fragment` (which no store takes).
    pub fragment_note: &'a str,
}

/// A store URL of a known scheme, split into its parts (not yet decoded),
/// with the text its errors quote.
#[derive(Debug, Clone)]
pub struct StoreUrl<'a> {
    /// The URL with its password hidden ([`redact_url`]): what errors
    /// quote, as `store "SHOWN": …`.
    pub shown: String,
    /// The scheme as written: one of the store's.
    pub scheme: &'a str,
    /// What follows `SCHEME://`.
    pub parts: UrlParts<'a>,
}

impl<'a> StoreUrl<'a> {
    /// Checks the scheme (one of `form.schemes`, followed by `//`) and that
    /// there is no `#fragment`, then splits the rest with [`split_url`].
    /// Surrounding white space is ignored.
    pub fn parse(url: &'a str, form: &UrlForm<'_>) -> Result<StoreUrl<'a>, LocationError> {
        let shown = redact_url(url, form.bare_userinfo);
        let syntax = form.syntax;
        let error = |message: String| LocationError {
            input: shown.clone(),
            message,
        };
        let Some((scheme, rest)) = url.trim().split_once(':') else {
            return Err(error(format!("store {shown:?} has no scheme: {syntax}")));
        };
        if !form.schemes.iter().any(|s| scheme.eq_ignore_ascii_case(s)) {
            return Err(error(format!(
                "store {shown:?} is not a {} store (scheme {scheme:?}): {syntax}",
                form.kind
            )));
        }
        let Some(rest) = rest.strip_prefix("//") else {
            return Err(error(format!(
                "store {shown:?} lacks the // after {scheme}: {syntax}"
            )));
        };
        if rest.contains('#') {
            return Err(error(format!(
                "store {shown:?} has a #fragment, which means nothing here (a # in a password \
                 is written %23{}): {syntax}",
                form.fragment_note
            )));
        }
        Ok(StoreUrl {
            shown,
            scheme,
            parts: split_url(rest),
        })
    }

    /// An error about this URL: `message` (which quotes [`Self::shown`]
    /// if it quotes the URL at all).
    pub fn error(&self, message: String) -> LocationError {
        LocationError {
            input: self.shown.clone(),
            message,
        }
    }
}

/// Splits `USER[:PASSWORD]` at its first `:` and decodes both. The error
/// says which part is not valid percent-encoded UTF-8.
pub fn parse_userinfo(userinfo: &str) -> Result<(String, Option<Secret>), String> {
    let (user, password) = match userinfo.split_once(':') {
        Some((u, p)) => (u, Some(p)),
        None => (userinfo, None),
    };
    let user = decode_component(user)
        .map_err(|_| "the user name is not valid percent-encoded UTF-8".to_string())?;
    let password = match password {
        None => None,
        Some(p) => Some(Secret(decode_component(p).map_err(|_| {
            "the password is not valid percent-encoded UTF-8 (write %25 for a % in it)".to_string()
        })?)),
    };
    Ok((user, password))
}

/// Parses `HOST[:PORT]` or `[IPV6][:PORT]`: the host (decoded, or the
/// IPv6 address without its brackets, never empty) and the port
/// (`default_port` when none is given; 1 to 65535). One host only: a `,`
/// (libpq's list of hosts) is refused.
pub fn parse_host_port(hostport: &str, default_port: u16) -> Result<(String, u16), String> {
    if hostport.is_empty() {
        return Err("names no host".to_string());
    }
    if hostport.contains(',') {
        return Err("names several hosts; the store connects to one".to_string());
    }
    let (host, port) = if let Some(rest) = hostport.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return Err("an IPv6 host lacks its closing ']'".to_string());
        };
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(|| "unexpected text after the IPv6 host".to_string())?,
            ),
        };
        (v6.to_string(), port)
    } else {
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        };
        let host = decode_component(host)
            .map_err(|_| "the host is not valid percent-encoded UTF-8".to_string())?;
        (host, port)
    };
    if host.is_empty() {
        return Err("names no host".to_string());
    }
    let port = match port {
        None => default_port,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("port {p:?} is not a number from 1 to 65535"))?,
    };
    Ok((host, port))
}

/// A parameter of a URL's query that cannot be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamError {
    /// A parameter's name is not valid percent-encoded UTF-8.
    Name,
    /// This known parameter was given before.
    Twice(String),
    /// The value of this parameter is not valid percent-encoded UTF-8.
    Value(String),
}

impl ParamError {
    /// The error's sentence about the store `shown` (its redacted URL).
    pub fn message(&self, shown: &str) -> String {
        match self {
            ParamError::Name => {
                format!("store {shown:?}: a parameter name is not valid percent-encoded UTF-8")
            }
            ParamError::Twice(name) => format!("store {shown:?} gives parameter {name:?} twice"),
            ParamError::Value(name) => {
                format!("store {shown:?}: the value of {name} is not valid percent-encoded UTF-8")
            }
        }
    }
}

/// The parameters of a URL's query (`NAME[=VALUE]&…`), decoded, in order:
/// the known ones are yielded, each at most once (a second one is
/// [`ParamError::Twice`]); the others are collected for
/// [`QueryParams::unknown_message`], so that the store can name all of
/// them after checking the known ones. Empty pairs (`&&`) are skipped; a
/// name without `=` has the empty value.
#[derive(Debug, Clone)]
pub struct QueryParams<'a> {
    pairs: std::str::Split<'a, char>,
    known: &'a [&'a str],
    seen: Vec<String>,
    unknown: Vec<String>,
}

impl<'a> QueryParams<'a> {
    /// The parameters of `query` (without its `?`; `None`: no query), of
    /// which the store knows `known`.
    pub fn new(query: Option<&'a str>, known: &'a [&'a str]) -> QueryParams<'a> {
        QueryParams {
            pairs: query.unwrap_or("").split('&'),
            known,
            seen: Vec::new(),
            unknown: Vec::new(),
        }
    }

    /// The parameters the store does not know, in order (as far as the
    /// query has been read).
    pub fn unknown(&self) -> &[String] {
        &self.unknown
    }

    /// Once the query is read, the error naming its unknown parameters,
    /// `None` if there are none: `store "URL" has unknown parameter(s)
    /// "a", "b"[password_hint]; known are KNOWN`. `password_hint` (which
    /// says where a password goes instead) is added when one of them is
    /// `password`.
    pub fn unknown_message(&self, shown: &str, password_hint: &str, known: &str) -> Option<String> {
        if self.unknown.is_empty() {
            return None;
        }
        let names = self
            .unknown
            .iter()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(", ");
        let hint = if self.unknown.iter().any(|k| k == "password") {
            password_hint
        } else {
            ""
        };
        let plural = if self.unknown.len() == 1 { "" } else { "s" };
        Some(format!(
            "store {shown:?} has unknown parameter{plural} {names}{hint}; known are {known}"
        ))
    }
}

impl Iterator for QueryParams<'_> {
    /// A known parameter's name and decoded value.
    type Item = Result<(String, String), ParamError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let pair = self.pairs.next()?;
            if pair.is_empty() {
                continue;
            }
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let Ok(name) = decode_component(name) else {
                return Some(Err(ParamError::Name));
            };
            if !self.known.contains(&name.as_str()) {
                self.unknown.push(name);
                continue;
            }
            if self.seen.contains(&name) {
                return Some(Err(ParamError::Twice(name)));
            }
            let Ok(value) = decode_component(value) else {
                return Some(Err(ParamError::Value(name)));
            };
            self.seen.push(name.clone());
            return Some(Ok((name, value)));
        }
    }
}

/// A timeout parameter's value: whole seconds from 1 to 86400 (a day).
/// The error names the parameter `name`.
pub fn parse_seconds(name: &str, value: &str) -> Result<Duration, String> {
    value
        .parse::<u64>()
        .ok()
        .filter(|s| (1..=86_400).contains(s))
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{name} {value:?} is not a whole number of seconds from 1 to 86400"))
}

/// What [`redact_url`] does with user information that has no `:`
/// (`SCHEME://TEXT@HOST`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BareUserinfo {
    /// It is a user name (PostgreSQL): shown.
    User,
    /// It may be a password given without its `:` (Redis): hidden.
    Hide,
}

/// `url` with any password replaced by `***`, whatever else is wrong with
/// it: the text between the first `:` after `//` (or, without `//`, the
/// first `:`) and the last `@` (and, with [`BareUserinfo::Hide`], the
/// whole user information when it has no `:`), and any `password=`
/// parameter's value.
pub fn redact_url(url: &str, bare_userinfo: BareUserinfo) -> String {
    let mut out = url.to_string();
    // Without `//` (a mistyped URL), from the start: better to hide too
    // much than a password.
    let start = out.find("://").map_or(0, |i| i + 3);
    if let Some(at) = out.rfind('@').filter(|at| *at >= start) {
        if let Some(colon) = out[start..at].find(':').map(|c| start + c) {
            out.replace_range(colon + 1..at, "***");
        } else if bare_userinfo == BareUserinfo::Hide {
            out.replace_range(start..at, "***");
        }
    }
    // A password given as a parameter (which stores refuse) is hidden too.
    let mut from = 0;
    while let Some(found) = out[from..].find("password=") {
        let begin = from + found + "password=".len();
        let end = out[begin..].find('&').map_or(out.len(), |e| begin + e);
        out.replace_range(begin..end, "***");
        from = begin + 3;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_refuses_bad_escapes_and_bytes_that_are_not_utf8() {
        assert_eq!(decode_component("a%20b%2F%40+c"), Ok("a b/@+c".into()));
        assert_eq!(decode_component(""), Ok(String::new()));
        assert_eq!(decode_component("%C3%A9"), Ok("é".into()));
        for bad in ["%", "%2", "%zz", "a%2g", "%+1", "100%"] {
            assert_eq!(decode_component(bad), Err(DecodeError::BadEscape), "{bad}");
        }
        assert_eq!(decode_component("%FF"), Err(DecodeError::NotUtf8));
        assert_eq!(decode_component("%C3"), Err(DecodeError::NotUtf8));
    }

    #[test]
    fn encoding_round_trips_through_decoding() {
        let text = "al@ice:/? #&=[]%\"é";
        let encoded = encode_component(text).to_string();
        assert!(!encoded.contains(['@', ':', '/', '?', ' ', '#', '&', '=', '[', ']', '"']));
        assert_eq!(decode_component(&encoded), Ok(text.to_string()));
        assert_eq!(host_in_url("::1").to_string(), "[::1]");
        assert_eq!(host_in_url("db.example").to_string(), "db.example");
        assert_eq!(host_in_url("/run/pg").to_string(), "%2Frun%2Fpg");
    }

    #[test]
    fn a_url_splits_at_its_last_at_sign() {
        assert_eq!(
            split_url("u:a/b@c@host:1/db/x?k=v&k2"),
            UrlParts {
                userinfo: Some("u:a/b@c"),
                hostport: "host:1",
                path: "db/x",
                query: Some("k=v&k2"),
            }
        );
        assert_eq!(
            split_url("host"),
            UrlParts {
                userinfo: None,
                hostport: "host",
                path: "",
                query: None,
            }
        );
        // An '@' in the query is not user information.
        assert_eq!(split_url("h/d?x=a@b").userinfo, None);
    }

    #[test]
    fn a_store_url_has_one_of_the_store_schemes_and_no_fragment() {
        let form = UrlForm {
            kind: "Test",
            schemes: &["test", "tests"],
            syntax: "expected test://…",
            bare_userinfo: BareUserinfo::Hide,
            fragment_note: "; NOTE",
        };
        let url = StoreUrl::parse(" TESTS://u:pw@h:1/p?q=1 ", &form).unwrap();
        assert_eq!(url.scheme, "TESTS");
        assert_eq!(url.shown, " TESTS://u:***@h:1/p?q=1 ");
        assert_eq!(url.parts, split_url("u:pw@h:1/p?q=1"));
        let error = |text: &str| {
            let e = StoreUrl::parse(text, &form).unwrap_err();
            assert!(
                !e.message.contains("pw") && !e.input.contains("pw"),
                "{e:?}"
            );
            e.message
        };
        assert_eq!(
            error("u:pw@h"),
            "store \"u:***@h\" is not a Test store (scheme \"u\"): expected test://…"
        );
        assert_eq!(
            error("nothing"),
            "store \"nothing\" has no scheme: expected test://…"
        );
        assert_eq!(
            error("test:u:pw@h"),
            "store \"test:***@h\" lacks the // after test: expected test://…"
        );
        assert_eq!(
            error("test://:pw/x@h#f"),
            "store \"test://:***@h#f\" has a #fragment, which means nothing here (a # in a \
             password is written %23; NOTE): expected test://…"
        );
        assert_eq!(
            error("test://pw@h#f").split('"').nth(1),
            Some("test://***@h#f")
        );
    }

    #[test]
    fn userinfo_splits_at_its_first_colon() {
        let (user, password) = parse_userinfo("al%40ice:s%3Acr:et").unwrap();
        assert_eq!(user, "al@ice");
        assert_eq!(password.as_ref().map(Secret::expose), Some("s:cr:et"));
        assert_eq!(parse_userinfo("bob").unwrap(), ("bob".to_string(), None));
        let (user, password) = parse_userinfo(":").unwrap();
        assert_eq!(
            (user.as_str(), password.as_ref().map(Secret::expose)),
            ("", Some(""))
        );
        assert!(parse_userinfo("b%zz:p").unwrap_err().contains("user name"));
        let e = parse_userinfo("u:Zx9%zz").unwrap_err();
        assert!(e.contains("password is not valid"), "{e}");
        assert!(!e.contains("Zx9"), "{e}");
    }

    #[test]
    fn hosts_and_ports() {
        assert_eq!(parse_host_port("h", 5432), Ok(("h".into(), 5432)));
        assert_eq!(parse_host_port("h:7000", 1), Ok(("h".into(), 7000)));
        assert_eq!(
            parse_host_port("%2Frun%2Fpg:5433", 1),
            Ok(("/run/pg".into(), 5433))
        );
        assert_eq!(parse_host_port("[::1]", 6379), Ok(("::1".into(), 6379)));
        assert_eq!(
            parse_host_port("[fe80::1%25eth0]:7", 1),
            Ok(("fe80::1%25eth0".into(), 7))
        );
        let error = |text: &str| parse_host_port(text, 1).unwrap_err();
        assert_eq!(error(""), "names no host");
        assert_eq!(error(":5432"), "names no host");
        assert_eq!(error("[]"), "names no host");
        assert_eq!(
            error("a,b"),
            "names several hosts; the store connects to one"
        );
        assert_eq!(error("[::1"), "an IPv6 host lacks its closing ']'");
        assert_eq!(error("[::1]x"), "unexpected text after the IPv6 host");
        assert_eq!(error("h%zz"), "the host is not valid percent-encoded UTF-8");
        for port in ["0", "65536", "99999", "x", "-1", ""] {
            assert_eq!(
                error(&format!("h:{port}")),
                format!("port {port:?} is not a number from 1 to 65535")
            );
        }
        assert_eq!(
            error("[::1]:0"),
            "port \"0\" is not a number from 1 to 65535"
        );
    }

    #[test]
    fn known_parameters_once_each_and_the_unknown_named_together() {
        let known = ["a", "b c"];
        let mut params = QueryParams::new(Some("a=1%2F2&&x&b%20c&y=%zz&password=p"), &known);
        assert_eq!(params.next(), Some(Ok(("a".into(), "1/2".into()))));
        assert_eq!(params.next(), Some(Ok(("b c".into(), String::new()))));
        assert_eq!(params.next(), None);
        assert_eq!(params.unknown(), ["x", "y", "password"]);
        assert_eq!(
            params.unknown_message("s", " (HINT)", "a, b c").as_deref(),
            Some(
                "store \"s\" has unknown parameters \"x\", \"y\", \"password\" (HINT); known are a, b c"
            )
        );

        let mut params = QueryParams::new(Some("z=1"), &known);
        assert_eq!(params.next(), None);
        assert_eq!(
            params.unknown_message("s", " (HINT)", "a").as_deref(),
            Some("store \"s\" has unknown parameter \"z\"; known are a")
        );
        let params = QueryParams::new(None, &known);
        assert_eq!(params.unknown_message("s", "", ""), None);

        let errors = |query| {
            QueryParams::new(Some(query), &known)
                .find_map(Result::err)
                .map(|e| e.message("S"))
        };
        assert_eq!(
            errors("a=1&b%20c=2&a=3").as_deref(),
            Some("store \"S\" gives parameter \"a\" twice")
        );
        assert_eq!(
            errors("%zz=1").as_deref(),
            Some("store \"S\": a parameter name is not valid percent-encoded UTF-8")
        );
        assert_eq!(
            errors("a=%FF").as_deref(),
            Some("store \"S\": the value of a is not valid percent-encoded UTF-8")
        );
        // Unknown parameters given twice are only named.
        assert_eq!(errors("x&x"), None);
    }

    #[test]
    fn seconds() {
        assert_eq!(parse_seconds("t", "1"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_seconds("t", "86400"), Ok(Duration::from_secs(86_400)));
        for bad in ["0", "86401", "1.5", "", "x"] {
            assert_eq!(
                parse_seconds("t", bad),
                Err(format!(
                    "t {bad:?} is not a whole number of seconds from 1 to 86400"
                ))
            );
        }
    }

    #[test]
    fn redaction_hides_passwords_wherever_they_are() {
        use BareUserinfo::{Hide, User};
        for bare in [User, Hide] {
            assert_eq!(redact_url("p://u:pass@h/d", bare), "p://u:***@h/d");
            assert_eq!(redact_url("p://u:a/b@c@host/d", bare), "p://u:***@host/d");
            assert_eq!(redact_url("p://:pass@h", bare), "p://:***@h");
            assert_eq!(redact_url("p://h/d", bare), "p://h/d");
            assert_eq!(redact_url("u:pass@h", bare), "u:***@h");
            assert_eq!(
                redact_url("p://h/d?x=1&password=pw&y=2&password=q", bare),
                "p://h/d?x=1&password=***&y=2&password=***"
            );
        }
        assert_eq!(redact_url("p://secret@h/d", User), "p://secret@h/d");
        assert_eq!(redact_url("p://secret@h/d", Hide), "p://***@h/d");
    }

    #[test]
    fn a_secret_never_shows() {
        let secret = Secret::new("Zx9-very-secret".into());
        assert_eq!(format!("{secret:?}"), "***");
        assert_eq!(format!("{:?}", Some(&secret)), "Some(***)");
        assert_eq!(secret.expose(), "Zx9-very-secret");
    }
}
