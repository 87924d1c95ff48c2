//! The effect ledger's read-decide-write loop, written once for every store
//! whose write of an entry is a conditional write (PostgreSQL, Redis,
//! DynamoDB): read the entry, let the core decide
//! ([`decide_begin`](cronslot_core::coord::decide_begin),
//! [`decide_finish`](cronslot_core::coord::decide_finish)), write on
//! condition that the entry is still the one decided on, and decide again
//! on what beat the write. SQLite and the Durable Object decide inside one
//! transaction instead and need no loop.

use cronslot_core::coord::{EffectRecord, StoreError, StoreErrorKind};

/// How long a done effect is kept before a sweep (or a TTL) may delete it,
/// unless the store is told otherwise: the core's, where the rule of when
/// an entry may go is written ([`EffectRecord::sweep_at`]).
pub use cronslot_core::coord::DEFAULT_EFFECT_RETENTION;

/// How many times the read-decide-write is redone after losing a race
/// before the store reports itself unavailable.
pub const MAX_LEDGER_ATTEMPTS: u32 = 16;

/// An effect's entry as a store holds it: the record and the store's
/// revision of it, which a conditional write names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<R> {
    /// The store's revision of the entry.
    pub rev: R,
    /// The entry.
    pub record: EffectRecord,
}

/// What a conditional write of an entry did.
#[derive(Debug)]
pub enum Written<R> {
    /// Stored.
    Yes,
    /// Another writer changed the entry first.
    Lost {
        /// The entry as the failed write found it, when the store hands it
        /// back (`None`: the loop reads it again).
        current: Option<Option<Entry<R>>>,
        /// Whether this write may have landed all the same (an attempt
        /// whose answer was lost, retried): if the entry read is exactly
        /// what it wrote, it is ours.
        maybe_applied: bool,
    },
    /// Whether it landed is unknown (the error says why): the loop reads the
    /// entry back, and an entry exactly as written is ours.
    InDoubt(StoreError),
}

/// One effect's entry in a store, as the loop reads and writes it.
pub trait EffectEntry {
    /// The store's revision of an entry.
    type Rev: Clone + PartialEq;

    /// The entry, if there is one.
    async fn read(&mut self) -> Result<Option<Entry<Self::Rev>>, StoreError>;

    /// Writes `record` on condition that the entry is still `current`;
    /// returns the revision the entry has if this write landed, and what
    /// the write did.
    async fn write(
        &mut self,
        current: Option<&Entry<Self::Rev>>,
        record: &EffectRecord,
    ) -> Result<(Self::Rev, Written<Self::Rev>), StoreError>;
}

/// Reads, decides and writes `entry` until `decide` needs no write or its
/// write lands, at most [`MAX_LEDGER_ATTEMPTS`] times; then `contended`
/// says why the store is unavailable. `decide` sees the current record and
/// says what to answer and what to store.
pub async fn settle_effect<E: EffectEntry, D: Clone>(
    entry: &mut E,
    decide: impl Fn(Option<&EffectRecord>) -> (D, Option<EffectRecord>),
    contended: impl FnOnce(u32) -> StoreError,
) -> Result<D, StoreError> {
    let mut current = entry.read().await?;
    // Writes sent that may have landed (the answer was lost, or a retried
    // attempt): an entry that is exactly one of them is ours, so answer
    // what was decided then.
    let mut in_doubt: Vec<(Entry<E::Rev>, D)> = Vec::new();
    for _ in 0..MAX_LEDGER_ATTEMPTS {
        if let Some(cur) = &current {
            if let Some((_, decision)) = in_doubt.iter().find(|(sent, _)| sent == cur) {
                return Ok(decision.clone());
            }
        }
        let (decision, write) = decide(current.as_ref().map(|c| &c.record));
        let Some(record) = write else {
            return Ok(decision);
        };
        let (rev, written) = entry.write(current.as_ref(), &record).await?;
        let sent = Entry { rev, record };
        current = match written {
            Written::Yes => return Ok(decision),
            Written::Lost {
                current,
                maybe_applied,
            } => {
                if maybe_applied {
                    in_doubt.push((sent, decision));
                }
                match current {
                    Some(current) => current,
                    None => entry.read().await?,
                }
            }
            Written::InDoubt(e) => {
                in_doubt.push((sent, decision));
                entry.read().await.map_err(|read| {
                    StoreError::new(
                        StoreErrorKind::Ambiguous,
                        format!(
                            "{}; reading it back failed too: {}",
                            e.message, read.message
                        ),
                    )
                })?
            }
        };
    }
    Err(contended(MAX_LEDGER_ATTEMPTS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    use cronslot_core::coord::exec::block_on;
    use cronslot_core::coord::{EffectBegin, decide_begin};
    use jiff::Timestamp;

    /// An entry in memory whose writes can be made to lose or to land in
    /// doubt, in the order scripted.
    struct Scripted {
        stored: Option<Entry<u64>>,
        /// What each write does before it is applied: `None` applies it.
        faults: Vec<Option<Fault>>,
        reads: u32,
        writes: u32,
    }

    enum Fault {
        /// Another writer stores this first.
        Beaten(EffectRecord),
        /// The write lands, but its answer is lost.
        AnswerLost,
    }

    impl EffectEntry for Scripted {
        type Rev = u64;

        async fn read(&mut self) -> Result<Option<Entry<u64>>, StoreError> {
            self.reads += 1;
            Ok(self.stored.clone())
        }

        async fn write(
            &mut self,
            current: Option<&Entry<u64>>,
            record: &EffectRecord,
        ) -> Result<(u64, Written<u64>), StoreError> {
            self.writes += 1;
            let rev = current.map_or(1, |c| c.rev + 1);
            let fault = if self.faults.is_empty() {
                None
            } else {
                self.faults.remove(0)
            };
            match fault {
                Some(Fault::Beaten(other)) => {
                    self.stored = Some(Entry { rev, record: other });
                    Ok((
                        rev,
                        Written::Lost {
                            current: None,
                            maybe_applied: false,
                        },
                    ))
                }
                Some(Fault::AnswerLost) => {
                    self.stored = Some(Entry {
                        rev,
                        record: record.clone(),
                    });
                    Ok((rev, Written::InDoubt(StoreError::unavailable("timed out"))))
                }
                None => {
                    self.stored = Some(Entry {
                        rev,
                        record: record.clone(),
                    });
                    Ok((rev, Written::Yes))
                }
            }
        }
    }

    fn begin(
        owner: &'static str,
    ) -> impl Fn(Option<&EffectRecord>) -> (EffectBegin, Option<EffectRecord>) {
        let now: Timestamp = "2026-01-05T00:00:00Z".parse().unwrap();
        move |current| decide_begin(current, "k", owner, 1, now, Duration::from_secs(60))
    }

    fn held_by(owner: &'static str) -> EffectRecord {
        let mut entry = Scripted {
            stored: None,
            faults: Vec::new(),
            reads: 0,
            writes: 0,
        };
        block_on(settle_effect(&mut entry, begin(owner), |_| {
            StoreError::other("x")
        }))
        .unwrap();
        entry.stored.unwrap().record
    }

    #[test]
    fn a_lost_race_is_decided_again_on_the_winner() {
        let mut entry = Scripted {
            stored: None,
            faults: vec![Some(Fault::Beaten(held_by("other")))],
            reads: 0,
            writes: 0,
        };
        let answer = block_on(settle_effect(&mut entry, begin("me"), |_| {
            StoreError::other("x")
        }))
        .unwrap();
        assert!(
            !matches!(answer, EffectBegin::Acquired),
            "the other holder's hold stands: {answer:?}"
        );
        assert_eq!((entry.reads, entry.writes), (2, 1));
    }

    #[test]
    fn a_write_in_doubt_that_landed_is_recognised_as_ours() {
        let mut entry = Scripted {
            stored: None,
            faults: vec![Some(Fault::AnswerLost)],
            reads: 0,
            writes: 0,
        };
        let answer = block_on(settle_effect(&mut entry, begin("me"), |_| {
            StoreError::other("x")
        }))
        .unwrap();
        assert!(matches!(answer, EffectBegin::Acquired), "{answer:?}");
        assert_eq!((entry.reads, entry.writes), (2, 1));
    }

    #[test]
    fn endless_contention_is_the_stores_error() {
        let mut entry = Scripted {
            stored: None,
            faults: (0..MAX_LEDGER_ATTEMPTS)
                .map(|i| Some(Fault::Beaten(held_by(if i % 2 == 0 { "a" } else { "b" }))))
                .collect(),
            reads: 0,
            writes: 0,
        };
        // Each lost race lets the other holder's lapsed hold be taken over
        // again: make every decision want a write.
        let now: Timestamp = "2026-01-05T01:00:00Z".parse().unwrap();
        let decide = move |current: Option<&EffectRecord>| {
            decide_begin(current, "k", "me", 1, now, Duration::from_secs(60))
        };
        let e = block_on(settle_effect(&mut entry, decide, |n| {
            StoreError::unavailable(format!("changed {n} times"))
        }))
        .unwrap_err();
        assert_eq!(e, StoreError::unavailable("changed 16 times"));
        assert_eq!(entry.writes, MAX_LEDGER_ATTEMPTS);
    }
}
