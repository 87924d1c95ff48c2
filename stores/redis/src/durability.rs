//! Whether the server's configuration keeps an acknowledged claim
//! (docs/design.md §10, "Redis"): read with `CONFIG GET` and `INFO
//! replication` by `cronslot init` and `cronslot run`, which warn; never
//! changed (the server's configuration is its operator's).
//!
//! A claim the server acknowledged and then lost lets another runner
//! claim the same slot: the slot runs twice. That happens when the write
//! was never on disk (no AOF, or `appendfsync everysec` and a crash of
//! the machine), when it was evicted (`maxmemory-policy` other than
//! `noeviction`), or when a replica that never received it is promoted.

use redis::RedisResult;

/// `CONFIG GET` of `appendonly`, `appendfsync` and `maxmemory-policy`,
/// and `INFO replication`.
type Replies = (Vec<String>, Vec<String>, Vec<String>, String);

use crate::error::Phase;
use crate::store::RedisStore;

/// What the server said of its persistence, eviction and replicas. A
/// field is `None` when the server would not say (see
/// [`Durability::unchecked`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Durability {
    /// The store as messages name it (without its password).
    store: String,
    /// `appendonly`: `yes` or `no`.
    pub appendonly: Option<String>,
    /// `appendfsync`: `always`, `everysec` or `no`.
    pub appendfsync: Option<String>,
    /// `maxmemory-policy`: `noeviction`, `allkeys-lru`, ….
    pub maxmemory_policy: Option<String>,
    /// `role` from `INFO replication`: `master` or `slave`.
    pub role: Option<String>,
    /// `connected_slaves` from `INFO replication`.
    pub replicas: Option<u32>,
    /// Why the configuration could not be read (a managed service that
    /// renames or forbids `CONFIG`, an ACL user without it), if it could
    /// not.
    pub unchecked: Option<String>,
    /// The replicas each write waits for (the URL's `wait_replicas`).
    pub waits_for: u32,
}

impl Durability {
    /// One sentence per setting that can lose an acknowledged claim, each
    /// naming the store and saying what to set; empty when the
    /// configuration keeps the guarantee.
    pub fn warnings(&self) -> Vec<String> {
        let store = &self.store;
        let mut out = Vec::new();
        if let Some(why) = &self.unchecked {
            out.push(format!(
                "Redis store {store}: cannot read the server's persistence settings ({why}): \
                 check that it runs with appendonly yes, appendfsync always and \
                 maxmemory-policy noeviction, or a slot can run twice after a crash \
                 (docs/design.md §10)"
            ));
        }
        match self.appendonly.as_deref() {
            Some("yes") | None => {}
            Some(other) => out.push(format!(
                "Redis store {store}: appendonly is {other}: a crash or restart of the server \
                 loses the claims written since its last snapshot, and their slots can run \
                 twice; set appendonly yes and appendfsync always"
            )),
        }
        if self.appendonly.as_deref() == Some("yes") {
            match self.appendfsync.as_deref() {
                Some("always") | None => {}
                Some(other) => out.push(format!(
                    "Redis store {store}: appendfsync is {other}: a crash of the server's \
                     machine can lose claims it has acknowledged{}, and their slots can run \
                     twice; set appendfsync always",
                    if other == "everysec" {
                        " (up to about a second of them)"
                    } else {
                        ""
                    }
                )),
            }
        }
        match self.maxmemory_policy.as_deref() {
            Some("noeviction") | None => {}
            Some(other) => out.push(format!(
                "Redis store {store}: maxmemory-policy is {other}: when memory runs short the \
                 server may evict a job's record (forgetting its claims and fences) or an effect \
                 ledger entry (letting the effect happen twice); set maxmemory-policy noeviction \
                 (the store then refuses writes instead)"
            )),
        }
        if let Some(role) = self.role.as_deref().filter(|r| *r != "master") {
            out.push(format!(
                "Redis store {store}: the server is a replica (role {role}): every write will \
                 be refused; point the store at the primary"
            ));
        }
        if let Some(replicas) = self.replicas.filter(|n| *n > self.waits_for) {
            out.push(format!(
                "Redis store {store}: the server has {replicas} replica{} and each write waits \
                 for {}: a failover to a replica that had not received a claim loses it, and \
                 its slot can run twice; add ?wait_replicas={replicas} to the store's URL",
                if replicas == 1 { "" } else { "s" },
                match self.waits_for {
                    0 => "none".to_string(),
                    n => n.to_string(),
                }
            ));
        }
        out
    }
}

impl RedisStore {
    /// Reads the server's persistence, eviction and replication settings
    /// (one round trip, counted as setup): what [`Durability::warnings`]
    /// judges. Never fails: what the server will not say is
    /// [`Durability::unchecked`].
    pub async fn durability(&self) -> Durability {
        let shared = self.shared().clone();
        let mut found = Durability {
            store: shared.shown.clone(),
            waits_for: self.location().wait_replicas(),
            ..Durability::default()
        };
        let answer = shared
            .clone()
            .driver
            .run(async move {
                let doing = || "reading the server's persistence settings".to_string();
                shared
                    .request(Phase::Read, true, &doing, |mut conn| async move {
                        let replies: RedisResult<Replies> = redis::pipe()
                            .cmd("CONFIG")
                            .arg("GET")
                            .arg("appendonly")
                            .cmd("CONFIG")
                            .arg("GET")
                            .arg("appendfsync")
                            .cmd("CONFIG")
                            .arg("GET")
                            .arg("maxmemory-policy")
                            .cmd("INFO")
                            .arg("replication")
                            .query_async(&mut conn)
                            .await;
                        replies
                    })
                    .await
            })
            .await;
        match answer {
            Ok((appendonly, appendfsync, policy, info)) => {
                found.appendonly = config_value(&appendonly);
                found.appendfsync = config_value(&appendfsync);
                found.maxmemory_policy = config_value(&policy);
                found.role = info_field(&info, "role");
                found.replicas = info_field(&info, "connected_slaves").and_then(|n| n.parse().ok());
            }
            Err(e) => found.unchecked = Some(e.message().to_string()),
        }
        found
    }
}

/// The value of a `CONFIG GET NAME` reply (`[NAME, VALUE]`), lowercased.
fn config_value(reply: &[String]) -> Option<String> {
    match reply {
        [_, value] => Some(value.trim().to_ascii_lowercase()),
        _ => None,
    }
}

/// A `NAME:VALUE` line of an `INFO` reply.
fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines().find_map(|line| {
        let (key, value) = line.trim().split_once(':')?;
        (key == name).then(|| value.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn safe() -> Durability {
        Durability {
            store: "redis://cache:6379/0".into(),
            appendonly: Some("yes".into()),
            appendfsync: Some("always".into()),
            maxmemory_policy: Some("noeviction".into()),
            role: Some("master".into()),
            replicas: Some(0),
            unchecked: None,
            waits_for: 0,
        }
    }

    #[test]
    fn a_safe_configuration_has_no_warning() {
        assert!(safe().warnings().is_empty());
    }

    #[test]
    fn each_unsafe_setting_has_its_warning() {
        type Change = fn(&mut Durability);
        let cases: [(Change, &str); 6] = [
            (|d| d.appendonly = Some("no".into()), "appendonly is no"),
            (
                |d| d.appendfsync = Some("everysec".into()),
                "appendfsync is everysec",
            ),
            (
                |d| d.maxmemory_policy = Some("volatile-lru".into()),
                "maxmemory-policy is volatile-lru",
            ),
            (|d| d.role = Some("slave".into()), "is a replica"),
            (|d| d.replicas = Some(2), "?wait_replicas=2"),
            (
                |d| d.unchecked = Some("NOPERM".into()),
                "cannot read the server's persistence settings (NOPERM)",
            ),
        ];
        for (change, expected) in cases {
            let mut d = safe();
            change(&mut d);
            let warnings = d.warnings();
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            assert!(warnings[0].contains(expected), "{warnings:?}");
            assert!(warnings[0].starts_with("Redis store redis://cache:6379/0: "));
        }
    }

    #[test]
    fn waiting_for_every_replica_keeps_a_failover_safe() {
        let mut d = safe();
        d.replicas = Some(2);
        d.waits_for = 2;
        assert!(d.warnings().is_empty());
        d.waits_for = 1;
        assert!(d.warnings()[0].contains("each write waits for 1"));
    }

    #[test]
    fn replies_are_read() {
        assert_eq!(
            config_value(&["appendfsync".into(), "Always".into()]),
            Some("always".into())
        );
        assert_eq!(config_value(&[]), None);
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:1\r\nslave0:ip=…\r\n";
        assert_eq!(info_field(info, "role"), Some("master".into()));
        assert_eq!(info_field(info, "connected_slaves"), Some("1".into()));
        assert_eq!(info_field(info, "master_host"), None);
    }
}
