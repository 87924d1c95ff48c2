//! croner's `CronDateTime` for jiff 1.0's `ZonedDateTime`, ported from
//! croner's `time/jiff_impl.rs` (which implements it for jiff 0.2, the jiff
//! croner links). The differential test and the benchmark both drive
//! croner through it, so both engines read the same bundled tz data.

use std::cmp::Ordering;

use croner::{CivilDate, CivilDateTime, CivilTime, CronDateTime, Resolution, Weekday};
use jiff::tz::AmbiguousOffset;
use jiff::{SignedDuration, ZonedDateTime};

#[derive(Clone, Debug)]
pub struct Zt(pub ZonedDateTime);

impl CronDateTime for Zt {
    #[inline]
    fn to_civil(&self) -> CivilDateTime {
        let dt = self.0.datetime();
        CivilDateTime::new(
            CivilDate::from_parts_unchecked(
                i32::from(dt.year()),
                dt.month() as u32,
                dt.day() as u32,
            ),
            CivilTime::from_parts_unchecked(
                dt.hour() as u32,
                dt.minute() as u32,
                dt.second() as u32,
            ),
        )
    }

    #[inline]
    fn civil_weekday(&self) -> Weekday {
        Weekday::from_days_from_sunday(self.0.weekday().to_sunday_zero_offset() as u32)
    }

    #[inline]
    fn resolve_civil(
        &self,
        civil: CivilDateTime,
    ) -> Result<Resolution<Self>, croner::errors::CronError> {
        use croner::errors::CronError as E;
        let year = i16::try_from(civil.year()).map_err(|_| E::InvalidDate)?;
        let dt = jiff::civil::DateTime::new(
            year,
            civil.month() as i8,
            civil.day() as i8,
            civil.hour() as i8,
            civil.minute() as i8,
            civil.second() as i8,
            0,
        )
        .map_err(|_| E::InvalidDate)?;
        let ambiguous = self.0.time_zone().to_ambiguous_zoned_datetime(dt);
        Ok(match ambiguous.offset() {
            AmbiguousOffset::Unambiguous { .. } => {
                Resolution::Single(Zt(ambiguous.unambiguous().map_err(|_| E::InvalidTime)?))
            }
            AmbiguousOffset::Fold { .. } => {
                let earlier = ambiguous.clone().earlier().map_err(|_| E::InvalidTime)?;
                let later = ambiguous.later().map_err(|_| E::InvalidTime)?;
                Resolution::Ambiguous(Zt(earlier), Zt(later))
            }
            AmbiguousOffset::Gap { .. } => Resolution::Gap,
        })
    }

    #[inline]
    fn checked_add_seconds(&self, seconds: i64) -> Option<Self> {
        self.0
            .checked_add(SignedDuration::from_secs(seconds))
            .ok()
            .map(Zt)
    }

    #[inline]
    fn cmp_instant(&self, other: &Self) -> Ordering {
        self.0.timestamp().cmp(&other.0.timestamp())
    }
}
