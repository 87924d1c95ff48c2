//! The cronslot container's command line, read as `cronslot run|tick
//! [MANIFEST] --flag value ...`: where its store URL comes from (a Secret,
//! never the file), and the flags of `run` that make no sense in a
//! Deployment, with the probes it serves.

use super::{Node, at, get, items, line_of, str_at, strings};
use crate::check::Report;
use crate::render::kubernetes::STORE_ENV;

/// `cronslot SUBCOMMAND ...` as a container runs it.
pub(super) struct Invocation {
    pub(super) subcommand: String,
    pub(super) manifest: Option<String>,
    /// `--flag value` and `--flag=value`; flags without a value map to "".
    flags: Vec<(String, String)>,
}

impl Invocation {
    pub(super) fn flag(&self, name: &str) -> Option<&str> {
        self.flags
            .iter()
            .find(|(f, _)| f == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The flags of `cronslot run` and `cronslot tick` that take a value.
const VALUE_FLAGS: [&str; 9] = [
    "--store",
    "--grace",
    "--health-listen",
    "--workers",
    "--speed",
    "--until",
    "--log-format",
    "--token-env",
    "--manifest",
];

/// The container's command and args read as a cronslot command line:
/// `command: [cronslot]` (or a path ending in /cronslot) with the
/// subcommand in args, or the image's entrypoint with args alone.
pub(super) fn invocation(container: &Node<'_>) -> Option<Invocation> {
    let command = strings(get(container, "command"));
    let args = strings(get(container, "args"));
    let mut argv: Vec<String> = command.into_iter().chain(args).collect();
    let program = argv.first()?;
    if program == "cronslot" || program.ends_with("/cronslot") {
        argv.remove(0);
    }
    let mut rest = argv.into_iter();
    let subcommand = rest.next()?;
    if subcommand != "run" && subcommand != "tick" {
        return None;
    }
    let mut manifest = None;
    let mut flags = Vec::new();
    while let Some(arg) = rest.next() {
        if arg.starts_with("--") {
            match arg.split_once('=') {
                Some((f, v)) => flags.push((f.to_string(), v.to_string())),
                None if VALUE_FLAGS.contains(&arg.as_str()) => {
                    flags.push((arg, rest.next().unwrap_or_default()));
                }
                None => flags.push((arg, String::new())),
            }
        } else if manifest.is_none() {
            manifest = Some(arg);
        }
    }
    Some(Invocation {
        subcommand,
        manifest,
        flags,
    })
}

/// `$(NAME)` → `NAME`.
fn env_reference(arg: &str) -> Option<&str> {
    arg.strip_prefix("$(")?.strip_suffix(')')
}

/// The store URL must come from a Secret: no `--store` (cronslot reads
/// CRONSLOT_STORE), or `--store "$(VAR)"`, with the variable from
/// `secretKeyRef`.
pub(super) fn store(
    report: &mut Report,
    what: &str,
    line: usize,
    container: &Node<'_>,
    inv: &Invocation,
) {
    let expected = || {
        vec![format!(
            "expected: no --store, and env {STORE_ENV} from valueFrom.secretKeyRef (key url)"
        )]
    };
    let var = match inv.flag("--store") {
        None => STORE_ENV,
        Some(value) => match env_reference(value) {
            Some(var) => {
                report.note(
                    Some(line),
                    format!(
                        "{what}: --store {value:?} puts the store URL on the process's command line, where the jobs can read it; leave --store out: cronslot reads {STORE_ENV}"
                    ),
                );
                var
            }
            None => {
                report.problem(
                    Some(line),
                    format!(
                        "{what}: --store is written in the file ({}): the store URL, with any credentials in it, belongs in a Secret",
                        redact(value)
                    ),
                    expected(),
                );
                return;
            }
        },
    };
    let env = items(get(container, "env"))
        .iter()
        .find(|e| str_at(e, &["name"]).as_deref() == Some(var));
    match env {
        Some(e) if at(e, &["valueFrom", "secretKeyRef"]).is_some() => {
            if str_at(e, &["valueFrom", "secretKeyRef", "name"]).is_none() {
                report.problem(
                    Some(line_of(e)),
                    format!("{what}: env {var}: secretKeyRef names no Secret"),
                    expected(),
                );
            }
        }
        Some(e) if get(e, "value").is_some() => report.problem(
            Some(line_of(e)),
            format!(
                "{what}: env {var} is written in the file (value): the store URL, with any credentials in it, belongs in a Secret (missing store Secret reference)"
            ),
            expected(),
        ),
        Some(e) => report.problem(
            Some(line_of(e)),
            format!("{what}: env {var} does not come from a Secret (missing store Secret reference)"),
            expected(),
        ),
        None => {
            let secrets: Vec<String> = items(get(container, "envFrom"))
                .iter()
                .filter_map(|e| str_at(e, &["secretRef", "name"]))
                .collect();
            if secrets.is_empty() {
                let without = if inv.flag("--store").is_some() {
                    format!("--store reads $({var}), which nothing sets")
                } else {
                    format!(
                        "no --store and no env {STORE_ENV}: `cronslot {}` would use its default store, a file inside the pod",
                        inv.subcommand
                    )
                };
                report.problem(
                    Some(line),
                    format!("{what}: missing store Secret reference: {without}"),
                    expected(),
                );
            } else {
                report.note(
                    Some(line),
                    format!(
                        "{what}: {var} presumably comes from envFrom Secret {} (not checked)",
                        secrets.join(", ")
                    ),
                );
            }
        }
    }
}

/// A URL's credentials hidden: `scheme://***@host...`, or the scheme alone.
fn redact(value: &str) -> String {
    match value.split_once("://") {
        Some((scheme, rest)) if rest.contains('@') => {
            let host = rest.rsplit_once('@').map_or("", |(_, h)| h);
            format!("{scheme}://***@{host}")
        }
        _ => format!("{value:?}"),
    }
}

/// `cronslot run`'s flags that make no sense in a Deployment, and the
/// probes it serves.
pub(super) fn run_flags(
    report: &mut Report,
    what: &str,
    line: usize,
    container: &Node<'_>,
    inv: &Invocation,
) {
    if let Some(speed) = inv.flag("--speed") {
        if speed.parse::<f64>().ok() != Some(1.0) {
            report.problem(
                Some(line),
                format!("{what}: --speed {speed}: the runner's clock would not be real time"),
                Vec::new(),
            );
        }
    }
    if let Some(until) = inv.flag("--until") {
        report.problem(
            Some(line),
            format!("{what}: --until {until}: the runner stops, and the Deployment restarts it"),
            Vec::new(),
        );
    }
    let probes: Vec<&str> = ["livenessProbe", "readinessProbe"]
        .into_iter()
        .filter(|p| at(container, &[p, "httpGet"]).is_some())
        .collect();
    match inv.flag("--health-listen") {
        None if !probes.is_empty() => report.problem(
            Some(line),
            format!(
                "{what}: {} over HTTP, but no --health-listen: nothing answers them, so the pods are restarted",
                probes.join(" and ")
            ),
            vec!["expected: --health-listen 0.0.0.0:8080".into()],
        ),
        Some(_) if !probes.contains(&"livenessProbe") => report.note(
            Some(line),
            format!("{what}: --health-listen, but no livenessProbe: a stuck runner is not restarted"),
        ),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use saphyr::{LoadableYamlNode, MarkedYaml};

    use super::*;

    fn container(yaml: &str) -> Option<Invocation> {
        let docs = MarkedYaml::load_from_str(yaml).expect("yaml");
        invocation(&docs[0])
    }

    #[test]
    fn command_lines() {
        let i = container(
            "command: [cronslot]\nargs: [run, /m/c.toml, --store, \"$(S)\", --health-listen=0.0.0.0:1]\n",
        )
        .expect("a cronslot command");
        assert_eq!(i.subcommand, "run");
        assert_eq!(i.manifest.as_deref(), Some("/m/c.toml"));
        assert_eq!(i.flag("--store"), Some("$(S)"));
        assert_eq!(i.flag("--health-listen"), Some("0.0.0.0:1"));
        let i = container("args: [tick, --store, x, /m.toml]\n").expect("entrypoint");
        assert_eq!(i.subcommand, "tick");
        assert_eq!(i.manifest.as_deref(), Some("/m.toml"));
        assert!(container("command: [sh, -c, x]\n").is_none());
        assert!(container("args: [status]\n").is_none());
    }

    #[test]
    fn redacts_credentials() {
        assert_eq!(
            redact("postgres://u:p@db:5432/x"),
            "postgres://***@db:5432/x"
        );
        assert_eq!(redact("sqlite:a.db"), "\"sqlite:a.db\"");
    }
}
