//! The store's keys under its prefix: which hash tag each lives under,
//! so that a job's keys share a Redis Cluster slot. Apart because the
//! records, the ledger and the tick index all name their keys here.

// Only the docs name it.
#[cfg(doc)]
use cronslot_core::coord::encode_state;

/// The store's keys under its prefix `P`. A job's keys share the hash tag
/// `{P:JOB}`, so that in a Redis Cluster they live in one slot; the
/// deployment's keys share `{P}`.
pub(super) struct Keys {
    pub(super) prefix: String,
}

impl Keys {
    /// The job's record: a hash of `v` (the version) and `s` (the JSON of
    /// [`encode_state`]).
    pub(super) fn state(&self, job: &str) -> String {
        format!("{{{}:{job}}}:state", self.prefix)
    }

    /// An effect's ledger entry: a hash of `rev` and `r` (the JSON of the
    /// entry), with an expiry. Under the hash tag of its job (the part of
    /// the key before its first `@`).
    pub(super) fn effect(&self, key: &str) -> String {
        let job = key.split_once('@').map_or(key, |(job, _)| job);
        format!("{{{}:{job}}}:effect:{key}", self.prefix)
    }

    /// The wake index: a sorted set of every job with a record, scored by
    /// its wake in microseconds since the epoch (`+inf`: none).
    pub(super) fn wakes(&self) -> String {
        format!("{{{}}}:wakes", self.prefix)
    }

    /// The name index: a sorted set of every job with a record, each
    /// scored 0, so that it is in byte order of the names and pages by
    /// range (`ZRANGEBYLEX`). Since layout 2.
    pub(super) fn names(&self) -> String {
        format!("{{{}}}:names", self.prefix)
    }

    /// The tick mark, in microseconds since the epoch.
    pub(super) fn tick(&self) -> String {
        format!("{{{}}}:tick", self.prefix)
    }

    /// The wake channel (not a key): the record writes that make a record
    /// due now publish on it, and runners subscribe to it.
    pub(super) fn wake_channel(&self) -> String {
        format!("{{{}}}:wake", self.prefix)
    }

    /// The layout version of the keys.
    pub(super) fn layout(&self) -> String {
        format!("{{{}}}:layout", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_share_a_hash_tag_per_job() {
        let keys = Keys {
            prefix: "cs".into(),
        };
        assert_eq!(keys.state("daily"), "{cs:daily}:state");
        assert_eq!(
            keys.effect("daily@2026-01-05T00:00:00Z/mail@x"),
            "{cs:daily}:effect:daily@2026-01-05T00:00:00Z/mail@x"
        );
        assert_eq!(keys.effect("no-at"), "{cs:no-at}:effect:no-at");
        assert_eq!(keys.wakes(), "{cs}:wakes");
        assert_eq!(keys.tick(), "{cs}:tick");
        assert_eq!(keys.layout(), "{cs}:layout");
        assert_eq!(keys.names(), "{cs}:names");
        assert_eq!(keys.wake_channel(), "{cs}:wake");
    }
}
