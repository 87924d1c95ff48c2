//! Whose clock judges a lease, and how far the server's clock is from this
//! machine's.
//!
//! A store that talks to a server reads the server's clock in the same
//! round trip as the record (PostgreSQL `clock_timestamp()`, Redis `TIME`),
//! so every machine sharing the store agrees on when a lease expired,
//! whatever its own clock says (docs/design.md §10). The same reading,
//! against this machine's clock at the midpoint of the round trip, tells
//! the runner how far to correct its own clock when it times runs.

use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};

/// Whose clock judges leases (the instant
/// [`StateStore::get_judged`](cronslot_core::coord::StateStore::get_judged)
/// answers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JudgeClock {
    /// The server's clock, read in the same request as the record: every
    /// machine sharing the store agrees on when a lease has expired. The
    /// default.
    #[default]
    Server,
    /// The caller's `now`, as the memory and SQLite stores do: for tests and
    /// simulations that drive virtual time, and for a runner on an
    /// accelerated clock (its own, which the server's cannot judge).
    Caller,
}

impl JudgeClock {
    /// The instant that judges a read: the server's, or the caller's.
    pub fn judge(self, server: Timestamp, caller: Timestamp) -> Timestamp {
        match self {
            JudgeClock::Server => server,
            JudgeClock::Caller => caller,
        }
    }
}

/// How far the server's clock is ahead of this machine's (negative:
/// behind), as measured by the last read; shared by every clone of a store.
#[derive(Debug, Default)]
pub struct ClockOffset(Mutex<Option<SignedDuration>>);

impl ClockOffset {
    /// The last measurement; `None` before the first read.
    pub fn get(&self) -> Option<SignedDuration> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a read: the request left at `sent` and its answer came at
    /// `received` (both on this machine's clock), and the server's clock
    /// said `server`. The server read its clock somewhere in between: the
    /// midpoint is the best guess, off by at most half the round trip.
    pub fn measured(&self, sent: Timestamp, server: Timestamp, received: Timestamp) {
        let half = received.duration_since(sent) / 2;
        if let Ok(midpoint) = sent.checked_add(half) {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(server.duration_since(midpoint));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_the_server_clock_against_the_midpoint_of_the_round_trip() {
        let offset = ClockOffset::default();
        assert_eq!(offset.get(), None);
        let sent: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        let received: Timestamp = "2026-01-05T00:00:00.2Z".parse().unwrap();
        let server: Timestamp = "2026-01-05T00:00:03.1Z".parse().unwrap();
        offset.measured(sent, server, received);
        assert_eq!(offset.get(), Some(SignedDuration::from_secs(3)));
        let behind: Timestamp = "2026-01-04T23:59:59.1Z".parse().unwrap();
        offset.measured(sent, behind, received);
        assert_eq!(offset.get(), Some(SignedDuration::from_secs(-1)));
    }

    #[test]
    fn the_judge_picks_its_clock() {
        let server: Timestamp = "2026-01-05T00:00:03Z".parse().unwrap();
        let caller: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        assert_eq!(JudgeClock::default().judge(server, caller), server);
        assert_eq!(JudgeClock::Caller.judge(server, caller), caller);
    }
}
