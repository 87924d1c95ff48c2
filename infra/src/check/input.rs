//! A schedule target's Input, decoded the way the function decodes it
//! (`cronslot_aws::lambda::event::decode`), with Scheduler's placeholders
//! filled in as Scheduler fills them.

use cronslot_aws::lambda::event::{Target, decode};
use serde_json::Value;

/// Who a schedule triggers, read from its input (or a rule's name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    Job(String),
    Tick,
    /// Not a cronslot trigger (no `cronslot` input, no `cronslot-` rule
    /// name), with what was found instead.
    Unknown(String),
}

/// The placeholder Scheduler replaces with the slot's instant.
pub const SCHEDULED_TIME: &str = "<aws.scheduler.scheduled-time>";

/// Who the input triggers, and what is wrong with it (if anything).
/// `scheduler`: the input comes from EventBridge Scheduler (which fills in
/// placeholders); otherwise from a rule (which sends it as written).
pub fn identify(text: &str, scheduler: bool) -> (Identity, Option<String>) {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return (
                Identity::Unknown("an Input that is not JSON".into()),
                Some(format!("the Input is not JSON ({e})")),
            );
        }
    };
    let Some(cronslot) = value.get("cronslot") else {
        return (
            Identity::Unknown("an Input without a \"cronslot\" object".into()),
            None,
        );
    };
    let identity = match (cronslot.get("job"), cronslot.get("tick")) {
        (Some(Value::String(job)), _) => Identity::Job(job.clone()),
        (_, Some(Value::Bool(true))) => Identity::Tick,
        _ => Identity::Unknown("a cronslot Input that names no job and is no tick".into()),
    };
    let time = cronslot.get("scheduled_time").and_then(Value::as_str);
    if scheduler && time.is_some() && time != Some(SCHEDULED_TIME) {
        return (
            identity,
            Some(format!(
                "the Input's scheduled_time is {:?}, not {SCHEDULED_TIME:?}: every delivery would claim the same instant",
                time.unwrap_or_default()
            )),
        );
    }
    if !scheduler && time.is_some() {
        return (
            identity,
            Some(
                "a rule sends its Input as written, so its scheduled_time never changes: leave the Input out (the function reads the rule's Scheduled Event) or use EventBridge Scheduler"
                    .into(),
            ),
        );
    }
    let filled = text
        .replace(SCHEDULED_TIME, "2026-01-01T00:00:00Z")
        .replace("<aws.scheduler.execution-id>", "check")
        .replace("<aws.scheduler.attempt-number>", "1")
        .replace(
            "<aws.scheduler.schedule-arn>",
            "arn:aws:scheduler:us-east-1:123456789012:schedule/default/check",
        );
    let problem = match serde_json::from_str::<Value>(&filled).map(|v| decode(&v)) {
        Ok(Ok(event)) => match (&identity, &event.target) {
            (Identity::Job(a), Target::Job(b)) if a == b => None,
            (Identity::Tick, Target::Tick) => None,
            _ => Some("the function reads another target from the Input".into()),
        },
        Ok(Err(e)) => Some(format!("the function would refuse the Input: {e}")),
        Err(e) => Some(format!("the Input is not JSON once filled in ({e})")),
    };
    (identity, problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_and_bad_inputs() {
        let good = r#"{"cronslot":{"job":"a","scheduled_time":"<aws.scheduler.scheduled-time>"}}"#;
        assert_eq!(identify(good, true), (Identity::Job("a".into()), None));
        let fixed = r#"{"cronslot":{"job":"a","scheduled_time":"2026-01-01T00:00:00Z"}}"#;
        assert!(identify(fixed, true).1.is_some());
        let typo = r#"{"cronslot":{"job":"a","schedule_time":"<aws.scheduler.scheduled-time>"}}"#;
        let (id, problem) = identify(typo, true);
        assert_eq!(id, Identity::Job("a".into()));
        assert!(problem.expect("refused").contains("schedule_time"));
        assert!(matches!(identify("{}", true).0, Identity::Unknown(_)));
    }
}
