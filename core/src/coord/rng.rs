//! Randomness comes in through a parameter, so a simulation replays exactly.

/// A source of random 64-bit words (retry jitter).
pub trait RandomSource {
    /// The next random word, uniform over all of `u64`.
    fn next_u64(&mut self) -> u64;

    /// A uniform value in `0..=max` (full jitter). Modulo bias is below
    /// 2^-40 for the spans used here (milliseconds of a backoff).
    fn below_or_equal(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            return self.next_u64();
        }
        self.next_u64() % (max + 1)
    }
}

/// SplitMix64: tiny, fast, and good enough for jitter; seeded explicitly.
#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`: the same seed gives the same
    /// sequence, so a simulation replays exactly.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }
}

impl RandomSource for SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = SplitMix64::new(42);
        let mut b = SplitMix64::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = SplitMix64::new(43);
        assert_ne!(SplitMix64::new(42).next_u64(), c.next_u64());
    }

    #[test]
    fn bounded_values_stay_in_range() {
        let mut r = SplitMix64::new(7);
        for max in [0u64, 1, 2, 1000, 30_000] {
            for _ in 0..1000 {
                assert!(r.below_or_equal(max) <= max);
            }
        }
    }
}
