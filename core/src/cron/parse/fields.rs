//! The grammar every field shares: lists of values, ranges and steps over
//! numbers or names, and the year field, which does not fit a bit set of
//! 64. Apart from the day fields, which add their special characters on
//! top of it (specials.rs).

use super::*;

/// Splits a field on commas, keeping offsets; refuses empty items.
pub(super) fn items<'a>(
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
pub(super) fn parse_value(
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

/// A list of `*`, `*/s`, `v`, `a-b`, `a/s`, `a-b/s` items over raw values
/// `min..=max`; returns the set of raw values.
pub(super) fn parse_ranges(
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

pub(super) fn parse_plain(
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

pub(super) fn parse_years(ctx: Ctx<'_>, text: &str, offset: usize) -> Result<YearSet, CronError> {
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
