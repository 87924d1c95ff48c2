//! The day fields and their special characters: `?`, `L`, `LW` and `nW`
//! in day-of-month; `#`, `nL` and a leading `+` in day-of-week; and the
//! refusal of those characters in every other field. Apart because each
//! dialect accepts a different set of them (the `Rules` in parse.rs).

use super::*;

/// Refuses the day-field specials outside the day fields, with a hint.
pub(super) fn check_specials(ctx: Ctx<'_>, item: &str, offset: usize) -> Result<(), CronError> {
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

pub(super) struct DomParsed {
    pub(super) spec: DayOfMonth,
    pub(super) star: bool,
    pub(super) question: bool,
}

pub(super) fn parse_dom(
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

pub(super) struct DowParsed {
    pub(super) spec: DayOfWeek,
    pub(super) star: bool,
    pub(super) question: bool,
    pub(super) and: bool,
}

pub(super) fn parse_dow(
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
