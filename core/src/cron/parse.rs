//! One parser for the three dialects. The grammar of a field is the same
//! everywhere (lists of values, ranges and steps); the dialects differ in
//! field count, weekday numbering and which specials they accept, and those
//! differences are the `Rules` below.

mod errors;
mod fields;
mod specials;

use super::calendar;
use super::error::{CronError, CronErrorKind as K};
use super::{CronExpr, DayOfMonth, DayOfWeek, Dialect, Field, YearSet};

use errors::{Ctx, column_of, field_count_error, range_error};
use fields::{items, parse_plain, parse_ranges, parse_value, parse_years};
use specials::{check_specials, parse_dom, parse_dow};

const MONTH_NAMES: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const DAY_NAMES: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Names a field accepts, and the number of the first one.
type Names<'a> = Option<(&'a [&'a str], u32)>;

struct Rules {
    dialect: Dialect,
    fields: usize,
    /// The number the dialect gives Sunday (0 in POSIX cron, 1 in Quartz-like).
    sunday: u32,
    /// Highest day-of-week number (7: Sunday again in POSIX; Saturday in Quartz).
    dow_max: u32,
    question: bool,
    plus: bool,
    macros: bool,
    dow_step: bool,
    /// `L` alone in day-of-week means Saturday (Quartz).
    dow_bare_l: bool,
    /// Only a bare `*` leaves a day field unrestricted (Cloudflare's
    /// parser, saffron: `*/2` restricts days, so with the other day field
    /// restricted too a day matches if either matches). Otherwise any
    /// field that begins with `*` does not count as restricting (Vixie).
    bare_star_only: bool,
}

impl Rules {
    fn of(dialect: Dialect) -> Rules {
        match dialect {
            Dialect::Standard => Rules {
                dialect,
                fields: 5,
                sunday: 0,
                dow_max: 7,
                question: true,
                plus: true,
                macros: true,
                dow_step: true,
                dow_bare_l: false,
                bare_star_only: false,
            },
            Dialect::EventBridge => Rules {
                dialect,
                fields: 6,
                sunday: 1,
                dow_max: 7,
                question: true,
                plus: false,
                macros: false,
                dow_step: false,
                dow_bare_l: true,
                bare_star_only: false,
            },
            Dialect::Cloudflare => Rules {
                dialect,
                fields: 5,
                sunday: 1,
                dow_max: 7,
                question: false,
                plus: false,
                macros: false,
                dow_step: true,
                dow_bare_l: false,
                bare_star_only: true,
            },
        }
    }

    /// Whether a day field's text leaves days unrestricted.
    fn unrestricted(&self, text: &str) -> bool {
        if self.bare_star_only {
            text == "*"
        } else {
            text.starts_with('*')
        }
    }

    fn dow_min(&self) -> u32 {
        self.sunday
    }

    /// A day-of-week number of this dialect to 0 (Sunday) … 6 (Saturday).
    fn weekday(&self, raw: u32) -> u32 {
        (raw + 7 - self.sunday) % 7
    }
}

/// Splits on ASCII whitespace, keeping each piece's byte offset.
fn split_fields(text: &str, base: usize) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_ascii_whitespace() {
            if let Some(s) = start.take() {
                out.push((base + s, &text[s..i]));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push((base + s, &text[s..]));
    }
    out
}

fn expand_macro(name: &str) -> Option<&'static str> {
    Some(match name {
        "@yearly" | "@annually" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" | "@midnight" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        _ => return None,
    })
}

pub(super) fn parse(text: &str, dialect: Dialect) -> Result<CronExpr, CronError> {
    let rules = Rules::of(dialect);
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Err(CronError::new(K::Empty, None, "", 1, "is empty")
            .hint("write five fields: minute hour day-of-month month day-of-week"));
    }
    let lead = text.len() - text.trim_start().len();

    if trimmed.starts_with('@') {
        return parse_macro(text, trimmed, lead, &rules);
    }

    let (body, body_offset) = match dialect {
        Dialect::EventBridge => unwrap_eventbridge(text, trimmed, lead)?,
        _ => (trimmed, lead),
    };
    if dialect != Dialect::EventBridge
        && (trimmed.starts_with("cron(") || trimmed.starts_with("rate("))
    {
        return Err(CronError::new(
            K::Unsupported,
            None,
            trimmed,
            column_of(text, lead),
            "is an EventBridge expression",
        )
        .hint("write the five fields without cron(...) and the year field"));
    }

    let fields = split_fields(body, body_offset);
    if fields.len() != rules.fields {
        return Err(field_count_error(text, &fields, &rules));
    }
    build(text, &fields, rules)
}

fn parse_macro(
    text: &str,
    trimmed: &str,
    lead: usize,
    rules: &Rules,
) -> Result<CronExpr, CronError> {
    let column = column_of(text, lead);
    let word = trimmed
        .split(|c: char| c.is_ascii_whitespace())
        .next()
        .unwrap_or(trimmed);
    if !rules.macros {
        return Err(CronError::new(
            K::Unsupported,
            None,
            word,
            column,
            format!(
                "is a macro, which {} cron does not accept",
                rules.dialect.name()
            ),
        )
        .hint("write the fields out"));
    }
    if word != trimmed {
        return Err(CronError::new(
            K::TrailingGarbage,
            None,
            trimmed,
            column,
            "must stand alone: a macro replaces all five fields",
        ));
    }
    if word == "@reboot" {
        return Err(CronError::new(
            K::UnknownMacro,
            None,
            word,
            column,
            "is not a schedule: serverless platforms have no boot to hook",
        )
        .hint("run the job from your deploy step, or schedule it with a time"));
    }
    let Some(expansion) = expand_macro(word) else {
        let lower = word.to_ascii_lowercase();
        let err = CronError::new(K::UnknownMacro, None, word, column, "is not a known macro");
        return Err(if expand_macro(&lower).is_some() {
            err.hint(format!("macros are lowercase: {lower}"))
        } else {
            err.hint("use @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly")
        });
    };
    let fields = split_fields(expansion, 0);
    let mut expr = build(expansion, &fields, Rules::of(Dialect::Standard))?;
    expr.source = trimmed.to_string();
    Ok(expr)
}

fn unwrap_eventbridge<'a>(
    text: &'a str,
    trimmed: &'a str,
    lead: usize,
) -> Result<(&'a str, usize), CronError> {
    if let Some(inner) = trimmed.strip_prefix("cron(") {
        return match inner.strip_suffix(')') {
            Some(body) => Ok((body, lead + 5)),
            None => Err(CronError::new(
                K::TrailingGarbage,
                None,
                trimmed,
                column_of(text, lead),
                "opens cron( but does not end with )",
            )),
        };
    }
    if trimmed.starts_with("rate(") || trimmed.starts_with("at(") {
        return Err(CronError::new(
            K::Unsupported,
            None,
            trimmed,
            column_of(text, lead),
            "is not a cron expression",
        )
        .hint("only cron(...) schedules are read; rate() and at() have no calendar"));
    }
    Ok((trimmed, lead))
}

fn build(original: &str, fields: &[(usize, &str)], rules: Rules) -> Result<CronExpr, CronError> {
    let at = |i: usize| fields[i];
    let ctx = |field| Ctx { original, field };

    let (off, minute_text) = at(0);
    let minutes = parse_plain(ctx(Field::Minute), minute_text, off, 0, 59, None)?;
    let (off, hour_text) = at(1);
    let hours = parse_plain(ctx(Field::Hour), hour_text, off, 0, 23, None)?;
    let (off, dom_text) = at(2);
    let dom = parse_dom(ctx(Field::DayOfMonth), dom_text, off, &rules)?;
    let (off, month_text) = at(3);
    let months = parse_plain(
        ctx(Field::Month),
        month_text,
        off,
        1,
        12,
        Some(&MONTH_NAMES),
    )?;
    let (off, dow_text) = at(4);
    let dow = parse_dow(ctx(Field::DayOfWeek), dow_text, off, &rules)?;

    let years = if rules.fields == 6 {
        let (off, year_text) = at(5);
        Some(Box::new(parse_years(ctx(Field::Year), year_text, off)?))
    } else {
        None
    };

    if rules.dialect == Dialect::EventBridge && dom.question == dow.question {
        let (off, text) = at(if dom.question { 2 } else { 4 });
        return Err(ctx(Field::DayOfWeek)
            .err(
                K::DialectRule,
                text,
                off,
                if dom.question {
                    "is ?, and so is day-of-month: EventBridge wants exactly one of them to be ?"
                } else {
                    "must be ? when day-of-month is not, or the other way round (EventBridge)"
                },
            )
            .hint("put ? in the day field you do not restrict"));
    }

    Ok(CronExpr {
        source: original.trim().to_string(),
        dialect: rules.dialect,
        minutes,
        hours: hours as u32,
        dom: dom.spec,
        months: months as u16,
        dow: dow.spec,
        dom_star: dom.star,
        dow_star: dow.star,
        minute_star: minute_text.starts_with('*'),
        hour_star: hour_text.starts_with('*'),
        dom_and_dow: dow.and,
        years,
        never: false,
    })
}
