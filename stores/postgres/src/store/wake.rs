//! The wake signal (docs/design.md §12, "Keyed runs"): a write that makes
//! a record due now is followed by a `NOTIFY` on the schema's channel,
//! sent by the store once the write has committed ([`Notifier`]; inside
//! an application's transaction, by the write's own statement, sql.rs);
//! one connection per store (all its clones together) listens on it,
//! reconnecting when it drops, and wakes the runners. The listening
//! connection is not one of the pool's, and not counted among the store's
//! requests: it sends one `LISTEN` per connection, then only receives.

use std::sync::Mutex;

use cronslot_store_kit::{WakeSignal, listen_until_closed, wake_channel};
use tokio_postgres::Client;

use super::*;

/// Tells the runners that writes made records due now: a `NOTIFY` of its
/// own, after those writes committed. Apart from the writes because
/// PostgreSQL serializes the commits of the transactions that notify (a
/// lock on the database, held until the commit is flushed): enqueues that
/// notified in their own statement could not share a flush, and queued
/// behind each other. A `NOTIFY` alone writes nothing to flush.
///
/// One at a time, on a connection of its own (outside the pool, and not
/// counted as one, as the listener's is not): the writes made while one is
/// on its way are told by the next, so a burst of enqueues costs a few
/// notifications, and no write waits for one. One that fails is lost as a
/// notification lost on the way would be: runners poll meanwhile.
#[derive(Default)]
pub(super) struct Notifier {
    state: Mutex<Notifying>,
}

#[derive(Default)]
struct Notifying {
    sending: bool,
    /// A write made a record due while a notification was on its way.
    again: bool,
    client: Option<Client>,
}

fn lock(m: &Mutex<Notifying>) -> std::sync::MutexGuard<'_, Notifying> {
    // Nothing panics while the lock is held; the state stays sound.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Notifier {
    /// A write that made a record due has committed: notify, now or right
    /// after the notification on its way. Runs on the store's runtime.
    pub(super) fn due(self: &Arc<Self>, shared: &Arc<Shared>, sql: &Arc<Sql>) {
        {
            let mut state = lock(&self.state);
            if state.sending {
                state.again = true;
                return;
            }
            state.sending = true;
        }
        let (notifier, shared, sql) = (Arc::clone(self), Arc::clone(shared), Arc::clone(sql));
        tokio::spawn(async move {
            loop {
                let kept = lock(&notifier.state).client.take();
                let client = match kept {
                    Some(client) if !client.is_closed() => Some(client),
                    _ => shared.connect_apart().await.ok(),
                };
                if let Some(client) = client {
                    shared.counts.signal();
                    let sent = tokio::time::timeout(
                        shared.answer_timeout(),
                        client.batch_execute(&sql.notify),
                    )
                    .await;
                    if matches!(sent, Ok(Ok(()))) {
                        lock(&notifier.state).client = Some(client);
                    }
                }
                let mut state = lock(&notifier.state);
                if state.again {
                    state.again = false;
                    continue;
                }
                state.sending = false;
                break;
            }
        });
    }
}

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
