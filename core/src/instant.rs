//! Instants as text: RFC 3339, read by cronslot's own parser and written
//! by jiff's printer.
//!
//! Every instant cronslot stores or sends (records, effect ledgers, the
//! object protocol, admin documents, the precompiled manifest) goes
//! through [`text`] (`#[serde(with = "cronslot_core::instant::text")]`,
//! and its [`option`](text::option) and [`vec`](text::vec) forms). The
//! writing is jiff's `Display`, which jiff's own serde support used, so
//! the bytes are the same as before: `2026-03-08T07:00:00Z`, a fraction
//! only when there is one, six-digit signed years outside 0000–9999.
//!
//! The reading is [`parse_instant`] rather than jiff's parser. jiff's
//! parser reads far more than RFC 3339 (RFC 9557 annotations, ISO 8601
//! variants), and brings with it jiff's error formatting; the two were ≈
//! 30 KB of a gzipped Worker (docs/performance.md, "Worker size"). What
//! cronslot reads is what jiff wrote, or an instant a person typed into an
//! admin route or the CLI: RFC 3339 covers both.

use std::fmt;

use jiff::Timestamp;

use crate::cron::calendar::{days_from_civil, days_in_month};

/// Reads an RFC 3339 instant: `YYYY-MM-DDTHH:MM:SS`, an optional fraction
/// of up to nine digits (`.` or `,`), then `Z` or an offset `±HH:MM`.
/// `T` may be `t` or a space, `Z` may be `z`; a year outside 0000–9999 is
/// written with a sign and six digits (`-000001`, `+010000`), as jiff
/// writes it. A leap second (`:60`) reads as `:59`, as jiff reads it.
pub fn parse_instant(text: &str) -> Result<Timestamp, InstantError> {
    let err = |why: &'static str| InstantError {
        text: excerpt(text),
        why,
    };
    let mut r = Reader {
        bytes: text.as_bytes(),
        at: 0,
    };
    let year = match r.peek() {
        Some(sign @ (b'+' | b'-')) => {
            r.at += 1;
            let digits = r
                .digits(6)
                .ok_or_else(|| err("a signed year has six digits"))?;
            if sign == b'-' && digits == 0 {
                return Err(err("year zero is written 0000, not -000000"));
            }
            let year = i64::from(digits);
            if sign == b'-' { -year } else { year }
        }
        _ => i64::from(
            r.digits(4)
                .ok_or_else(|| err("it does not start with a year"))?,
        ),
    };
    r.expect(b'-')
        .ok_or_else(|| err("a '-' belongs after the year"))?;
    let month = r.digits(2).ok_or_else(|| err("the month has two digits"))?;
    r.expect(b'-')
        .ok_or_else(|| err("a '-' belongs after the month"))?;
    let day = r.digits(2).ok_or_else(|| err("the day has two digits"))?;
    let year = i32::try_from(year).map_err(|_| err("the year is out of range"))?;
    if !(1..=12).contains(&month) {
        return Err(err("the month is not 01-12"));
    }
    let month = u8::try_from(month).map_err(|_| err("the month is not 01-12"))?;
    if day < 1 || day > u32::from(days_in_month(year, month)) {
        return Err(err("the month has no such day"));
    }
    let day = u8::try_from(day).map_err(|_| err("the month has no such day"))?;
    match r.next() {
        Some(b'T' | b't' | b' ') => {}
        _ => return Err(err("a 'T' belongs between the date and the time")),
    }
    let hour = r.digits(2).ok_or_else(|| err("the hour has two digits"))?;
    r.expect(b':')
        .ok_or_else(|| err("a ':' belongs after the hour"))?;
    let minute = r
        .digits(2)
        .ok_or_else(|| err("the minute has two digits"))?;
    r.expect(b':')
        .ok_or_else(|| err("the seconds are missing (write HH:MM:SS)"))?;
    let second = r
        .digits(2)
        .ok_or_else(|| err("the second has two digits"))?;
    if hour > 23 || minute > 59 || second > 60 {
        return Err(err("the time of day is out of range"));
    }
    let mut nanos = 0u32;
    if matches!(r.peek(), Some(b'.' | b',')) {
        r.at += 1;
        let start = r.at;
        while let Some(d) = r.peek().filter(u8::is_ascii_digit) {
            if r.at - start == 9 {
                return Err(err("the fraction has more than nine digits"));
            }
            nanos = nanos * 10 + u32::from(d - b'0');
            r.at += 1;
        }
        let len = r.at - start;
        if len == 0 {
            return Err(err("a fraction needs digits after its point"));
        }
        nanos *= 10u32.pow(u32::try_from(9 - len).unwrap_or(0));
    }
    let offset = match r.next() {
        Some(b'Z' | b'z') => 0,
        Some(sign @ (b'+' | b'-')) => {
            let h = r
                .digits(2)
                .ok_or_else(|| err("the offset's hours have two digits"))?;
            r.expect(b':')
                .ok_or_else(|| err("the offset is written ±HH:MM"))?;
            let m = r
                .digits(2)
                .ok_or_else(|| err("the offset's minutes have two digits"))?;
            if h > 23 || m > 59 {
                return Err(err("the offset is out of range"));
            }
            let secs = i64::from(h * 3600 + m * 60);
            if sign == b'-' { -secs } else { secs }
        }
        _ => return Err(err("it has no offset (add Z or ±HH:MM)")),
    };
    if r.at != r.bytes.len() {
        return Err(err("something follows the offset"));
    }
    let second = second.min(59);
    let seconds = days_from_civil(year, month, day) * 86_400
        + i64::from(hour * 3600 + minute * 60 + second)
        - offset;
    let nanos = i32::try_from(nanos).map_err(|_| err("the fraction is out of range"))?;
    Timestamp::new(seconds, nanos).map_err(|_| err("it is outside the range of instants"))
}

/// Reads ASCII digits and punctuation, one byte at a time.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.at += 1;
        Some(b)
    }

    fn expect(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }

    /// Exactly `n` digits.
    fn digits(&mut self, n: usize) -> Option<u32> {
        let mut value = 0u32;
        for _ in 0..n {
            let d = self.next().filter(u8::is_ascii_digit)?;
            value = value * 10 + u32::from(d - b'0');
        }
        Some(value)
    }
}

/// At most 64 characters of the text, for the error.
fn excerpt(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Text that is not an RFC 3339 instant; says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstantError {
    text: String,
    why: &'static str,
}

impl fmt::Display for InstantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not an RFC 3339 instant such as 2026-03-08T07:00:00Z: {}",
            self.text, self.why
        )
    }
}

impl std::error::Error for InstantError {}

/// Serde support: `#[serde(with = "cronslot_core::instant::text")]` on a
/// `Timestamp`, [`option`] on an `Option<Timestamp>`, [`vec`] on a
/// `Vec<Timestamp>`.
pub mod text {
    use std::fmt;

    use jiff::Timestamp;
    use serde::de::{self, Deserializer, SeqAccess, Visitor};
    use serde::ser::{SerializeSeq, Serializer};

    /// Writes the instant as jiff displays it.
    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(t)
    }

    /// Reads an instant with [`parse_instant`](super::parse_instant).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        d.deserialize_str(Instant)
    }

    struct Instant;

    impl Visitor<'_> for Instant {
        type Value = Timestamp;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an RFC 3339 instant")
        }

        fn visit_str<E: de::Error>(self, v: &str) -> Result<Timestamp, E> {
            super::parse_instant(v).map_err(E::custom)
        }
    }

    /// For `Option<Timestamp>`: `null` is `None`.
    pub mod option {
        use super::*;

        /// Writes `None` as `null`.
        pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match t {
                Some(t) => s.collect_str(t),
                None => s.serialize_none(),
            }
        }

        /// Reads `null` as `None`.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
            d.deserialize_option(Maybe)
        }

        struct Maybe;

        impl<'de> Visitor<'de> for Maybe {
            type Value = Option<Timestamp>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 instant or null")
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }

            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
                super::deserialize(d).map(Some)
            }
        }
    }

    /// For `Vec<Timestamp>`.
    pub mod vec {
        use super::*;

        /// Writes the instants as an array.
        pub fn serialize<S: Serializer>(ts: &[Timestamp], s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(ts.len()))?;
            for t in ts {
                seq.serialize_element(&Text(*t))?;
            }
            seq.end()
        }

        /// Reads an array of instants.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Timestamp>, D::Error> {
            d.deserialize_seq(Many)
        }

        /// One instant of the array, written as text.
        struct Text(Timestamp);

        impl serde::Serialize for Text {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&self.0)
            }
        }

        /// One instant of the array, read as text.
        struct One(Timestamp);

        impl<'de> serde::Deserialize<'de> for One {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<One, D::Error> {
                super::deserialize(d).map(One)
            }
        }

        struct Many;

        impl<'de> Visitor<'de> for Many {
            type Value = Vec<Timestamp>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of RFC 3339 instants")
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(One(t)) = seq.next_element()? {
                    out.push(t);
                }
                Ok(out)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(text: &str) -> Timestamp {
        parse_instant(text).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn reads_what_jiff_writes_and_people_type() {
        let cases = [
            ("2026-03-08T07:00:00Z", 1_772_953_200, 0),
            ("2026-03-08t07:00:00z", 1_772_953_200, 0),
            ("2026-03-08 07:00:00Z", 1_772_953_200, 0),
            ("2026-03-08T08:00:00+01:00", 1_772_953_200, 0),
            ("2026-03-08T02:30:00-04:30", 1_772_953_200, 0),
            ("2026-03-08T07:00:00.25Z", 1_772_953_200, 250_000_000),
            ("2026-03-08T07:00:00,000000001Z", 1_772_953_200, 1),
            ("2016-12-31T23:59:60Z", 1_483_228_799, 0),
            ("1970-01-01T00:00:00Z", 0, 0),
            ("0000-01-01T00:00:00Z", -62_167_219_200, 0),
        ];
        for (text, second, nanos) in cases {
            let t = at(text);
            assert_eq!(
                (t.as_second(), t.subsec_nanosecond()),
                (second, nanos),
                "{text}"
            );
        }
        assert_eq!(at(&Timestamp::MIN.to_string()), Timestamp::MIN);
        assert_eq!(at(&Timestamp::MAX.to_string()), Timestamp::MAX);
    }

    #[test]
    fn refuses_what_is_not_rfc_3339_and_says_why() {
        for (text, why) in [
            ("", "does not start with a year"),
            ("2026-03-08", "a 'T' belongs"),
            ("2026-03-08T07:00Z", "seconds are missing"),
            ("2026-03-08T07:00:00", "no offset"),
            ("2026-13-08T07:00:00Z", "month is not 01-12"),
            ("2026-02-29T07:00:00Z", "no such day"),
            ("2026-03-08T24:00:00Z", "out of range"),
            ("2026-03-08T07:00:00.Z", "digits after its point"),
            ("2026-03-08T07:00:00.1234567891Z", "more than nine digits"),
            ("2026-03-08T07:00:00+0100", "±HH:MM"),
            ("2026-03-08T07:00:00Z[UTC]", "follows the offset"),
            ("+099999-01-01T00:00:00Z", "outside the range"),
            ("2026-03-08T07:00:00Zé", "follows the offset"),
        ] {
            let e = parse_instant(text).unwrap_err().to_string();
            assert!(e.contains(why), "{text}: {e}");
            assert!(e.contains("RFC 3339"), "{e}");
        }
        let long = "9".repeat(500);
        assert!(parse_instant(&long).unwrap_err().to_string().len() < 200);
    }

    proptest! {
        /// Whatever jiff writes, this reads back to the same instant, and
        /// agrees with jiff's parser on it.
        #[test]
        fn reads_back_every_instant_jiff_writes(
            second in Timestamp::MIN.as_second()..=Timestamp::MAX.as_second(),
            nanos in prop_oneof![Just(0i32), 0..1_000_000_000i32],
        ) {
            let Ok(t) = Timestamp::new(second, nanos) else { return Ok(()) };
            let text = t.to_string();
            prop_assert_eq!(parse_instant(&text).unwrap(), t);
            prop_assert_eq!(text.parse::<Timestamp>().unwrap(), t);
        }

        /// On any text, both parsers accept the same RFC 3339 instants:
        /// where this one reads an instant, jiff reads the same one.
        #[test]
        fn agrees_with_jiff_where_it_reads(text in "[-+]?[0-9]{4,6}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}([.,][0-9]{1,10})?([Zz]|[-+][0-9]{2}:[0-9]{2})") {
            if let Ok(ours) = parse_instant(&text) {
                prop_assert_eq!(text.parse::<Timestamp>().ok(), Some(ours), "{}", text);
            }
        }
    }
}
