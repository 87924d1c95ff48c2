//! Unit tests of the input dialect: every construct it accepts, every
//! refusal (with field, token and column), the Vixie day rule and the
//! never-firing check.

use super::*;
use crate::schedule::Schedule;

fn parse(text: &str) -> CronExpr {
    CronExpr::parse(text).unwrap_or_else(|e| panic!("{text:?} should parse: {e}"))
}

fn refuse(text: &str) -> CronError {
    match CronExpr::parse(text) {
        Ok(e) => panic!("{text:?} should be refused, parsed as {e:?}"),
        Err(e) => e,
    }
}

/// Asserts the error's field, token and column, and that its `Display` is
/// one sentence naming them.
#[track_caller]
fn assert_refused(text: &str, field: Option<Field>, token: &str, column: usize) -> CronError {
    let e = refuse(text);
    assert_eq!(e.field, field, "{text:?}: field of {e}");
    assert_eq!(e.token, token, "{text:?}: token of {e}");
    assert_eq!(e.column, column, "{text:?}: column of {e}");
    assert_one_sentence(text, &e);
    e
}

#[track_caller]
fn assert_one_sentence(text: &str, e: &CronError) {
    let shown = e.to_string();
    assert!(!shown.is_empty(), "{text:?}: empty message");
    assert!(
        !shown.contains('\n') && !shown.contains('\r'),
        "{text:?}: message spans lines: {shown:?}"
    );
    assert!(
        !shown.trim_end_matches('.').contains(". "),
        "{text:?}: more than one sentence: {shown:?}"
    );
    assert!(!shown.ends_with(' '), "{text:?}: {shown:?}");
    if !e.token.is_empty() {
        assert!(
            shown.contains(&format!("{:?}", e.token)),
            "{text:?}: message does not quote the token: {shown:?}"
        );
    }
    if let Some(field) = e.field {
        assert!(
            shown.contains(field.name()),
            "{text:?}: message does not name the field: {shown:?}"
        );
        assert!(
            shown.contains(&format!("column {}", e.column)),
            "{text:?}: message does not give the column: {shown:?}"
        );
    }
}

/// The bits of a mask, as a list.
fn bits(mask: u64) -> Vec<u32> {
    (0..64).filter(|b| mask & (1 << b) != 0).collect()
}

/// The days of `year-month` on which an expression whose time is 00:00
/// fires, found twice: by `matches` on each day and by the civil search.
/// Both must agree.
fn fire_days(text: &str, year: i32, month: u8) -> Vec<u8> {
    let e = parse(text);
    let dim = days_in_month(year, month);
    let by_match: Vec<u8> = (1..=dim)
        .filter(|d| e.matches(Civil::new(year, month, *d, 0, 0)))
        .collect();
    let (ny, nm) = if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    };
    let until = Civil::new(ny, nm, 1, 0, 0);
    let mut by_search = Vec::new();
    let mut from = Civil::new(year, month, 1, 0, 0);
    while let Some(c) = e.next_civil(from, until) {
        assert_eq!((c.hour, c.minute), (0, 0), "{text:?}");
        by_search.push(c.day);
        from = Civil::from_minutes(c.to_minutes() + 1);
    }
    assert_eq!(by_match, by_search, "{text:?} in {year}-{month}");
    // And backwards.
    let mut backwards = Vec::new();
    let floor = Civil::new(year, month, 1, 0, 0);
    let mut at = Civil::new(year, month, dim, 23, 59);
    while let Some(c) = e.prev_civil(at, floor) {
        backwards.push(c.day);
        if c == floor {
            break;
        }
        at = Civil::from_minutes(c.to_minutes() - 1);
    }
    backwards.reverse();
    assert_eq!(by_match, backwards, "{text:?} in {year}-{month} (prev)");
    by_match
}

/// Two expressions mean the same thing (the source text aside).
#[track_caller]
fn assert_same_meaning(a: &str, b: &str) {
    let (x, y) = (parse(a), parse(b));
    assert_eq!(x.minutes(), y.minutes(), "{a:?} vs {b:?}: minutes");
    assert_eq!(x.hours(), y.hours(), "{a:?} vs {b:?}: hours");
    assert_eq!(x.months(), y.months(), "{a:?} vs {b:?}: months");
    assert_eq!(x.day_of_month(), y.day_of_month(), "{a:?} vs {b:?}: dom");
    assert_eq!(x.day_of_week(), y.day_of_week(), "{a:?} vs {b:?}: dow");
    assert_eq!(x.dom_is_star(), y.dom_is_star(), "{a:?} vs {b:?}: dom *");
    assert_eq!(x.dow_is_star(), y.dow_is_star(), "{a:?} vs {b:?}: dow *");
    assert_eq!(x.dom_and_dow(), y.dom_and_dow(), "{a:?} vs {b:?}: +");
    assert_eq!(
        x.is_interval_like(),
        y.is_interval_like(),
        "{a:?} vs {b:?}: interval-like"
    );
}

// ---------------------------------------------------------------- accepted

#[test]
fn plain_values_lists_ranges() {
    let e = parse("5 14 3 7 2");
    assert_eq!(bits(e.minutes()), [5]);
    assert_eq!(bits(e.hours().into()), [14]);
    assert_eq!(bits(e.day_of_month().days.into()), [3]);
    assert_eq!(bits(e.months().into()), [7]);
    assert_eq!(bits(e.day_of_week().days.into()), [2]);

    let e = parse("1,2,5-7,59 0-3,23 1,15-16,31 1-3,12 1-2,4");
    assert_eq!(bits(e.minutes()), [1, 2, 5, 6, 7, 59]);
    assert_eq!(bits(e.hours().into()), [0, 1, 2, 3, 23]);
    assert_eq!(bits(e.day_of_month().days.into()), [1, 15, 16, 31]);
    assert_eq!(bits(e.months().into()), [1, 2, 3, 12]);
    assert_eq!(bits(e.day_of_week().days.into()), [1, 2, 4]);

    let full = parse("* * * * *");
    assert_eq!(full.minutes(), (1u64 << 60) - 1);
    assert_eq!(full.hours(), (1u32 << 24) - 1);
    assert!(full.dom_is_full() && full.dow_is_full());
    assert_eq!(bits(full.months().into()), (1..=12).collect::<Vec<_>>());
    // Whitespace: tabs and runs of spaces separate fields; ends are trimmed.
    assert_same_meaning(" \t0\t\t9   * *  1-5 ", "0 9 * * 1-5");
    // Leading zeros are numbers.
    assert_same_meaning("05 09 01 01 01", "5 9 1 1 1");
}

#[test]
fn steps() {
    assert_eq!(bits(parse("*/15 * * * *").minutes()), [0, 15, 30, 45]);
    assert_eq!(bits(parse("5/15 * * * *").minutes()), [5, 20, 35, 50]);
    assert_eq!(bits(parse("10-30/10 * * * *").minutes()), [10, 20, 30]);
    assert_eq!(bits(parse("10-35/10 * * * *").minutes()), [10, 20, 30]);
    assert_eq!(bits(parse("*/59 * * * *").minutes()), [0, 59]);
    assert_eq!(
        bits(parse("0 */5 * * *").hours().into()),
        [0, 5, 10, 15, 20]
    );
    assert_eq!(bits(parse("0 1-23/11 * * *").hours().into()), [1, 12, 23]);
    assert_eq!(
        bits(parse("0 0 */10 * *").day_of_month().days.into()),
        [1, 11, 21, 31]
    );
    assert_eq!(bits(parse("0 0 1 */3 *").months().into()), [1, 4, 7, 10]);
    assert_eq!(bits(parse("0 0 1 2/5 *").months().into()), [2, 7, 12]);
    assert_eq!(bits(parse("0 0 1 FEB-DEC/5 *").months().into()), [2, 7, 12]);
    assert_eq!(
        bits(parse("0 0 * * */2").day_of_week().days.into()),
        [0, 2, 4, 6]
    );
    // 1,3,5,7: 7 is Sunday.
    assert_eq!(
        bits(parse("0 0 * * 1/2").day_of_week().days.into()),
        [0, 1, 3, 5]
    );
    assert_eq!(
        bits(parse("0 0 * * MON-FRI/2").day_of_week().days.into()),
        [1, 3, 5]
    );
    // A list mixing every form.
    assert_eq!(
        bits(parse("*/20,5,7-9,50-58/4,33/30 * * * *").minutes()),
        [0, 5, 7, 8, 9, 20, 33, 40, 50, 54, 58]
    );
}

#[test]
fn names_are_case_insensitive() {
    assert_same_meaning("0 0 * jan,Feb,MAR,apR *", "0 0 * 1,2,3,4 *");
    assert_same_meaning("0 0 * May-aug *", "0 0 * 5-8 *");
    assert_same_meaning("0 0 * sep,OCT,nov,Dec *", "0 0 * 9-12 *");
    assert_same_meaning("0 0 * JUL-DEC/2 *", "0 0 * 7,9,11 *");
    assert_same_meaning("0 0 * * mon-Fri", "0 0 * * 1-5");
    assert_same_meaning("0 0 * * sun,SAT,wed,Thu,tue", "0 0 * * 0,2,3,4,6");
    assert_same_meaning("0 0 * * fri#2", "0 0 * * 5#2");
    assert_same_meaning("0 0 * * Fri#l", "0 0 * * 5#L");
    assert_same_meaning("0 0 * * fril", "0 0 * * 5L");
    assert_same_meaning("0 0 lw * *", "0 0 LW * *");
    assert_same_meaning("0 0 15w * *", "0 0 15W * *");
    assert_same_meaning("0 0 l * *", "0 0 L * *");
}

#[test]
fn sunday_is_zero_and_seven() {
    assert_same_meaning("0 0 * * 7", "0 0 * * 0");
    assert_same_meaning("0 0 * * SUN", "0 0 * * 0");
    assert_same_meaning("0 0 * * 0,7", "0 0 * * 0");
    assert_same_meaning("0 0 * * 5-7", "0 0 * * 0,5,6");
    assert_same_meaning("0 0 * * 7#2", "0 0 * * 0#2");
    assert_same_meaning("0 0 * * 7L", "0 0 * * SUN#L");
    assert_eq!(bits(parse("0 0 * * 7").day_of_week().days.into()), [0]);
    assert!(parse("0 0 * * 0-7").dow_is_full());
    // 2025-11-02 is a Sunday.
    assert_eq!(fire_days("0 0 * * 7", 2025, 11), [2, 9, 16, 23, 30]);
    assert_eq!(fire_days("0 0 * * 0", 2025, 11), [2, 9, 16, 23, 30]);
}

#[test]
fn macros() {
    for (m, expansion) in [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ] {
        assert_same_meaning(m, expansion);
        assert_eq!(parse(m).source(), m);
        // Surrounding whitespace is not part of the macro.
        assert_same_meaning(&format!("  {m}\t"), expansion);
    }
    assert!(parse("@hourly").is_interval_like());
    assert!(!parse("@daily").is_interval_like());
}

#[test]
fn macros_are_case_sensitive_and_alone() {
    for text in ["@DAILY", "@Daily", "@Hourly", "@YEARLY"] {
        let e = assert_refused(text, None, text, 1);
        assert_eq!(e.kind, CronErrorKind::UnknownMacro, "{text}");
        assert!(
            e.hint.as_deref().unwrap_or("").contains("lowercase"),
            "{text}: {e}"
        );
    }
    let e = assert_refused("@daily *", None, "@daily *", 1);
    assert_eq!(e.kind, CronErrorKind::TrailingGarbage);
    assert!(e.to_string().contains("alone"), "{e}");
    let e = assert_refused("  @hourly 5", None, "@hourly 5", 3);
    assert_eq!(e.kind, CronErrorKind::TrailingGarbage);
    let e = assert_refused("@fortnightly", None, "@fortnightly", 1);
    assert_eq!(e.kind, CronErrorKind::UnknownMacro);
    // A macro is not a field value.
    refuse("0 0 * * @weekly");
}

#[test]
fn reboot_is_refused_with_an_explanation() {
    let e = assert_refused("@reboot", None, "@reboot", 1);
    assert_eq!(e.kind, CronErrorKind::UnknownMacro);
    let shown = e.to_string();
    assert!(shown.contains("boot"), "{shown}");
    assert!(e.hint.is_some(), "{shown}");
    let e = assert_refused("  @reboot", None, "@reboot", 3);
    assert_eq!(e.kind, CronErrorKind::UnknownMacro);
}

#[test]
fn last_day_of_month() {
    assert_eq!(fire_days("0 0 L * *", 2024, 2), [29]);
    assert_eq!(fire_days("0 0 L * *", 2023, 2), [28]);
    assert_eq!(fire_days("0 0 L * *", 2100, 2), [28]);
    assert_eq!(fire_days("0 0 L * *", 2000, 2), [29]);
    assert_eq!(fire_days("0 0 L * *", 2025, 11), [30]);
    assert_eq!(fire_days("0 0 L * *", 2025, 12), [31]);
    assert_eq!(fire_days("0 0 1,15,L * *", 2025, 4), [1, 15, 30]);
    // L alongside a day that is also the last one: once.
    assert_eq!(fire_days("0 0 30,L * *", 2025, 11), [30]);
}

#[test]
fn last_weekday_of_month() {
    // 2025-11-30 is a Sunday: the last weekday is Friday the 28th.
    assert_eq!(fire_days("0 0 LW * *", 2025, 11), [28]);
    // 2025-05-31 is a Saturday: Friday the 30th.
    assert_eq!(fire_days("0 0 LW * *", 2025, 5), [30]);
    // 2025-10-31 is a Friday.
    assert_eq!(fire_days("0 0 LW * *", 2025, 10), [31]);
    // 2026-02-28 is a Saturday: Friday the 27th.
    assert_eq!(fire_days("0 0 LW * *", 2026, 2), [27]);
    // L and LW together: both days.
    assert_eq!(fire_days("0 0 L,LW * *", 2025, 11), [28, 30]);
}

#[test]
fn nearest_weekday_never_crosses_the_month() {
    // 2025-11-01 is a Saturday: 1W is Monday the 3rd, not Friday Oct 31.
    assert_eq!(fire_days("0 0 1W * *", 2025, 11), [3]);
    assert_eq!(fire_days("0 0 1W * *", 2025, 10), [1]);
    // 2025-06-01 is a Sunday: Monday the 2nd.
    assert_eq!(fire_days("0 0 1W * *", 2025, 6), [2]);
    // 2025-08-31 is a Sunday and the last day: Friday the 29th, not Sep 1.
    assert_eq!(fire_days("0 0 31W * *", 2025, 8), [29]);
    assert_eq!(fire_days("0 0 31W * *", 2025, 9), Vec::<u8>::new());
    // 2025-11-30 is a Sunday and the last day: Friday the 28th.
    assert_eq!(fire_days("0 0 30W * *", 2025, 11), [28]);
    // 2025-05-31 is a Saturday: Friday the 30th.
    assert_eq!(fire_days("0 0 31W * *", 2025, 5), [30]);
    // Mid-month: Saturday moves back, Sunday moves on.
    // 2025-11-15 is a Saturday, 2025-06-15 a Sunday, 2025-10-15 a Wednesday.
    assert_eq!(fire_days("0 0 15W * *", 2025, 11), [14]);
    assert_eq!(fire_days("0 0 15W * *", 2025, 6), [16]);
    assert_eq!(fire_days("0 0 15W * *", 2025, 10), [15]);
    // A day the month does not have: nothing (February has no 30th).
    assert_eq!(fire_days("0 0 30W * *", 2025, 2), Vec::<u8>::new());
    // Lists of W days and plain days.
    assert_eq!(fire_days("0 0 1W,15W,20 * *", 2025, 11), [3, 14, 20]);
    // 2027-02-28 is a Sunday and the last day: Friday the 26th.
    assert_eq!(fire_days("0 0 28W * *", 2027, 2), [26]);
}

#[test]
fn nth_and_last_weekday_of_month() {
    // 2025-11: Saturdays 1 8 15 22 29, Sundays 2 9 16 23 30, Mondays 3 10 17 24.
    assert_eq!(fire_days("0 0 * * MON#1", 2025, 11), [3]);
    assert_eq!(fire_days("0 0 * * 1#4", 2025, 11), [24]);
    assert_eq!(fire_days("0 0 * * MON#5", 2025, 11), Vec::<u8>::new());
    assert_eq!(fire_days("0 0 * * 6#5", 2025, 11), [29]);
    assert_eq!(fire_days("0 0 * * 0#5", 2025, 11), [30]);
    assert_eq!(fire_days("0 0 * * 7#5", 2025, 11), [30]);
    assert_eq!(fire_days("0 0 * * MON#L", 2025, 11), [24]);
    assert_eq!(fire_days("0 0 * * 1L", 2025, 11), [24]);
    assert_eq!(fire_days("0 0 * * SAT#L", 2025, 11), [29]);
    assert_eq!(fire_days("0 0 * * 6L,0L", 2025, 11), [29, 30]);
    // 2025-06 has five Mondays: 2 9 16 23 30.
    assert_eq!(fire_days("0 0 * * MON#5", 2025, 6), [30]);
    assert_eq!(fire_days("0 0 * * MON#L", 2025, 6), [30]);
    // Mixed with plain weekdays and with each other.
    assert_eq!(
        fire_days("0 0 * * MON#1,MON#3,SAT", 2025, 11),
        [1, 3, 8, 15, 17, 22, 29]
    );
    let e = parse("0 0 * * 2#1,2#3,5#L");
    assert_eq!(e.day_of_week().nth[2], (1 << 1) | (1 << 3));
    assert_eq!(e.day_of_week().last, 1 << 5);
    assert_eq!(e.day_of_week().days, 0);
}

#[test]
fn question_mark_in_day_fields() {
    assert_same_meaning("0 0 ? * MON", "0 0 * * MON");
    assert_same_meaning("0 0 1 * ?", "0 0 1 * *");
    assert_same_meaning("0 0 ? * ?", "0 0 * * *");
    assert!(parse("0 0 ? * MON").dom_is_star());
    assert!(parse("0 0 1 * ?").dow_is_star());
    assert_eq!(fire_days("0 0 ? * MON", 2025, 11), [3, 10, 17, 24]);
    assert_eq!(fire_days("0 0 1 * ?", 2025, 11), [1]);
}

#[test]
fn plus_makes_the_day_fields_and() {
    let e = parse("0 0 1 * +MON");
    assert!(e.dom_and_dow() && !e.days_are_either());
    // The 1st only when it is a Monday: 2025-09-01 is the first after 2025-01-01.
    assert_eq!(fire_days("0 0 1 * +MON", 2025, 9), [1]);
    assert_eq!(fire_days("0 0 1 * +MON", 2025, 11), Vec::<u8>::new());
    let s = Schedule::utc(e);
    assert_eq!(
        s.next_after("2025-01-01T00:00:00Z".parse().unwrap())
            .map(|t| t.to_string()),
        Some("2025-09-01T00:00:00Z".to_string())
    );
    // With specials on both sides.
    // 2025-11: the last day is the 30th, a Sunday.
    assert_eq!(fire_days("0 0 L * +SUN", 2025, 11), [30]);
    assert_eq!(fire_days("0 0 L * +SAT", 2025, 11), Vec::<u8>::new());
    assert_eq!(fire_days("0 0 1-7 * +MON", 2025, 11), [3]);
    assert_eq!(fire_days("0 0 * * +MON", 2025, 11), [3, 10, 17, 24]);
}

#[test]
fn vixie_or_rule() {
    // Both restricted: either matches. 2025-11 Mondays: 3 10 17 24.
    assert!(parse("0 0 1 * MON").days_are_either());
    assert_eq!(fire_days("0 0 1 * MON", 2025, 11), [1, 3, 10, 17, 24]);
    // A field that begins with * does not restrict: */2 means AND.
    assert!(!parse("0 0 */2 * MON").days_are_either());
    assert_eq!(fire_days("0 0 */2 * MON", 2025, 11), [3, 17]);
    // 1-31 restricts (it does not begin with *): OR, so every day.
    assert!(parse("0 0 1-31 * MON").days_are_either());
    assert_eq!(
        fire_days("0 0 1-31 * MON", 2025, 11),
        (1..=30).collect::<Vec<u8>>()
    );
    // The same rule on the day-of-week side: */2 is Sun Tue Thu Sat, AND.
    // 2025-11-01 is a Saturday, so only the 1st.
    assert!(!parse("0 0 1 * */2").days_are_either());
    assert_eq!(fire_days("0 0 1 * */2", 2025, 11), [1]);
    // 0-6 restricts: OR, every day.
    assert_eq!(
        fire_days("0 0 1 * 0-6", 2025, 11),
        (1..=30).collect::<Vec<u8>>()
    );
    // Specials count as restrictions: L OR Fridays.
    // 2025-11 Fridays: 7 14 21 28; last day 30.
    assert_eq!(fire_days("0 0 L * FRI", 2025, 11), [7, 14, 21, 28, 30]);
    assert_eq!(fire_days("0 0 15W * MON#1", 2025, 11), [3, 14]);
    // One field *: the other decides alone.
    assert_eq!(fire_days("0 0 * * MON", 2025, 11), [3, 10, 17, 24]);
    assert_eq!(fire_days("0 0 1,15 * *", 2025, 11), [1, 15]);
}

#[test]
fn interval_like_classification() {
    for text in [
        "* * * * *",
        "*/5 * * * *",
        "0 * * * *",
        "0 */2 * * *",
        "15 * * * MON",
        "*/10 9 * * *",
        "@hourly",
    ] {
        assert!(parse(text).is_interval_like(), "{text}");
    }
    for text in [
        "0 9 * * *",
        "0,30 9 * * *",
        "0 9-17 * * *",
        "5/15 9 * * *",
        "0-59 0-23 * * *",
        "@daily",
        "@weekly",
    ] {
        assert!(!parse(text).is_interval_like(), "{text}");
    }
}

// ---------------------------------------------------------------- refused

#[test]
fn out_of_range_values() {
    use CronErrorKind::OutOfRange;
    let cases: [(&str, Field, &str, usize, u32); 12] = [
        ("60 * * * *", Field::Minute, "60", 1, 60),
        ("0,61 * * * *", Field::Minute, "61", 3, 61),
        ("* 24 * * *", Field::Hour, "24", 3, 24),
        ("0 0 0 * *", Field::DayOfMonth, "0", 5, 0),
        ("0 0 32 * *", Field::DayOfMonth, "32", 5, 32),
        ("0 0 1-32 * *", Field::DayOfMonth, "32", 7, 32),
        ("0 0 * 13 *", Field::Month, "13", 7, 13),
        ("0 0 * 0 *", Field::Month, "0", 7, 0),
        ("0 0 * * 8", Field::DayOfWeek, "8", 9, 8),
        ("0  0 * * 1#6", Field::DayOfWeek, "6", 12, 6),
        ("0 0 * * 1#0", Field::DayOfWeek, "0", 11, 0),
        (
            "0 0 99999999999 * *",
            Field::DayOfMonth,
            "99999999999",
            5,
            u32::MAX,
        ),
    ];
    for (text, field, token, column, value) in cases {
        let e = assert_refused(text, Some(field), token, column);
        match e.kind {
            OutOfRange { value: v, .. } => assert_eq!(v, value, "{text}"),
            ref other => panic!("{text}: {other:?}"),
        }
    }
    // Hints that point at the likely intent.
    assert!(refuse("60 * * * *").hint.unwrap().contains("0-59"));
    assert!(refuse("0 0 * * 8").hint.unwrap().contains("Sunday"));
    // W and L take days in range too.
    assert_refused("0 0 32W * *", Some(Field::DayOfMonth), "32", 5);
    assert_refused("0 0 0W * *", Some(Field::DayOfMonth), "0", 5);
    assert_refused("0 0 * * 8L", Some(Field::DayOfWeek), "8", 9);
}

#[test]
fn descending_ranges() {
    let e = assert_refused("5-1 * * * *", Some(Field::Minute), "5-1", 1);
    assert_eq!(e.kind, CronErrorKind::DescendingRange { start: 5, end: 1 });
    assert!(e.hint.unwrap().contains("5-59,0-1"));
    assert_refused("0 22-2 * * *", Some(Field::Hour), "22-2", 3);
    assert_refused("0 0 * DEC-JAN *", Some(Field::Month), "DEC-JAN", 7);
    // Sunday is 0, so FRI-SUN descends; the hint says how to write it.
    let e = assert_refused("0 0 * * FRI-SUN", Some(Field::DayOfWeek), "FRI-SUN", 9);
    assert!(e.hint.unwrap().contains("Sunday is 0"));
    assert_refused("0 0 * * 6-0", Some(Field::DayOfWeek), "6-0", 9);
    // But FRI-7 is Friday to Sunday.
    assert_same_meaning("0 0 * * FRI-7", "0 0 * * 0,5,6");
}

#[test]
fn zero_and_oversized_steps() {
    let e = assert_refused("*/0 * * * *", Some(Field::Minute), "0", 3);
    assert_eq!(e.kind, CronErrorKind::ZeroStep);
    let e = assert_refused("0 1-5/0 * * *", Some(Field::Hour), "0", 7);
    assert_eq!(e.kind, CronErrorKind::ZeroStep);
    assert_refused("0 0 5/0 * *", Some(Field::DayOfMonth), "0", 7);
    let e = assert_refused("*/60 * * * *", Some(Field::Minute), "60", 3);
    assert_eq!(e.kind, CronErrorKind::InvalidStep);
    // A step that is not a number.
    let e = assert_refused("*/x * * * *", Some(Field::Minute), "x", 3);
    assert_eq!(e.kind, CronErrorKind::InvalidValue);
    assert_refused("1/ * * * *", Some(Field::Minute), "", 3);
}

#[test]
fn empty_fields_and_items() {
    use CronErrorKind::{Empty, EmptyItem};
    let e = assert_refused("", None, "", 1);
    assert_eq!(e.kind, Empty);
    assert_eq!(refuse(" \t ").kind, Empty);
    let e = assert_refused("1,,2 * * * *", Some(Field::Minute), "1,,2", 3);
    assert_eq!(e.kind, EmptyItem);
    assert_refused(",1 * * * *", Some(Field::Minute), ",1", 1);
    assert_refused("1, * * * *", Some(Field::Minute), "1,", 3);
    assert_refused("0 0 * * MON,", Some(Field::DayOfWeek), "MON,", 13);
    assert_refused("0 0 1,,L * *", Some(Field::DayOfMonth), "1,,L", 7);
    assert_eq!(refuse("0-/5 * * * *").kind, EmptyItem);
    // W needs a day.
    assert_eq!(refuse("0 0 W * *").kind, EmptyItem);
    // `+` needs something after it.
    let e = assert_refused("0 0 1 * +", Some(Field::DayOfWeek), "", 10);
    assert_eq!(e.kind, EmptyItem);
}

#[test]
fn trailing_garbage() {
    use CronErrorKind::TrailingGarbage;
    let e = assert_refused("5; * * * *", Some(Field::Minute), "5;", 2);
    assert_eq!(e.kind, TrailingGarbage);
    let e = assert_refused("*x * * * *", Some(Field::Minute), "*x", 2);
    assert_eq!(e.kind, TrailingGarbage);
    let e = assert_refused("0 0 * * MON!", Some(Field::DayOfWeek), "MON!", 12);
    assert_eq!(e.kind, TrailingGarbage);
    // Letters glued to a number: trailing garbage, pointing where the
    // number ends.
    let e = assert_refused("5x * * * *", Some(Field::Minute), "5x", 2);
    assert_eq!(e.kind, TrailingGarbage);
    let e = assert_refused("0 9am * * *", Some(Field::Hour), "9am", 4);
    assert_eq!(e.kind, TrailingGarbage);
    // A word that is no name: refused, pointing at the token.
    assert_refused("0 0 1 * MONx", Some(Field::DayOfWeek), "MONx", 9);
    // A sixth field of junk is a field count error that points at it.
    let e = assert_refused("0 0 * * 1 junk", None, "junk", 11);
    assert!(matches!(e.kind, CronErrorKind::FieldCount { found: 6, .. }));
    // Non-ASCII characters are counted as characters in columns.
    assert_refused("0 é * * *", Some(Field::Hour), "é", 3);
    assert_refused("é 0 5x * *", Some(Field::Minute), "é", 1);
    assert_refused("0 0 1 * ÄÖ", Some(Field::DayOfWeek), "ÄÖ", 9);
    assert_refused("0 0 ü 1 5x", Some(Field::DayOfMonth), "ü", 5);
}

#[test]
fn plus_outside_day_of_week() {
    use CronErrorKind::Unsupported;
    let e = assert_refused("0 +1 * * *", Some(Field::Hour), "+1", 3);
    assert_eq!(e.kind, Unsupported);
    assert_refused("+0 1 * * *", Some(Field::Minute), "+0", 1);
    assert_refused("0 0 +1 * *", Some(Field::DayOfMonth), "+1", 5);
    assert_refused("0 0 1 +2 *", Some(Field::Month), "+2", 7);
    // Inside day-of-week, only once and at the start.
    assert_refused("0 0 1 * 1+2", Some(Field::DayOfWeek), "1+2", 10);
    assert_refused("0 0 1 * MON,+TUE", Some(Field::DayOfWeek), "+TUE", 13);
    assert_refused("0 0 1 * +?", Some(Field::DayOfWeek), "?", 10);
}

#[test]
fn question_mark_outside_day_fields() {
    for (text, field, column) in [
        ("? * * * *", Field::Minute, 1),
        ("0 ? * * *", Field::Hour, 3),
        ("0 0 * ? *", Field::Month, 7),
    ] {
        let e = assert_refused(text, Some(field), "?", column);
        assert_eq!(e.kind, CronErrorKind::Unsupported, "{text}");
    }
    // ? stands alone in the day fields.
    assert_refused("0 0 ?,1 * *", Some(Field::DayOfMonth), "?", 5);
    assert_refused("0 0 1 * MON,?", Some(Field::DayOfWeek), "?", 13);
}

#[test]
fn specials_in_the_wrong_place() {
    use CronErrorKind::Unsupported;
    for (text, field, token, column) in [
        // W with a range or step.
        ("0 0 1-5W * *", Field::DayOfMonth, "1-5W", 5),
        ("0 0 */5W * *", Field::DayOfMonth, "*/5W", 5),
        ("0 0 1-15/2W * *", Field::DayOfMonth, "1-15/2W", 5),
        ("0 0 1,10-12W * *", Field::DayOfMonth, "10-12W", 7),
        // W and # in the other day field.
        ("0 0 * * 1W", Field::DayOfWeek, "1W", 10),
        ("0 0 1#2 * *", Field::DayOfMonth, "1#2", 6),
        // L alone in day-of-week names no weekday.
        ("0 0 * * L", Field::DayOfWeek, "L", 9),
        // L with a range in day-of-week.
        ("0 0 * * 1-5L", Field::DayOfWeek, "1-5L", 9),
        // L offsets.
        ("0 0 L-2 * *", Field::DayOfMonth, "L-2", 5),
        // Day-field specials outside the day fields.
        ("L 0 * * *", Field::Minute, "L", 1),
        ("0 5W * * *", Field::Hour, "5W", 4),
        ("0 0 * 1#2 *", Field::Month, "1#2", 8),
    ] {
        let e = assert_refused(text, Some(field), token, column);
        assert_eq!(e.kind, Unsupported, "{text}: {e}");
    }
    // # needs a single weekday before it.
    assert_refused("0 0 * * 1-5#2", Some(Field::DayOfWeek), "1-5", 10);
    assert_refused("0 0 * * *#1", Some(Field::DayOfWeek), "*", 9);
    // Month names containing L or W are names, not specials.
    assert_same_meaning("0 0 * JUL *", "0 0 * 7 *");
}

#[test]
fn six_fields_mean_seconds_and_are_refused() {
    let e = assert_refused("0 0 0 * * *", None, "*", 11);
    assert_eq!(
        e.kind,
        CronErrorKind::FieldCount {
            found: 6,
            expected: 5
        }
    );
    let shown = e.to_string();
    assert!(shown.contains("seconds"), "{shown}");
    assert!(shown.contains("minute granularity"), "{shown}");
    let e = assert_refused("*/10 * * * * * 2030", None, "*", 14);
    assert!(e.to_string().contains("seconds"));
    // Too few fields: the column is past the end.
    let e = assert_refused("0 0 * *", None, "", 8);
    assert_eq!(
        e.kind,
        CronErrorKind::FieldCount {
            found: 4,
            expected: 5
        }
    );
    assert!(e.to_string().contains("4 fields"));
}

#[test]
fn eventbridge_syntax_is_refused() {
    let e = assert_refused("cron(0 12 * * ? *)", None, "cron(0 12 * * ? *)", 1);
    assert_eq!(e.kind, CronErrorKind::Unsupported);
    assert!(e.to_string().contains("EventBridge"), "{e}");
    let e = refuse("  rate(5 minutes)");
    assert_eq!(e.column, 3);
    assert_one_sentence("rate", &e);
}

#[test]
fn every_refusal_is_one_sentence() {
    let corpus = [
        "",
        "x",
        "* * * *",
        "* * * * * * * *",
        "@reboot",
        "@every 5m",
        "60 * * * *",
        "*/0 * * * *",
        "5-1 * * * *",
        "1,,2 * * * *",
        "0 0 * * 8",
        "0 0 * * L",
        "0 0 ?,1 * *",
        "0 0 1-5W * *",
        "0 0 L-2 * *",
        "0 0 1 * +",
        "0 0 1 * +?",
        "cron(0 0 * * ? *)",
        "0 0 * * FRI-SUN",
        "0 0 * * 1#6",
        "\u{1F600} * * * *",
        "0 0 * * 5-7#1",
    ];
    for text in corpus {
        let e = refuse(text);
        assert_one_sentence(text, &e);
        assert!(e.column >= 1, "{text}: column {}", e.column);
        assert!(
            e.column <= text.chars().count() + 1,
            "{text}: column {} past the end",
            e.column
        );
    }
}

// ---------------------------------------------------------------- never

#[test]
fn impossible_schedules_parse_but_never_fire() {
    let from: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
    for text in [
        "0 0 31 2 *",
        "0 0 30 2 *",
        "0 0 30,31 2 *",
        "0 0 31 4,6,9,11 *",
        "0 0 31 2 +MON",
        "0 0 30 2 ?",
        "0 0 31W 2,4 *",
        "0 0 30W 2 *",
        "* * 31 FEB *",
    ] {
        let e = parse(text);
        assert!(e.never_fires(), "{text}");
        assert_eq!(
            e.next_civil(Civil::new(2026, 1, 1, 0, 0), Civil::MAX),
            None,
            "{text}"
        );
        let s = Schedule::utc(e);
        assert_eq!(s.next_after(from), None, "{text}");
        assert_eq!(s.prev_before(from), None, "{text}");
    }
    for text in [
        "0 0 29 2 *",
        "0 0 L 2 *",
        "0 0 31 2 MON",
        "0 0 29 2 +MON",
        "0 0 31 1-2 *",
        "0 0 */30 2 *",
        "0 0 * * 0#5",
    ] {
        assert!(!parse(text).never_fires(), "{text}");
    }
}

#[test]
fn leap_day_skips_2100() {
    let s = Schedule::utc(parse("0 0 29 2 *"));
    let next = |at: &str| {
        s.next_after(at.parse().unwrap())
            .map(|t| t.to_string())
            .unwrap_or_default()
    };
    assert_eq!(next("2097-01-01T00:00:00Z"), "2104-02-29T00:00:00Z");
    assert_eq!(next("2024-02-29T00:00:00Z"), "2028-02-29T00:00:00Z");
    assert_eq!(next("2399-01-01T00:00:00Z"), "2400-02-29T00:00:00Z");
    assert_eq!(
        s.prev_before("2104-02-29T00:00:00Z".parse().unwrap())
            .map(|t| t.to_string()),
        Some("2096-02-29T00:00:00Z".to_string())
    );
    // Feb 29 on a Monday (AND): 2016, then 2044.
    let s = Schedule::utc(parse("0 0 29 2 +MON"));
    assert_eq!(
        s.next_after("2016-03-01T00:00:00Z".parse().unwrap())
            .map(|t| t.to_string()),
        Some("2044-02-29T00:00:00Z".to_string())
    );
}
