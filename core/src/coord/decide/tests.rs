//! Unit tests of the transitions' private parts.

use super::advance::last_fated_by_search;
use super::*;
use crate::coord::SplitMix64;
use crate::coord::rng::RandomSource;
use crate::manifest::parse_manifest;

/// The search over time finds the slot the walk back finds.
#[test]
fn last_fated_by_search_agrees_with_the_walk() {
    let mut rng = SplitMix64::new(7);
    for (schedule, zone) in [
        ("* * * * *", "UTC"),
        ("*/7 * * * *", "UTC"),
        ("30 2 * * *", "America/New_York"),
        ("0 9 * * MON-FRI", "Europe/Berlin"),
    ] {
        let text =
            format!("[[job]]\nname = \"j\"\nschedule = \"{schedule}\"\ntimezone = \"{zone}\"\n");
        let spec = parse_manifest(&text, "t.toml")
            .expect("valid")
            .jobs
            .remove(0);
        for _ in 0..40 {
            let cursor = Timestamp::from_second(
                1_700_000_000 + i64::try_from(rng.next_u64() % 200_000_000).expect("small"),
            )
            .expect("in range");
            let due_until = Timestamp::from_second(
                cursor.as_second()
                    + 1
                    + i64::try_from(rng.next_u64() % 100_000_000).expect("small"),
            )
            .expect("in range");
            let due = spec.schedule.count_between(cursor, due_until);
            let newest = spec.schedule.prev_before(add_nanos(due_until));
            for keep in [0, 1, 2, 65, 500] {
                if keep >= due {
                    continue;
                }
                let mut walked = newest;
                for _ in 0..keep {
                    walked = walked.and_then(|s| spec.schedule.prev_before(s));
                }
                assert_eq!(
                    last_fated_by_search(&spec, cursor, due_until, keep),
                    walked,
                    "{schedule} {zone}: ({cursor}, {due_until}], keep {keep}"
                );
            }
        }
    }
}
