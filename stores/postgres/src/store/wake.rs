//! The wake signal (docs/design.md §12, "Keyed runs"): a write that makes
//! a record due now notifies the schema's channel in its own statement
//! (sql.rs); one connection per store (all its clones together) listens
//! on it, reconnecting when it drops, and wakes the runners. The listening
//! connection is not one of the pool's, and not counted among the store's
//! requests: it sends one `LISTEN` per connection, then only receives.

use std::time::{Duration, Instant};

use cronslot_store_kit::{WakeSender, WakeSignal, wake_channel};

use super::*;
use crate::pool::Listener;

/// The first pause before listening again after a loss; it doubles up to
/// [`MAX_PAUSE`], and starts over after a connection that lasted.
const FIRST_PAUSE: Duration = Duration::from_millis(250);
const MAX_PAUSE: Duration = Duration::from_secs(30);
/// A connection that listened this long was fine: the next loss starts
/// the pauses over.
const LASTED: Duration = Duration::from_secs(60);

impl PgStore {
    /// The store's wake signal: it fires when a write anywhere (another
    /// process, an application's committed transaction) makes a record due
    /// now. The first call opens the one listening connection that every
    /// clone of this store shares; it reconnects when it drops (the signal
    /// reports the loss, and runners poll meanwhile) and closes with the
    /// store once no signal is left.
    pub fn wake_signal(&self) -> WakeSignal {
        self.shared
            .wakes
            .get_or_init(|| {
                let (tx, signal) = wake_channel();
                let channel = sql::wake_channel(self.shared.location.schema());
                let listener = self.shared.listener();
                self.shared
                    .driver
                    .spawn(listen_forever(listener, channel, tx));
                signal
            })
            .clone()
    }

    /// The channel this store's writes notify (`NOTIFY`) when they make a
    /// record due now: `cronslot_wake_<schema>`.
    pub fn wake_channel(&self) -> String {
        sql::wake_channel(self.shared.location.schema())
    }
}

/// Listens until every signal is gone (the store holds one, so at the
/// latest when the store is dropped, which also ends its runtime).
async fn listen_forever(listener: Listener, channel: String, tx: WakeSender) {
    let mut pause = FIRST_PAUSE;
    loop {
        let began = Instant::now();
        let Some(result) = tx.unless_closed(listener.listen(&channel, &tx)).await else {
            return;
        };
        if began.elapsed() >= LASTED {
            pause = FIRST_PAUSE;
        }
        if let Err(e) = result {
            tx.lost(e.message);
        }
        if tx.unless_closed(tokio::time::sleep(pause)).await.is_none() {
            return;
        }
        pause = pause.saturating_mul(2).min(MAX_PAUSE);
    }
}
