//! Instants as whole microseconds since the Unix epoch: the store's wake
//! scores, tick mark and the server's `TIME`. Microseconds up to 2^53 (the
//! year 2255) are exact in a sorted set's score (a double); later ones
//! keep their order but not their last digits.

use jiff::{SignedDuration, Timestamp};

/// `t` in microseconds since the Unix epoch, floored (an instant with a
/// fraction of a microsecond never moves later).
pub(crate) fn micros(t: Timestamp) -> i64 {
    let since = t.duration_since(Timestamp::UNIX_EPOCH);
    let micros = since.as_micros();
    let floored = if since.is_negative() && since.subsec_micros() * 1000 != since.subsec_nanos() {
        micros - 1
    } else {
        micros
    };
    i64::try_from(floored).unwrap_or(if floored < 0 { i64::MIN } else { i64::MAX })
}

/// The instant `us` microseconds after the Unix epoch, if jiff can hold
/// it.
pub(crate) fn from_micros(us: i64) -> Option<Timestamp> {
    Timestamp::UNIX_EPOCH
        .checked_add(SignedDuration::from_micros(us))
        .ok()
}

/// The answer of `TIME` (seconds, microseconds) as an instant.
pub(crate) fn from_time_reply(seconds: &str, micros: &str) -> Option<Timestamp> {
    let s: i64 = seconds.parse().ok()?;
    let us: i64 = micros.parse().ok()?;
    if !(0..1_000_000).contains(&us) {
        return None;
    }
    from_micros(s.checked_mul(1_000_000)?.checked_add(us)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_microseconds_and_floors() {
        for text in [
            "2026-01-05T00:00:00Z",
            "1970-01-01T00:00:00Z",
            "1969-12-31T23:59:59.999999Z",
            "2026-03-08T07:00:00.123456Z",
        ] {
            let t: Timestamp = text.parse().unwrap();
            assert_eq!(from_micros(micros(t)), Some(t), "{text}");
        }
        let t: Timestamp = "1969-12-31T23:59:59.9999995Z".parse().unwrap();
        assert_eq!(micros(t), -1, "floored");
        let t: Timestamp = "2026-03-08T07:00:00.0000019Z".parse().unwrap();
        assert_eq!(
            from_micros(micros(t)),
            Some("2026-03-08T07:00:00.000001Z".parse().unwrap())
        );
        assert_eq!(
            from_time_reply("1767571200", "250000"),
            Some("2026-01-05T00:00:00.25Z".parse().unwrap())
        );
        assert_eq!(from_time_reply("1767571200", "1000000"), None);
        assert_eq!(from_time_reply("x", "0"), None);
    }
}
