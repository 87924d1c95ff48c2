//! Dynamic jobs (`dynamic = true`): templates whose schedules are data, and
//! the spec each schedule runs with (`JobTemplate::for_schedule`).

use cronslot_core::manifest::{Action, CatchUp, parse_manifest};
use cronslot_core::schedules::{ScheduleKey, ScheduleSpec};
use jiff::Timestamp;

const MANIFEST: &str = r#"
[defaults]
timezone = "Europe/Berlin"
catch_up = "all"

[[job]]
name = "nightly"
schedule = "0 2 * * *"
command = ["true"]

[[job]]
name = "invoice"
dynamic = true
command = ["bin/invoice"]
timeout = "5m"
lease = "10m"
start_at = "2027-01-01T00:00:00Z"
"#;

fn at(s: &str) -> Timestamp {
    s.parse().expect("instant")
}

fn errors(text: &str) -> String {
    match parse_manifest(text, "m.toml") {
        Ok(m) => panic!("accepted: {:?}", m.templates),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_dynamic_job_is_a_template_beside_the_jobs() {
    let m = parse_manifest(MANIFEST, "m.toml").expect("valid");
    assert_eq!(m.jobs.len(), 1, "the template is not a job with a schedule");
    assert!(m.job("invoice").is_none());
    let t = m.template("invoice").expect("the template");
    assert_eq!(t.catch_up, CatchUp::All, "policies come from [defaults]");
    assert_eq!(t.lease.as_secs(), 600);
    assert!(matches!(t.action, Action::Command { .. }));
    assert_eq!(t.start_at, Some(at("2027-01-01T00:00:00Z")));
    // A dynamic job is a valid job of the runner's: no warning. Where it
    // cannot run (Lambda, Workers), the precompiled form and `render`
    // refuse it.
    assert!(m.warnings.is_empty(), "{:?}", m.warnings);
}

#[test]
fn a_schedule_runs_with_the_templates_policies_and_its_own_slots() {
    let m = parse_manifest(MANIFEST, "m.toml").expect("valid");
    let t = m.template("invoice").expect("the template");
    let key = ScheduleKey::new("tenant-7").expect("key");
    let spec = ScheduleSpec::from_json(
        r#"{"cron":"0 9 5 * *","timezone":"America/New_York","end":"2028-01-01T00:00:00Z"}"#,
    )
    .expect("spec");
    let s = t.for_schedule(&key, &spec).expect("runs");
    assert_eq!(s.record_name(), "invoice/tenant-7");
    assert_eq!(s.name.as_str(), "invoice");
    assert_eq!(
        (s.timezone.as_str(), s.schedule_text.as_str()),
        ("America/New_York", "0 9 5 * *")
    );
    assert_eq!((s.lease, s.catch_up), (t.lease, t.catch_up));
    // The window is the narrower of the template's and the schedule's.
    assert_eq!(s.start_at, Some(at("2027-01-01T00:00:00Z")));
    assert_eq!(s.end_at, Some(at("2028-01-01T00:00:00Z")));
    // 09:00 in New York on the 5th: 14:00 UTC in winter.
    assert_eq!(
        s.schedule.next_after(at("2027-01-01T00:00:00Z")),
        Some(at("2027-01-05T14:00:00Z"))
    );
    assert!(!s.paused);
    let paused = ScheduleSpec::from_json(r#"{"cron":"0 9 5 * *","paused":true}"#).expect("spec");
    assert!(t.for_schedule(&key, &paused).expect("runs").paused);
}

#[test]
fn a_one_off_has_exactly_one_slot() {
    let m = parse_manifest(MANIFEST, "m.toml").expect("valid");
    let t = m.template("invoice").expect("the template");
    let key = ScheduleKey::new("reminder.1").expect("key");
    let spec =
        ScheduleSpec::from_json(r#"{"at":"2027-03-28T01:30:00Z","timezone":"Europe/Berlin"}"#)
            .expect("spec");
    let s = t.for_schedule(&key, &spec).expect("runs");
    let slots: Vec<Timestamp> = s
        .schedule
        .iter_after(at("2026-01-01T00:00:00Z"))
        .map(|o| o.instant)
        .filter(|t| s.in_window(*t))
        .take_while(|t| *t < at("2031-01-01T00:00:00Z"))
        .collect();
    assert_eq!(slots, [at("2027-03-28T01:30:00Z")]);
    // Before the template's window opens, a one-off has no slot.
    let early = ScheduleSpec::from_json(r#"{"at":"2026-06-01T09:00:00Z"}"#).expect("spec");
    let s = t.for_schedule(&key, &early).expect("plans");
    assert!(!s.in_window(at("2026-06-01T09:00:00Z")));
}

#[test]
fn a_dynamic_job_has_no_schedule_and_dynamic_belongs_to_a_job() {
    let e = errors(
        "[[job]]\nname = \"d\"\ndynamic = true\nschedule = \"* * * * *\"\ncommand = [\"true\"]\n",
    );
    assert!(e.contains("a dynamic job has no schedule"), "{e}");
    assert!(e.contains("m.toml:4:"), "points at the schedule: {e}");
    let e = errors(
        "[defaults]\ndynamic = true\n[[job]]\nname = \"d\"\nschedule = \"* * * * *\"\ncommand = [\"true\"]\n",
    );
    assert!(
        e.contains("`dynamic` belongs in a [[job]], not in [defaults]"),
        "{e}"
    );
    let e = errors("[[job]]\nname = \"d\"\ndynamic = false\ncommand = [\"true\"]\n");
    assert!(
        e.contains("has no schedule"),
        "dynamic = false is a job like any: {e}"
    );
    let e = errors(
        "[[job]]\nname = \"d\"\ndynamic = true\ncommand = [\"true\"]\n[[job]]\nname = \"d\"\nschedule = \"* * * * *\"\ncommand = [\"true\"]\n",
    );
    assert!(e.contains("duplicate job name \"d\""), "{e}");
    let e = errors("[[job]]\nname = \"d\"\ndynamic = \"yes\"\ncommand = [\"true\"]\n");
    assert!(e.contains("dynamic"), "{e}");
}
