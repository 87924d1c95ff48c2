//! The wake signal (docs/design.md §12, "Keyed runs"): a write that makes
//! a record due now publishes on the prefix's wake channel from its own
//! script (scripts.rs `PUT`); one connection per store (all its clones
//! together) subscribes to it, reconnecting when it drops, and wakes the
//! runners. The subscribed connection is not the store's multiplexed one,
//! and not counted among the store's requests: it sends one `SUBSCRIBE`
//! per connection, then only receives.

use cronslot_store_kit::{WakeSignal, listen_until_closed, wake_channel};

use super::*;

impl RedisStore {
    /// The store's wake signal: it fires when a write anywhere makes a
    /// record due now. The first call opens the one subscribed connection
    /// that every clone of this store shares; it reconnects when it drops
    /// (the signal reports the loss, and runners poll meanwhile) and
    /// closes with the store once no signal is left.
    pub fn wake_signal(&self) -> WakeSignal {
        self.shared
            .wakes
            .get_or_init(|| {
                let (tx, signal) = wake_channel();
                let listener = self.shared.listener();
                let channel = self.keys.wake_channel();
                self.shared
                    .driver
                    .spawn(listen_until_closed(tx, async move |tx| {
                        listener.listen(&channel, tx).await
                    }));
                signal
            })
            .clone()
    }

    /// The channel this store's writes publish on when they make a record
    /// due now: `{PREFIX}:wake`.
    pub fn wake_channel(&self) -> String {
        self.keys.wake_channel()
    }
}
