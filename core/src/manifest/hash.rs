//! The spec hash: a fingerprint of the fields that decide which slots a job
//! has. Stored in each job's state record, it tells the coordinator that the
//! schedule changed (cursor kept, future slots recomputed).
//!
//! STABILITY: the canonical text and the hash function below must never
//! change between versions. A change would make every stored record look
//! like a schedule change. Adding a field means a new version prefix and a
//! migration, not an edit. A test pins known outputs.

use std::fmt::Write as _;

use jiff::Timestamp;

use super::JobSpec;
use crate::schedule::{DstGap, DstOverlap};

/// FNV-1a, 64 bits: tiny, well specified, and stable by definition.
pub(crate) fn fnv1a64(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes
        .iter()
        .fold(OFFSET, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(PRIME))
}

/// Whitespace runs collapse to one space and letters are uppercased, so
/// `"0  9 * * mon"` and `"0 9 * * MON"` hash alike.
fn normalise_schedule(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_uppercase()
}

/// Seconds and nanoseconds as integers: independent of any date formatting.
fn instant(t: Option<Timestamp>) -> String {
    match t {
        Some(t) => format!(
            "{}.{:09}",
            t.as_second(),
            t.subsec_nanosecond().unsigned_abs()
        ),
        None => "-".into(),
    }
}

/// The canonical text the hash is computed over (version 1).
pub(super) fn canonical(spec: &JobSpec) -> String {
    let policy = spec.schedule.policy();
    let gap = match policy.gap {
        DstGap::Shift => "shift",
        DstGap::Skip => "skip",
        DstGap::ShiftAlways => "shift_always",
    };
    let overlap = match policy.overlap {
        DstOverlap::Once => "once",
        DstOverlap::Twice => "twice",
    };
    let mut out = String::from("cronslot-spec-v1\n");
    let _ = writeln!(out, "schedule={}", normalise_schedule(&spec.schedule_text));
    let _ = writeln!(out, "timezone={}", spec.schedule.zone().name());
    let _ = writeln!(out, "dst_gap={gap}");
    let _ = writeln!(out, "dst_overlap={overlap}");
    let _ = writeln!(out, "start_at={}", instant(spec.start_at));
    let _ = writeln!(out, "end_at={}", instant(spec.end_at));
    out
}

/// A stable fingerprint (16 lowercase hex digits) of the fields that define
/// which slots exist: the schedule text (whitespace and letter case
/// normalised), the zone, the DST policy, `start_at` and `end_at`. Policies
/// such as retry or lease do not change it.
pub fn spec_hash(spec: &JobSpec) -> String {
    format!("{:016x}", fnv1a64(canonical(spec).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_matches_reference_vectors() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn schedule_normalisation() {
        assert_eq!(normalise_schedule(" 0\t9  * * mon "), "0 9 * * MON");
    }
}
