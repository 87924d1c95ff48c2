//! One parser for the three dialects. The grammar of a field is the same
//! everywhere (lists of values, ranges and steps); the dialects differ in
//! field count, weekday numbering and which specials they accept, and those
//! differences are the `Rules` below.

use super::error::{CronError, CronErrorKind as K};
use super::{CronExpr, DayOfMonth, DayOfWeek, Dialect, Field, YearSet};

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

/// Where a piece of text sits in the original string, to report columns.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    original: &'a str,
    field: Field,
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

    fn err(&self, kind: K, token: &str, offset: usize, message: impl Into<String>) -> CronError {
        CronError::new(kind, Some(self.field), token, self.column(offset), message)
    }
}

fn column_of(original: &str, offset: usize) -> usize {
    Ctx {
        original,
        field: Field::Minute,
    }
    .column(offset)
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

fn field_count_error(text: &str, fields: &[(usize, &str)], rules: &Rules) -> CronError {
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

/// Splits a field on commas, keeping offsets; refuses empty items.
fn items<'a>(
    ctx: Ctx<'_>,
    text: &'a str,
    offset: usize,
) -> Result<Vec<(usize, &'a str)>, CronError> {
    let mut out = Vec::new();
    let mut start = 0;
    for piece in text.split(',') {
        if piece.is_empty() {
            return Err(ctx
                .err(K::EmptyItem, text, offset + start, "has an empty list item")
                .hint("remove the extra comma"));
        }
        out.push((offset + start, piece));
        start += piece.len() + 1;
    }
    Ok(out)
}

/// A value as written: a number, or a name from `names` (case-insensitive)
/// whose number is `index + names_base`.
fn parse_value(
    ctx: Ctx<'_>,
    token: &str,
    offset: usize,
    names: Names<'_>,
    min: u32,
    max: u32,
) -> Result<u32, CronError> {
    if token.is_empty() {
        return Err(ctx.err(K::EmptyItem, token, offset, "is missing a value"));
    }
    if token.bytes().all(|b| b.is_ascii_digit()) {
        let value: u32 = if token.len() > 6 {
            u32::MAX
        } else {
            token.parse().unwrap_or(u32::MAX)
        };
        if value < min || value > max {
            return Err(range_error(ctx, token, offset, value, min, max));
        }
        return Ok(value);
    }
    if let Some((names, names_base)) = names {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(token)) {
            return Ok(i as u32 + names_base);
        }
    }
    let hint = match (ctx.field, names) {
        (Field::DayOfWeek, _) => {
            "write a weekday number or SUN, MON, TUE, WED, THU, FRI, SAT".to_string()
        }
        (Field::Month, _) => "write a month number 1-12 or JAN … DEC".to_string(),
        _ => format!("write a number {min}-{max}"),
    };
    // A number followed by anything (`5x`), or a word followed by a symbol
    // (`MON;`): the garbage starts where the number or the word ends.
    let starts_with_digit = token.starts_with(|c: char| c.is_ascii_digit());
    let first_bad = token
        .char_indices()
        .find(|(_, c)| {
            if starts_with_digit {
                !c.is_ascii_digit()
            } else {
                !c.is_ascii_alphanumeric()
            }
        })
        .map(|(i, _)| i);
    Err(match first_bad {
        Some(i) if i > 0 => ctx.err(
            K::TrailingGarbage,
            token,
            offset + i,
            "has an unexpected character",
        ),
        _ => ctx.err(K::InvalidValue, token, offset, "is not a valid value"),
    }
    .hint(hint))
}

fn range_error(
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

/// A list of `*`, `*/s`, `v`, `a-b`, `a/s`, `a-b/s` items over raw values
/// `min..=max`; returns the set of raw values.
fn parse_ranges(
    ctx: Ctx<'_>,
    item: &str,
    offset: usize,
    min: u32,
    max: u32,
    names: Names<'_>,
    step_allowed: bool,
) -> Result<u64, CronError> {
    let (base, step) = match item.find('/') {
        Some(i) => (&item[..i], Some((offset + i + 1, &item[i + 1..]))),
        None => (item, None),
    };
    let (start, end, explicit_end) = if base == "*" {
        (min, max, true)
    } else if base.starts_with('*') {
        return Err(ctx
            .err(
                K::TrailingGarbage,
                item,
                offset + 1,
                "has something after *",
            )
            .hint("write * or */step"));
    } else if let Some(dash) = base.find('-') {
        let a = parse_value(ctx, &base[..dash], offset, names, min, max)?;
        let b = parse_value(ctx, &base[dash + 1..], offset + dash + 1, names, min, max)?;
        if a > b {
            return Err(ctx
                .err(
                    K::DescendingRange { start: a, end: b },
                    base,
                    offset,
                    "is a descending range",
                )
                .hint(format!(
                    "ranges go upwards: write {a}-{max},{min}-{b} to wrap around"
                )));
        }
        (a, b, true)
    } else {
        let a = parse_value(ctx, base, offset, names, min, max)?;
        (a, if step.is_some() { max } else { a }, false)
    };
    let _ = explicit_end;
    let mut bits = 0u64;
    match step {
        None => {
            for v in start..=end {
                bits |= 1 << v;
            }
        }
        Some((step_offset, step_text)) => {
            if !step_allowed {
                return Err(ctx
                    .err(
                        K::Unsupported,
                        item,
                        step_offset - 1,
                        "uses a step, which this field does not accept here",
                    )
                    .hint("list the values instead"));
            }
            if step_text.is_empty() || !step_text.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ctx
                    .err(
                        K::InvalidValue,
                        step_text,
                        step_offset,
                        "is not a step: a step is a positive number",
                    )
                    .hint("write */15 or 0-30/10"));
            }
            let s: u32 = if step_text.len() > 6 {
                u32::MAX
            } else {
                step_text.parse().unwrap_or(u32::MAX)
            };
            if s == 0 {
                return Err(ctx
                    .err(K::ZeroStep, step_text, step_offset, "is a step of zero")
                    .hint("a step must be at least 1"));
            }
            let span = max - min + 1;
            if s >= span {
                return Err(ctx
                    .err(K::InvalidStep, step_text, step_offset, format!("is a step as wide as the whole field ({span} values), so it selects one value"))
                    .hint(format!("write the single value instead, or a step below {span}")));
            }
            let mut v = start;
            while v <= end {
                bits |= 1 << v;
                v += s;
            }
        }
    }
    Ok(bits)
}

fn parse_plain(
    ctx: Ctx<'_>,
    text: &str,
    offset: usize,
    min: u32,
    max: u32,
    names: Option<&[&str]>,
) -> Result<u64, CronError> {
    let mut bits = 0;
    for (off, item) in items(ctx, text, offset)? {
        check_specials(ctx, item, off)?;
        bits |= parse_ranges(ctx, item, off, min, max, names.map(|n| (n, 1)), true)?;
    }
    Ok(bits)
}

/// Refuses the day-field specials outside the day fields, with a hint.
fn check_specials(ctx: Ctx<'_>, item: &str, offset: usize) -> Result<(), CronError> {
    if let Some(i) = item.find(['?', 'L', 'W', '#', '+']) {
        let c = &item[i..i + 1];
        let (msg, hint) = match c {
            "?" => (
                "? is only allowed in day-of-month and day-of-week",
                "write * here",
            ),
            "+" => (
                "+ is only allowed at the start of day-of-week",
                "remove the +",
            ),
            "#" => (
                "# is only allowed in day-of-week",
                "write FRI#2 in day-of-week for the second Friday",
            ),
            _ => (
                "L and W are only allowed in the day fields",
                "put L or W in day-of-month or day-of-week",
            ),
        };
        // Names such as JUL or DEC contain L or W only as letters of a word.
        let is_name = item
            .split(['-', '/'])
            .any(|p| MONTH_NAMES.iter().any(|n| n.eq_ignore_ascii_case(p)) && p.contains(c));
        if !is_name {
            return Err(ctx.err(K::Unsupported, item, offset + i, msg).hint(hint));
        }
    }
    Ok(())
}

struct DomParsed {
    spec: DayOfMonth,
    star: bool,
    question: bool,
}

fn parse_dom(
    ctx: Ctx<'_>,
    text: &str,
    offset: usize,
    rules: &Rules,
) -> Result<DomParsed, CronError> {
    if text == "?" {
        return question(ctx, text, offset, rules).map(|_| DomParsed {
            spec: DayOfMonth {
                days: super::calendar::ALL_DAYS,
                ..DayOfMonth::default()
            },
            star: true,
            question: true,
        });
    }
    let mut spec = DayOfMonth::default();
    for (off, item) in items(ctx, text, offset)? {
        let upper = item.to_ascii_uppercase();
        if upper == "L" {
            spec.last = true;
        } else if upper == "LW" || upper == "WL" {
            spec.last_weekday = true;
        } else if upper.starts_with("L-") {
            return Err(ctx
                .err(
                    K::Unsupported,
                    item,
                    off,
                    "is an offset from the last day, which cronslot does not support",
                )
                .hint("write L for the last day, or list the days"));
        } else if let Some(day) = upper.strip_suffix('W') {
            if day.contains(['-', '/', '*']) {
                return Err(ctx
                    .err(K::Unsupported, item, off, "combines W with a range or step")
                    .hint("W takes a single day, as in 15W"));
            }
            // Quote the day as written (`upper` is only for matching).
            let d = parse_value(ctx, &item[..day.len()], off, None, 1, 31)?;
            spec.nearest_weekday |= 1 << d;
        } else if item.contains('?') {
            return Err(ctx
                .err(
                    K::Unsupported,
                    item,
                    off + item.find('?').unwrap_or(0),
                    "? must stand alone in its field",
                )
                .hint("write ? or a list of days, not both"));
        } else {
            if let Some(i) = item.find(['L', 'l', 'W', 'w', '#', '+']) {
                let msg = match &item[i..i + 1] {
                    "#" => "uses #, which belongs in day-of-week",
                    "+" => "uses +, which belongs at the start of day-of-week",
                    _ => "uses L or W in a range or step",
                };
                return Err(ctx
                    .err(K::Unsupported, item, off + i, msg)
                    .hint("L, LW and nW stand alone as list items"));
            }
            spec.days |= parse_ranges(ctx, item, off, 1, 31, None, true)? as u32;
        }
    }
    Ok(DomParsed {
        spec,
        star: rules.unrestricted(text),
        question: false,
    })
}

fn question(ctx: Ctx<'_>, text: &str, offset: usize, rules: &Rules) -> Result<(), CronError> {
    if rules.question {
        Ok(())
    } else {
        Err(ctx
            .err(
                K::Unsupported,
                text,
                offset,
                format!("is ?, which {} cron does not accept", rules.dialect.name()),
            )
            .hint("write * instead"))
    }
}

struct DowParsed {
    spec: DayOfWeek,
    star: bool,
    question: bool,
    and: bool,
}

fn parse_dow(
    ctx: Ctx<'_>,
    text: &str,
    offset: usize,
    rules: &Rules,
) -> Result<DowParsed, CronError> {
    let (text, offset, and) = match text.strip_prefix('+') {
        Some(rest) if rules.plus => (rest, offset + 1, true),
        Some(_) => {
            return Err(ctx
                .err(
                    K::Unsupported,
                    text,
                    offset,
                    format!(
                        "starts with +, which {} cron does not accept",
                        rules.dialect.name()
                    ),
                )
                .hint("remove the +"));
        }
        None => (text, offset, false),
    };
    if text.is_empty() {
        return Err(ctx
            .err(K::EmptyItem, text, offset, "is empty after +")
            .hint("write +MON-FRI"));
    }
    if text == "?" {
        if and {
            return Err(ctx
                .err(
                    K::Unsupported,
                    text,
                    offset,
                    "is ? after +, which leaves nothing to combine",
                )
                .hint("remove the + or name weekdays"));
        }
        return question(ctx, text, offset, rules).map(|_| DowParsed {
            spec: DayOfWeek {
                days: 0x7f,
                ..DayOfWeek::default()
            },
            star: true,
            question: true,
            and: false,
        });
    }
    let min = rules.dow_min();
    let max = rules.dow_max;
    let names_base = rules.sunday;
    let mut spec = DayOfWeek::default();
    for (off, item) in items(ctx, text, offset)? {
        if item.contains('?') {
            return Err(ctx
                .err(
                    K::Unsupported,
                    item,
                    off + item.find('?').unwrap_or(0),
                    "? must stand alone in its field",
                )
                .hint("write ? or a list of weekdays, not both"));
        }
        if item.contains('+') {
            return Err(ctx
                .err(
                    K::Unsupported,
                    item,
                    off + item.find('+').unwrap_or(0),
                    "has + inside the field",
                )
                .hint("+ goes once, before the whole day-of-week field"));
        }
        if let Some(hash) = item.find('#') {
            let day = parse_value(
                ctx,
                &item[..hash],
                off,
                Some((&DAY_NAMES, names_base)),
                min,
                max,
            )?;
            let n_text = &item[hash + 1..];
            let w = rules.weekday(day) as usize;
            if n_text.eq_ignore_ascii_case("L") {
                spec.last |= 1 << w;
            } else {
                let n = parse_value(ctx, n_text, off + hash + 1, None, 1, 5).map_err(|e| {
                    e.hint("the n in day#n is 1-5 (or L for the last one in the month)")
                })?;
                spec.nth[w] |= 1 << n;
            }
            continue;
        }
        if item.eq_ignore_ascii_case("L") {
            if rules.dow_bare_l {
                spec.days |= 1 << 6;
                continue;
            }
            return Err(ctx
                .err(
                    K::Unsupported,
                    item,
                    off,
                    "is L alone, which names no weekday",
                )
                .hint("write 5L (or FRIL) for the last Friday, or put L in day-of-month"));
        }
        if item.len() > 1 && (item.ends_with('L') || item.ends_with('l')) {
            let day_text = &item[..item.len() - 1];
            if day_text.contains(['-', '/', '*']) {
                return Err(ctx
                    .err(K::Unsupported, item, off, "combines L with a range or step")
                    .hint("write one weekday before L, as in 5L"));
            }
            let day = parse_value(ctx, day_text, off, Some((&DAY_NAMES, names_base)), min, max)?;
            spec.last |= 1 << rules.weekday(day);
            continue;
        }
        if let Some(i) = item.find(['W', 'w']).filter(|_| !is_day_name_part(item)) {
            return Err(ctx
                .err(
                    K::Unsupported,
                    item,
                    off + i,
                    "uses W, which belongs in day-of-month",
                )
                .hint("write 15W in day-of-month for the weekday nearest the 15th"));
        }
        let raw = parse_ranges(
            ctx,
            item,
            off,
            min,
            max,
            Some((&DAY_NAMES, names_base)),
            rules.dow_step,
        )
        .map_err(|e| {
            if matches!(e.kind, K::DescendingRange { .. }) && rules.sunday == 0 {
                e.hint("Sunday is 0 (or 7): write FRI-SAT,SUN or 5-7 for Friday to Sunday")
            } else {
                e
            }
        })?;
        for v in min..=max {
            if raw & (1 << v) != 0 {
                spec.days |= 1 << rules.weekday(v);
            }
        }
    }
    Ok(DowParsed {
        spec,
        star: rules.unrestricted(text),
        question: false,
        and,
    })
}

fn is_day_name_part(item: &str) -> bool {
    item.split(['-', '/']).all(|p| {
        DAY_NAMES.iter().any(|n| n.eq_ignore_ascii_case(p))
            || p.bytes().all(|b| b.is_ascii_digit())
            || p == "*"
    })
}

fn parse_years(ctx: Ctx<'_>, text: &str, offset: usize) -> Result<YearSet, CronError> {
    let mut set = YearSet::empty();
    for (off, item) in items(ctx, text, offset)? {
        let min = YearSet::MIN as u32;
        let max = YearSet::MAX as u32;
        // Years do not fit a u64 bit set directly: offset them from MIN.
        let (base, step) = match item.find('/') {
            Some(i) => (&item[..i], Some((off + i + 1, &item[i + 1..]))),
            None => (item, None),
        };
        let (start, end) = if base == "*" {
            (min, max)
        } else if let Some(dash) = base.find('-') {
            let a = parse_value(ctx, &base[..dash], off, None, min, max)?;
            let b = parse_value(ctx, &base[dash + 1..], off + dash + 1, None, min, max)?;
            if a > b {
                return Err(ctx.err(
                    K::DescendingRange { start: a, end: b },
                    base,
                    off,
                    "is a descending range",
                ));
            }
            (a, b)
        } else {
            let a = parse_value(ctx, base, off, None, min, max)?;
            (a, if step.is_some() { max } else { a })
        };
        let step = match step {
            None => 1,
            Some((step_off, s)) => match s.parse::<u32>() {
                Ok(0) => return Err(ctx.err(K::ZeroStep, s, step_off, "is a step of zero")),
                Ok(n) => n,
                Err(_) => {
                    return Err(ctx.err(
                        K::InvalidValue,
                        s,
                        step_off,
                        "is not a step: a step is a positive number",
                    ));
                }
            },
        };
        let mut y = start;
        while y <= end {
            set.insert(y as i32);
            y = y.saturating_add(step);
        }
    }
    Ok(set)
}
