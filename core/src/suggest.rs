//! "Did you mean": the names closest to a mistyped one, for messages that
//! must not list every name (a manifest of 10,000 jobs, a route's 404).

/// Edit distance (Levenshtein) between `a` and `b`, in characters.
pub fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// Whether `candidate` is close enough to `word` to be what was meant: a
/// few edits away (a third of its length, at least two), or sharing its
/// first four characters.
pub fn is_close(word: &str, candidate: &str) -> bool {
    let shared = candidate
        .chars()
        .zip(word.chars())
        .take_while(|(a, b)| a == b)
        .count();
    (word.chars().count() >= 4 && shared >= 4)
        || distance(word, candidate) <= (candidate.chars().count() / 3).max(2)
}

/// At most `most` of `candidates` close to `word` ([`is_close`]), closest
/// first (ties in the candidates' order).
pub fn close_names<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    most: usize,
) -> Vec<&'a str> {
    let mut close: Vec<(usize, usize, &str)> = candidates
        .into_iter()
        .enumerate()
        .filter(|(_, c)| is_close(word, c))
        .map(|(i, c)| (distance(word, c), i, c))
        .collect();
    close.sort_unstable();
    close.into_iter().take(most).map(|(_, _, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closest_few_names_are_suggested() {
        assert_eq!(distance("kitten", "sitting"), 3);
        let names = [
            "daily-report",
            "daily-reports",
            "weekly-report",
            "backup",
            "daily-rapport",
        ];
        assert_eq!(
            close_names("daily-reprot", names, 3),
            ["daily-report", "daily-reports", "daily-rapport"]
        );
        assert_eq!(close_names("backpu", names, 3), ["backup"]);
        assert!(close_names("zzzz", names, 3).is_empty());
        let many: Vec<String> = (0..10_000).map(|i| format!("tenant-{i}")).collect();
        let close = close_names("tenant-99999", many.iter().map(String::as_str), 3);
        assert_eq!(close.len(), 3, "{close:?}");
    }
}
