//! Writing a field's set of values in the shortest form every dialect
//! reads alike (`*`, `*/s`, `a/s`, lists and ranges). Apart because the
//! minutes, hours, months and both day fields all use it.

// ---------------------------------------------------------------------------
// Field rendering

/// Renders the values `lo..=hi` set in `bits` in the shortest form every
/// dialect reads alike: `*` when full, `*/s` or `a/s` for a progression that
/// runs to the end of the field (if `steps`), else values and ranges.
pub(super) fn render_set(bits: u64, lo: u32, hi: u32, steps: bool) -> String {
    let values: Vec<u32> = (lo..=hi).filter(|v| bits & (1u64 << v) != 0).collect();
    if values.len() == (lo..=hi).count() {
        return "*".to_string();
    }
    let list = render_list(&values);
    match steps.then(|| render_progression(&values, lo, hi)).flatten() {
        Some(progression) if progression.len() < list.len() => progression,
        _ => list,
    }
}

fn render_list(values: &[u32]) -> String {
    values
        .chunk_by(|a, b| *b == a + 1)
        .map(|run| match run {
            [only] => only.to_string(),
            [first, second] => format!("{first},{second}"),
            [first, .., last] => format!("{first}-{last}"),
            [] => String::new(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `*/s` or `a/s`, when `values` (ascending) are `a, a+s, …` up to the last
/// one before `hi` is passed. A step of 1 is left to the range form.
fn render_progression(values: &[u32], lo: u32, hi: u32) -> Option<String> {
    let (&first, rest) = values.split_first()?;
    let step = rest.first()?.checked_sub(first)?;
    let last = *values.last()?;
    let regular = values
        .windows(2)
        .all(|pair| matches!(pair, [a, b] if b - a == step));
    if step < 2 || !regular || last + step <= hi {
        return None;
    }
    Some(if first == lo {
        format!("*/{step}")
    } else {
        format!("{first}/{step}")
    })
}
