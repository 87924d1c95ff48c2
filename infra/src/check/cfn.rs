//! Reading the schedules of a SAM or CloudFormation template (YAML with
//! intrinsic-function tags, or JSON): EventBridge Scheduler schedules,
//! EventBridge rules, and SAM functions' `ScheduleV2` / `Schedule` events.

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

use super::input::{Identity, identify};

/// A node of the template.
type Node<'a> = MarkedYaml<'a>;

/// Which EventBridge feature fires the schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Scheduler,
    Rule,
}

/// One schedule and one of its targets.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The line of the schedule's expression (or of the resource).
    pub line: usize,
    /// `Resource` or `Function.Events.Name`.
    pub name: String,
    pub via: Via,
    /// The expression, or why it cannot be read.
    pub expression: Result<String, String>,
    /// `ScheduleExpressionTimezone`, when given.
    pub timezone: Option<(String, usize)>,
    /// A flexible time window's mode when it is not OFF, with its minutes.
    pub flexible: Option<String>,
    pub disabled: bool,
    pub identity: Identity,
    /// Something wrong with the input (it does not decode as the function
    /// expects).
    pub input_problem: Option<String>,
    /// `RetryPolicy.MaximumEventAgeInSeconds`, when given, with its line.
    pub max_event_age: Option<(u64, usize)>,
    pub dead_letter: bool,
}

/// A template that cannot be read.
#[derive(Debug)]
pub struct ReadError {
    pub line: Option<usize>,
    pub message: String,
}

fn err(line: Option<usize>, message: impl Into<String>) -> ReadError {
    ReadError {
        line,
        message: message.into(),
    }
}

fn line_of(node: &Node<'_>) -> usize {
    node.span.start.line().max(1)
}

/// The node without a tag (for `!!map` and the like; intrinsic-function
/// tags are handled where values are resolved).
fn get<'n, 'a>(node: &'n Node<'a>, key: &str) -> Option<&'n Node<'a>> {
    match &node.data {
        YamlData::Mapping(map) => map
            .iter()
            .find(|(k, _)| scalar_string(k).as_deref() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

fn entries<'n, 'a>(node: &'n Node<'a>) -> Vec<(String, &'n Node<'a>)> {
    match &node.data {
        YamlData::Mapping(map) => map
            .iter()
            .filter_map(|(k, v)| scalar_string(k).map(|k| (k, v)))
            .collect(),
        _ => Vec::new(),
    }
}

fn scalar_string(node: &Node<'_>) -> Option<String> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Some(i.to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Some(b.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
        _ => None,
    }
}

fn tag_name(tag: &saphyr::Tag) -> String {
    format!("{}{}", tag.handle, tag.suffix)
}

/// The template's parameters' defaults, for `!Ref Param`.
struct Params<'n, 'a> {
    root: &'n Node<'a>,
}

impl Params<'_, '_> {
    fn default_of(&self, name: &str) -> Option<String> {
        let params = get(self.root, "Parameters")?;
        let param = get(params, name)?;
        get(param, "Default").and_then(scalar_string)
    }

    /// A string value, through `!Ref` to a parameter's default and `!Sub`
    /// without variables; otherwise why it cannot be read.
    fn string(&self, node: &Node<'_>) -> Result<String, String> {
        if let Some(s) = scalar_string(node) {
            return Ok(s);
        }
        let (function, arg) = match &node.data {
            YamlData::Tagged(tag, inner) => {
                let name = tag_name(tag);
                let function = match name.as_str() {
                    "!Ref" => "Ref".to_string(),
                    "!Sub" => "Fn::Sub".to_string(),
                    other => other.trim_start_matches('!').to_string(),
                };
                (function, inner.as_ref())
            }
            YamlData::Mapping(map) if map.len() == 1 => match map.iter().next() {
                Some((k, v)) => (scalar_string(k).unwrap_or_default(), v),
                None => return Err("an empty mapping".into()),
            },
            _ => return Err("not a string".into()),
        };
        match function.as_str() {
            "Ref" => {
                let name = scalar_string(arg).unwrap_or_default();
                self.default_of(&name).ok_or_else(|| {
                    format!("!Ref {name}, a parameter without a default (check evaluates no deployment's parameters)")
                })
            }
            // Variables stay as written: inside an Input's JSON strings
            // they are harmless, in an expression they fail to parse.
            "Fn::Sub" => match scalar_string(arg) {
                Some(s) => Ok(s),
                None => Err("!Sub with a variable map (check cannot evaluate it)".into()),
            },
            other => Err(format!(
                "{other}, an intrinsic function check cannot evaluate"
            )),
        }
    }
}

fn integer(node: &Node<'_>) -> Option<u64> {
    match &node.data {
        YamlData::Value(Scalar::Integer(i)) => u64::try_from(*i).ok(),
        YamlData::Value(Scalar::String(s)) => s.trim().parse().ok(),
        YamlData::Value(Scalar::FloatingPoint(f)) => {
            let f = f.into_inner();
            (f >= 0.0 && f.fract() == 0.0 && f < 1e15).then_some(f as u64)
        }
        _ => None,
    }
}

/// Reads every schedule of the template.
pub fn read(text: &str) -> Result<Vec<Entry>, ReadError> {
    let docs = MarkedYaml::load_from_str(text).map_err(|e| {
        let m = e.marker();
        err(
            Some(m.line().max(1)),
            format!("column {}: {}", m.col() + 1, e.info()),
        )
    })?;
    let root = match docs.as_slice() {
        [root] => root,
        [] => return Err(err(None, "the file is empty")),
        [_, second, ..] => {
            return Err(err(
                Some(line_of(second)),
                "holds several YAML documents; a template is one",
            ));
        }
    };
    let Some(resources) = get(root, "Resources") else {
        return Err(err(
            Some(line_of(root)),
            "not a CloudFormation or SAM template: it has no Resources",
        ));
    };
    if !matches!(resources.data, YamlData::Mapping(_)) {
        return Err(err(
            Some(line_of(resources)),
            "Resources is not a mapping of logical ids to resources",
        ));
    }
    let params = Params { root };
    let mut out = Vec::new();
    for (id, resource) in entries(resources) {
        let Some(kind) = get(resource, "Type").and_then(scalar_string) else {
            continue;
        };
        let properties = get(resource, "Properties");
        match kind.as_str() {
            "AWS::Scheduler::Schedule" => {
                if let Some(p) = properties {
                    out.push(scheduler(&params, &id, resource, p));
                }
            }
            "AWS::Events::Rule" => {
                if let Some(p) = properties {
                    out.extend(rule(&params, &id, resource, p));
                }
            }
            "AWS::Serverless::Function" => {
                let events = properties.and_then(|p| get(p, "Events"));
                for (event_name, event) in events.map(entries).unwrap_or_default() {
                    let name = format!("{id}.Events.{event_name}");
                    let event_kind = get(event, "Type").and_then(scalar_string);
                    let Some(p) = get(event, "Properties") else {
                        continue;
                    };
                    match event_kind.as_deref() {
                        Some("ScheduleV2") => out.push(scheduler(&params, &name, event, p)),
                        Some("Schedule") => out.push(sam_rule(&params, &name, event, p)),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

fn expression_of(params: &Params<'_, '_>, node: Option<&Node<'_>>) -> Result<String, String> {
    match node {
        None => Err("no schedule expression".into()),
        Some(n) => params.string(n),
    }
}

fn retry_age(policy: Option<&Node<'_>>) -> Option<(u64, usize)> {
    let age = get(policy?, "MaximumEventAgeInSeconds")?;
    Some((integer(age)?, line_of(age)))
}

fn state_disabled(params: &Params<'_, '_>, p: &Node<'_>) -> bool {
    let state = get(p, "State").and_then(|s| params.string(s).ok());
    let enabled = get(p, "Enabled").and_then(|e| match &e.data {
        YamlData::Value(Scalar::Boolean(b)) => Some(*b),
        _ => None,
    });
    state.is_some_and(|s| s.eq_ignore_ascii_case("DISABLED")) || enabled == Some(false)
}

/// An EventBridge Scheduler schedule (or a SAM `ScheduleV2` event).
fn scheduler(params: &Params<'_, '_>, name: &str, resource: &Node<'_>, p: &Node<'_>) -> Entry {
    let expr_node = get(p, "ScheduleExpression");
    let line = expr_node.map_or_else(|| line_of(resource), line_of);
    let timezone = get(p, "ScheduleExpressionTimezone")
        .and_then(|tz| params.string(tz).ok().map(|s| (s, line_of(tz))));
    let flexible = get(p, "FlexibleTimeWindow").and_then(|w| {
        let mode = get(w, "Mode")?;
        // `OFF` unquoted is the boolean false to a YAML 1.1 reader.
        let mode_text = match &mode.data {
            YamlData::Value(Scalar::Boolean(false)) => "OFF".to_string(),
            _ => params.string(mode).ok()?,
        };
        if mode_text.eq_ignore_ascii_case("OFF") {
            return None;
        }
        let minutes = get(w, "MaximumWindowInMinutes").and_then(integer);
        Some(match minutes {
            Some(m) => format!("{mode_text} (up to {m} minutes late)"),
            None => mode_text,
        })
    });
    // SAM's ScheduleV2 keeps the target's settings on the event itself.
    let target = get(p, "Target").unwrap_or(p);
    let input = get(target, "Input").map(|i| params.string(i));
    let (identity, input_problem) = match input {
        None => (
            Identity::Unknown("no Input (the function would receive {})".into()),
            None,
        ),
        Some(Err(why)) => (
            Identity::Unknown(format!("an Input check cannot read: {why}")),
            None,
        ),
        Some(Ok(text)) => identify(&text, true),
    };
    Entry {
        line,
        name: name.to_string(),
        via: Via::Scheduler,
        expression: expression_of(params, expr_node),
        timezone,
        flexible,
        disabled: state_disabled(params, p),
        identity,
        input_problem,
        max_event_age: retry_age(get(target, "RetryPolicy")),
        dead_letter: get(target, "DeadLetterConfig").is_some(),
    }
}

/// The identity of a rule's target: its Input, else the rule's name.
fn rule_identity(
    rule_name: Option<&str>,
    input: Option<Result<String, String>>,
) -> (Identity, Option<String>) {
    match input {
        Some(Ok(text)) => identify(&text, false),
        Some(Err(why)) => (
            Identity::Unknown(format!("an Input check cannot read: {why}")),
            None,
        ),
        None => match rule_name.and_then(|n| n.strip_prefix(cronslot_aws::lambda::event::RULE_PREFIX))
        {
            Some("tick") => (Identity::Tick, None),
            Some(job) => (Identity::Job(job.to_string()), None),
            None => (
                Identity::Unknown(
                    "a rule whose name does not start with cronslot- and whose target has no cronslot Input"
                        .into(),
                ),
                None,
            ),
        },
    }
}

/// An EventBridge rule: one entry per target.
fn rule(params: &Params<'_, '_>, name: &str, resource: &Node<'_>, p: &Node<'_>) -> Vec<Entry> {
    let expr_node = get(p, "ScheduleExpression");
    if expr_node.is_none() {
        // An event-pattern rule, not a schedule.
        return Vec::new();
    }
    let line = expr_node.map_or_else(|| line_of(resource), line_of);
    let rule_name = get(p, "Name").and_then(|n| params.string(n).ok());
    let targets: Vec<&Node<'_>> = match get(p, "Targets").map(|t| &t.data) {
        Some(YamlData::Sequence(items)) => items.iter().collect(),
        _ => Vec::new(),
    };
    let entry = |identity, input_problem, target: Option<&Node<'_>>| Entry {
        line,
        name: name.to_string(),
        via: Via::Rule,
        expression: expression_of(params, expr_node),
        timezone: None,
        flexible: None,
        disabled: state_disabled(params, p),
        identity,
        input_problem,
        max_event_age: retry_age(target.and_then(|t| get(t, "RetryPolicy"))),
        dead_letter: target.is_some_and(|t| get(t, "DeadLetterConfig").is_some()),
    };
    if targets.is_empty() {
        let (identity, problem) = rule_identity(rule_name.as_deref(), None);
        return vec![entry(identity, problem, None)];
    }
    targets
        .into_iter()
        .map(|t| {
            let input = get(t, "Input").map(|i| params.string(i));
            let (identity, problem) = rule_identity(rule_name.as_deref(), input);
            entry(identity, problem, Some(t))
        })
        .collect()
}

/// A SAM `Schedule` event: an EventBridge rule on the function.
fn sam_rule(params: &Params<'_, '_>, name: &str, event: &Node<'_>, p: &Node<'_>) -> Entry {
    let expr_node = get(p, "Schedule");
    let rule_name = get(p, "Name").and_then(|n| params.string(n).ok());
    let input = get(p, "Input").map(|i| params.string(i));
    let (identity, input_problem) = rule_identity(rule_name.as_deref(), input);
    Entry {
        line: expr_node.map_or_else(|| line_of(event), line_of),
        name: name.to_string(),
        via: Via::Rule,
        expression: expression_of(params, expr_node),
        timezone: None,
        flexible: None,
        disabled: state_disabled(params, p),
        identity,
        input_problem,
        max_event_age: retry_age(get(p, "RetryPolicy")),
        dead_letter: get(p, "DeadLetterConfig").is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tagged_yaml() {
        let text = r#"
Parameters:
  Expr:
    Type: String
    Default: cron(0 9 ? * 2-6 *)
Resources:
  A:
    Type: AWS::Scheduler::Schedule
    Properties:
      ScheduleExpression: !Ref Expr
      ScheduleExpressionTimezone: Europe/Berlin
      FlexibleTimeWindow:
        Mode: OFF
      Target:
        Arn: !GetAtt Function.Arn
        RoleArn: !GetAtt [Role, Arn]
        Input: !Sub '{"cronslot":{"job":"a","scheduled_time":"<aws.scheduler.scheduled-time>"}}'
        RetryPolicy:
          MaximumEventAgeInSeconds: 600
  F:
    Type: AWS::Serverless::Function
    Properties:
      Events:
        Nightly:
          Type: Schedule
          Properties:
            Schedule: cron(0 2 * * ? *)
            Name: cronslot-b
"#;
        let entries = read(text).expect("readable");
        assert_eq!(entries.len(), 2);
        let a = &entries[0];
        assert_eq!(a.line, 10);
        assert_eq!(a.expression.as_deref(), Ok("cron(0 9 ? * 2-6 *)"));
        assert_eq!(
            a.timezone.as_ref().map(|t| t.0.as_str()),
            Some("Europe/Berlin")
        );
        assert_eq!(a.flexible, None);
        assert_eq!(a.identity, Identity::Job("a".into()));
        assert_eq!(a.input_problem, None);
        assert_eq!(a.max_event_age, Some((600, 19)));
        let b = &entries[1];
        assert_eq!(b.via, Via::Rule);
        assert_eq!(b.identity, Identity::Job("b".into()));
    }

    #[test]
    fn reads_json() {
        let text = r#"{"Resources": {"T": {"Type": "AWS::Scheduler::Schedule", "Properties": {
            "ScheduleExpression": "rate(1 minute)",
            "FlexibleTimeWindow": {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": 5},
            "Target": {"Arn": {"Fn::GetAtt": ["F", "Arn"]}, "RoleArn": "r",
                       "Input": "{\"cronslot\":{\"tick\":true,\"scheduled_time\":\"<aws.scheduler.scheduled-time>\"}}"}}}}}"#;
        let entries = read(text).expect("readable");
        assert_eq!(entries[0].identity, Identity::Tick);
        assert_eq!(
            entries[0].flexible.as_deref(),
            Some("FLEXIBLE (up to 5 minutes late)")
        );
        assert_eq!(entries[0].line, 2);
    }

    #[test]
    fn syntax_errors_have_a_line() {
        let e = read("Resources:\n  A: [\n").expect_err("broken");
        assert!(e.line.is_some());
        let e = read("AWSTemplateFormatVersion: x\n").expect_err("no resources");
        assert!(e.message.contains("Resources"));
    }
}
