//! The wake signal (docs/design.md §12, "Keyed runs"): a write that makes
//! a record due now notifies the schema's channel in its own statement
//! (sql.rs); one connection per store (all its clones together) listens
//! on it, reconnecting when it drops, and wakes the runners. The listening
//! connection is not one of the pool's, and not counted among the store's
//! requests: it sends one `LISTEN` per connection, then only receives.

use cronslot_store_kit::{WakeSignal, listen_until_closed, wake_channel};

use super::*;

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
                    .spawn(listen_until_closed(tx, async move |tx| {
                        listener.listen(&channel, tx).await
                    }));
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
