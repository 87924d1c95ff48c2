//! Waiting for replicas (the URL's `wait_replicas`): a write that fewer
//! replicas acknowledged than asked is not counted as done. Apart
//! because both the records and the ledger wait the same way.

use super::*;

/// The replicas each write must reach before it counts as done (the
/// URL's `wait_replicas`, `wait_timeout`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Replicas {
    wanted: u32,
    timeout: Duration,
}

impl Replicas {
    pub(super) fn of(location: &RedisLocation) -> Replicas {
        Replicas {
            wanted: location.wait_replicas(),
            timeout: location.wait_timeout(),
        }
    }

    /// After a write that `happened`: `WAIT` on the same connection (a
    /// connection's `WAIT` covers that connection's writes), answering how
    /// many replicas have it. `None` when nothing is to be waited for.
    pub(super) async fn wait_if(
        self,
        happened: bool,
        conn: &mut MultiplexedConnection,
    ) -> redis::RedisResult<Option<u32>> {
        if self.wanted == 0 || !happened {
            return Ok(None);
        }
        let ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        let acked: u32 = redis::cmd("WAIT")
            .arg(self.wanted)
            .arg(ms)
            .query_async(conn)
            .await?;
        Ok(Some(acked))
    }

    /// A write fewer replicas acknowledged than wanted is not done: on a
    /// failover it could be lost and its slot run again. It is reported
    /// unavailable, so that the caller does not act on it (a claim is not
    /// run; its lease lapses and the slot is claimed anew, under a higher
    /// fence, after the lease), never ambiguous (read back, it would look
    /// done).
    pub(super) fn check(
        self,
        store: &str,
        doing: &str,
        acked: Option<u32>,
    ) -> Result<(), StoreError> {
        match acked {
            Some(acked) if acked < self.wanted => Err(StoreError::unavailable(format!(
                "Redis store {store}: {doing}: the write reached {acked} of the {} replicas \
                 wait_replicas asks for within {} (wait_timeout), so it is not counted as \
                 done: a failover could lose it; check the replicas (worth retrying)",
                self.wanted,
                seconds(self.timeout)
            ))),
            _ => Ok(()),
        }
    }
}
