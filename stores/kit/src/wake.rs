//! The wake signal: a store tells the runners of its process that a write
//! made a record due now (an enqueued keyed run, a trigger, a redrive), so
//! that they tick at once instead of at their next poll (docs/design.md
//! §12, "Keyed runs").
//!
//! A store that can push (PostgreSQL's `NOTIFY`, Redis's `PUBLISH`) or
//! watch cheaply (SQLite's `data_version`) holds one listener per process
//! and feeds a [`WakeSender`]; every runner holds a [`WakeSignal`] and
//! waits on it beside its poll, which stays the safety net: a signal may
//! be lost (a listener reconnecting), never invented. The signal carries
//! no data: a runner that wakes reads the wake index as any tick does.
//!
//! It is runtime-agnostic (tokio's `watch` channel needs no runtime), so a
//! listener on a store's background thread can wake runners on theirs.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use cronslot_core::coord::StoreError;

use tokio::sync::watch;

/// What the channel holds: how many wakes were sent, and why the listener
/// is not listening, if it is not.
#[derive(Debug, Clone, Default)]
struct State {
    wakes: u64,
    lost: Option<String>,
}

/// A new signal and the sender that fires it.
pub fn wake_channel() -> (WakeSender, WakeSignal) {
    let (tx, rx) = watch::channel(State::default());
    (WakeSender { tx }, WakeSignal { rx, lost: None })
}

/// What a store's listener fires when a write made a record due now.
#[derive(Debug)]
pub struct WakeSender {
    tx: watch::Sender<State>,
}

impl WakeSender {
    /// Wakes every [`WakeSignal`] of this channel (once, however many
    /// wakes arrive before a signal is awaited again).
    pub fn wake(&self) {
        self.tx.send_modify(|s| s.wakes = s.wakes.wrapping_add(1));
    }

    /// The listener lost its connection (`why`, naming the store and never
    /// a password): the signals say so once, and their runners poll.
    pub fn lost(&self, why: String) {
        self.tx.send_if_modified(|s| {
            let change = s.lost.is_none();
            if change {
                s.lost = Some(why);
            }
            change
        });
    }

    /// The listener listens (again): the signals hear it, with a wake (a
    /// write may have come while it did not listen).
    pub fn listening(&self) {
        self.tx.send_modify(|s| {
            s.lost = None;
            s.wakes = s.wakes.wrapping_add(1);
        });
    }

    /// Whether every signal is gone: the listener can stop.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Runs `task` until it ends, or until every signal is gone
    /// (`None`): how a listener stops when no one listens any more.
    pub async fn unless_closed<F: Future>(&self, task: F) -> Option<F::Output> {
        let mut task = pin!(task);
        let mut closed = pin!(self.tx.closed());
        std::future::poll_fn(|cx| {
            if closed.as_mut().poll(cx).is_ready() {
                return Poll::Ready(None);
            }
            task.as_mut().poll(cx).map(Some)
        })
        .await
    }
}

/// The first pause before a listener listens again after a loss; it
/// doubles up to [`MAX_LISTEN_PAUSE`], and starts over after a connection
/// that lasted [`LISTEN_LASTED`].
pub const FIRST_LISTEN_PAUSE: Duration = Duration::from_millis(250);
/// The longest pause between a listener's tries.
pub const MAX_LISTEN_PAUSE: Duration = Duration::from_secs(30);
/// A connection that listened this long was fine: the next loss starts
/// the pauses over.
pub const LISTEN_LASTED: Duration = Duration::from_secs(60);

/// A store's listener, until every signal is gone (the store holds one,
/// so at the latest when the store is dropped): `listen` holds one
/// connection that listens (PostgreSQL's `LISTEN`, Redis's `SUBSCRIBE`)
/// and feeds `tx` until the connection fails; the signals then hear of the
/// loss, and it listens again after a pause ([`FIRST_LISTEN_PAUSE`],
/// doubling to [`MAX_LISTEN_PAUSE`]). Runs on the store's runtime (its
/// timer).
pub async fn listen_until_closed(
    tx: WakeSender,
    mut listen: impl AsyncFnMut(&WakeSender) -> Result<(), StoreError>,
) {
    let mut pause = FIRST_LISTEN_PAUSE;
    loop {
        let began = Instant::now();
        let Some(result) = tx.unless_closed(listen(&tx)).await else {
            return;
        };
        if began.elapsed() >= LISTEN_LASTED {
            pause = FIRST_LISTEN_PAUSE;
        }
        if let Err(e) = result {
            tx.lost(e.message);
        }
        if tx.unless_closed(tokio::time::sleep(pause)).await.is_none() {
            return;
        }
        pause = pause.saturating_mul(2).min(MAX_LISTEN_PAUSE);
    }
}

/// What a [`WakeSignal`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Woken {
    /// A write made a record due now (or the listener is back and one may
    /// have): tick.
    Due,
    /// The listener lost its connection (why); it reconnects, and until
    /// then only the poll finds what comes due.
    Lost(String),
}

/// A runner's side of a store's wake signal: [`WakeSignal::woken`]
/// resolves after a write somewhere made a record due now. Clones are
/// independent: each sees every wake.
#[derive(Clone)]
pub struct WakeSignal {
    rx: watch::Receiver<State>,
    /// The loss this signal last reported.
    lost: Option<String>,
}

impl fmt::Debug for WakeSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WakeSignal")
            .field("lost", &self.lost)
            .finish_non_exhaustive()
    }
}

impl WakeSignal {
    /// Resolves at the next wake since this signal last resolved (at once
    /// if one came meanwhile), or when the listener loses its connection;
    /// never, once the store's listener is gone. Cancel-safe: dropped
    /// before it resolves, it loses no wake.
    pub async fn woken(&mut self) -> Woken {
        loop {
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
            let lost = self.rx.borrow_and_update().lost.clone();
            match lost {
                Some(why) if self.lost.as_ref() != Some(&why) => {
                    self.lost = Some(why.clone());
                    return Woken::Lost(why);
                }
                // Still lost: only a `listening` clears it, and it wakes.
                Some(_) => continue,
                None => {
                    self.lost = None;
                    return Woken::Due;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cronslot_core::coord::exec::block_on;

    #[test]
    fn a_wake_resolves_each_signal_once_and_a_closed_sender_never() {
        let (tx, mut a) = wake_channel();
        let mut b = a.clone();
        tx.wake();
        tx.wake();
        assert_eq!(block_on(a.woken()), Woken::Due);
        assert_eq!(block_on(b.woken()), Woken::Due);
        // Both wakes were seen by the one `woken`: nothing pending now.
        assert!(!a.rx.has_changed().unwrap());
        tx.lost("gone".into());
        assert_eq!(block_on(a.woken()), Woken::Lost("gone".into()));
        tx.listening();
        assert_eq!(block_on(a.woken()), Woken::Due);
        assert!(!tx.is_closed());
        drop(a);
        drop(b);
        assert!(tx.is_closed());
        assert_eq!(
            block_on(tx.unless_closed(std::future::pending::<()>())),
            None
        );
    }
}
