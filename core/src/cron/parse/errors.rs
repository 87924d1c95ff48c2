//! Errors: where a piece of text sits in the original string (columns
//! count characters), and the errors with hints that need more than one
//! line to say (a wrong number of fields, a value out of range). Apart so
//! that the field grammar reads without its messages.

use super::*;

/// Where a piece of text sits in the original string, to report columns.
#[derive(Clone, Copy)]
pub(super) struct Ctx<'a> {
    pub(super) original: &'a str,
    pub(super) field: Field,
}

impl Ctx<'_> {
    fn column(&self, byte_offset: usize) -> usize {
        let end = byte_offset.min(self.original.len());
        self.original
            .char_indices()
            .take_while(|(i, _)| *i < end)
            .count()
            + 1
    }

    pub(super) fn err(
        &self,
        kind: K,
        token: &str,
        offset: usize,
        message: impl Into<String>,
    ) -> CronError {
        CronError::new(kind, Some(self.field), token, self.column(offset), message)
    }
}

pub(super) fn column_of(original: &str, offset: usize) -> usize {
    Ctx {
        original,
        field: Field::Minute,
    }
    .column(offset)
}

pub(super) fn field_count_error(text: &str, fields: &[(usize, &str)], rules: &Rules) -> CronError {
    let expected = rules.fields;
    let found = fields.len();
    let (token, offset) = match fields.get(expected) {
        Some((offset, token)) => (*token, *offset),
        None => ("", text.len()),
    };
    let err = CronError::new(
        K::FieldCount { found, expected },
        None,
        token,
        column_of(text, offset),
        format!(
            "has {found} field{}, not {expected}",
            if found == 1 { "" } else { "s" }
        ),
    );
    match (rules.dialect, found) {
        (Dialect::Standard, 6) | (Dialect::Standard, 7) => err.hint(
            "cronslot does not support seconds (or a year field): every target platform fires at \
             minute granularity, so write minute hour day-of-month month day-of-week",
        ),
        (Dialect::EventBridge, 5) => err
            .hint("EventBridge needs six fields: minute hour day-of-month month day-of-week year"),
        _ => err.hint(match rules.dialect {
            Dialect::EventBridge => "write minute hour day-of-month month day-of-week year",
            _ => "write minute hour day-of-month month day-of-week",
        }),
    }
}

pub(super) fn range_error(
    ctx: Ctx<'_>,
    token: &str,
    offset: usize,
    value: u32,
    min: u32,
    max: u32,
) -> CronError {
    let err = ctx.err(
        K::OutOfRange { value, min, max },
        token,
        offset,
        format!("is out of range {min}-{max}"),
    );
    match (ctx.field, value) {
        (Field::Minute, 60) => err.hint("minutes are 0-59: did you mean 0 of the next hour?"),
        (Field::Hour, 24) => err.hint("hours are 0-23: did you mean 0 (midnight)?"),
        (Field::DayOfMonth, 0) => err.hint("days of the month start at 1"),
        (Field::Month, 0) => err.hint("months are 1-12: did you mean 1 (January)?"),
        (Field::DayOfWeek, 0) if min == 1 => {
            err.hint("this dialect numbers weekdays 1-7 from Sunday: did you mean 1 (Sunday)?")
        }
        (Field::DayOfWeek, _) if min == 0 => {
            err.hint("weekdays are 0-7 (0 and 7 are Sunday) or SUN-SAT")
        }
        (Field::DayOfWeek, _) => err.hint("weekdays are 1-7 (1 is Sunday) or SUN-SAT"),
        _ => err,
    }
}
