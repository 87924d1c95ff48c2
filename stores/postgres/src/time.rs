//! `timestamptz` in and out as jiff's `Timestamp`, in PostgreSQL's binary
//! form: microseconds since 2000-01-01 00:00:00 UTC.

use std::error::Error;

use bytes::BytesMut;
use jiff::{SignedDuration, Timestamp};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};

/// 2000-01-01T00:00:00Z in Unix seconds: PostgreSQL's epoch.
const PG_EPOCH_UNIX_SECONDS: i64 = 946_684_800;

/// A `timestamptz`. Nanoseconds are floored to microseconds on the way in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PgTime(pub(crate) Timestamp);

fn pg_epoch() -> Timestamp {
    // In range by construction; UNIX_EPOCH is the fallback only in theory.
    Timestamp::from_second(PG_EPOCH_UNIX_SECONDS).unwrap_or(Timestamp::UNIX_EPOCH)
}

impl PgTime {
    fn micros(self) -> i64 {
        let since = self.0.duration_since(pg_epoch());
        let micros = since.as_micros();
        // `as_micros` truncates toward zero; floor instead, so that an
        // instant before 2000 with a fraction does not move later.
        let floored = if since.is_negative() && since.subsec_micros() * 1000 != since.subsec_nanos()
        {
            micros - 1
        } else {
            micros
        };
        i64::try_from(floored).unwrap_or(if floored < 0 { i64::MIN } else { i64::MAX })
    }
}

impl ToSql for PgTime {
    fn to_sql(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        out.extend_from_slice(&self.micros().to_be_bytes());
        Ok(IsNull::No)
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }

    to_sql_checked!();
}

impl<'a> FromSql<'a> for PgTime {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<PgTime, Box<dyn Error + Sync + Send>> {
        let bytes: [u8; 8] = raw
            .try_into()
            .map_err(|_| format!("a timestamptz of {} bytes, not 8", raw.len()))?;
        let micros = i64::from_be_bytes(bytes);
        if micros == i64::MAX || micros == i64::MIN {
            return Err("an infinite timestamptz".into());
        }
        let t = pg_epoch()
            .checked_add(SignedDuration::from_micros(micros))
            .map_err(|e| format!("a timestamptz out of range: {e}"))?;
        Ok(PgTime(t))
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::TIMESTAMPTZ
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_microseconds() {
        for text in [
            "2026-01-05T00:00:00Z",
            "2000-01-01T00:00:00Z",
            "1999-12-31T23:59:59.999999Z",
            "2026-03-08T07:00:00.123456Z",
        ] {
            let t: Timestamp = text.parse().unwrap();
            let mut buf = BytesMut::new();
            PgTime(t).to_sql(&Type::TIMESTAMPTZ, &mut buf).unwrap();
            let back = PgTime::from_sql(&Type::TIMESTAMPTZ, &buf).unwrap();
            assert_eq!(back.0, t, "{text}");
        }
        let t: Timestamp = "1999-12-31T23:59:59.9999995Z".parse().unwrap();
        assert_eq!(PgTime(t).micros(), -1, "floored");
    }
}
