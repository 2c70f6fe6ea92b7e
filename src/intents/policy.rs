//! The PolicyEngine: whether a planned tool call may run. Rules come from `policy.rules` of
//! `intents.yaml` and are structured conditions only (intent, the member's role, bounds on a
//! parameter, the time of day in the profile's timezone); config text is never evaluated.
//!
//! The first rule whose every condition holds decides: `allow`, `deny` (with its message) or
//! `escalate` (a parent must approve). No rule matching allows. Parameters come already read
//! into their declared types (`params.rs`), the values the tool gets: a number bound compares
//! numbers, a text bound texts, and nothing is read again here. A bound on a parameter that
//! is missing or not of the bound's kind holds for `deny` and `escalate` rules and not for
//! `allow` rules, so a value the rule cannot compare never makes a request more permitted.

use std::collections::BTreeMap;

use chrono::{NaiveTime, Timelike};
use serde::Deserialize;
use serde_json::Value;

use crate::config::FamilyRole;

/// What a rule decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleDecision {
    Allow,
    Deny,
    Escalate,
}

/// How a parameter is compared with a rule's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum Comparison {
    #[serde(rename = ">")]
    Greater,
    #[serde(rename = ">=")]
    GreaterOrEqual,
    #[serde(rename = "<")]
    Less,
    #[serde(rename = "<=")]
    LessOrEqual,
    #[serde(rename = "==")]
    Equal,
    #[serde(rename = "!=")]
    NotEqual,
}

/// A number, or a text compared exactly (`==`, `!=` only).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum BoundValue {
    Number(f64),
    Text(String),
}

/// `{ name: amount, op: ">", value: 20 }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamBound {
    pub name: String,
    pub op: Comparison,
    pub value: BoundValue,
}

/// From `from` until `to` (`HH:MM`) in the profile's timezone; wraps past midnight when
/// `to` is earlier than `from`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeWindow {
    pub from: String,
    pub to: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    #[serde(default)]
    pub intent: Option<String>,
    #[serde(default)]
    pub role: Option<FamilyRole>,
    #[serde(default)]
    pub params: Vec<ParamBound>,
    #[serde(default)]
    pub time: Option<TimeWindow>,
    pub decision: RuleDecision,
    /// What the member is told (`deny`) or what the parent is asked about (`escalate`).
    #[serde(default)]
    pub message: Option<String>,
}

impl PolicyRule {
    /// What is wrong with this rule, as (key below the rule, message).
    pub(crate) fn problems(&self) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        for (index, bound) in self.params.iter().enumerate() {
            if let BoundValue::Text(text) = &bound.value
                && !matches!(bound.op, Comparison::Equal | Comparison::NotEqual)
            {
                problems.push((
                    format!("params[{index}].value"),
                    format!("{text:?} is not a number; only == and != compare texts"),
                ));
            }
        }
        if let Some(window) = &self.time {
            for (key, value) in [("from", &window.from), ("to", &window.to)] {
                if parse_clock(value).is_none() {
                    problems.push((
                        format!("time.{key}"),
                        format!("{value:?} is not a time of day; write HH:MM, e.g. \"21:30\""),
                    ));
                }
            }
        }
        if self.decision == RuleDecision::Deny && self.message.is_none() {
            problems.push((
                "message".to_string(),
                "a deny rule needs the message the member is told".to_string(),
            ));
        }
        problems
    }

    fn matches(&self, request: &PolicyRequest<'_>) -> bool {
        let restrictive = self.decision != RuleDecision::Allow;
        self.intent
            .as_deref()
            .is_none_or(|intent| intent == request.intent_id)
            && self.role.is_none_or(|role| role == request.role)
            && self
                .params
                .iter()
                .all(|bound| bound.holds(request.params.get(&bound.name), restrictive))
            && self
                .time
                .as_ref()
                .is_none_or(|window| window.contains(request.local_time).unwrap_or(restrictive))
    }
}

impl ParamBound {
    fn holds(&self, value: Option<&Value>, restrictive: bool) -> bool {
        let Some(value) = value else {
            return restrictive;
        };
        match &self.value {
            BoundValue::Text(text) => match (self.op, value.as_str()) {
                (Comparison::Equal, Some(value)) => value == text,
                (Comparison::NotEqual, Some(value)) => value != text,
                _ => restrictive,
            },
            BoundValue::Number(bound) => {
                let Some(number) = value.as_f64() else {
                    return restrictive;
                };
                match self.op {
                    Comparison::Greater => number > *bound,
                    Comparison::GreaterOrEqual => number >= *bound,
                    Comparison::Less => number < *bound,
                    Comparison::LessOrEqual => number <= *bound,
                    Comparison::Equal => number == *bound,
                    Comparison::NotEqual => number != *bound,
                }
            }
        }
    }
}

fn parse_clock(text: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(text.trim(), "%H:%M").ok()
}

impl TimeWindow {
    fn contains(&self, time: NaiveTime) -> Option<bool> {
        let (from, to) = (parse_clock(&self.from)?, parse_clock(&self.to)?);
        let minute = |t: NaiveTime| t.hour() * 60 + t.minute();
        let (from, to, now) = (minute(from), minute(to), minute(time));
        Some(if from <= to {
            from <= now && now < to
        } else {
            now >= from || now < to
        })
    }
}

/// What a policy is asked about: the planned call of one intent for one member.
#[derive(Debug, Clone)]
pub struct PolicyRequest<'a> {
    pub intent_id: &'a str,
    pub role: FamilyRole,
    /// Each parameter read into its declared type, as the tool gets it.
    pub params: &'a BTreeMap<String, Value>,
    /// Now, in the profile's timezone.
    pub local_time: NaiveTime,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    Allow,
    Deny { message: String },
    Escalate { message: String },
}

impl PolicyDecision {
    pub fn label(&self) -> &'static str {
        match self {
            PolicyDecision::Allow => "allow",
            PolicyDecision::Deny { .. } => "deny",
            PolicyDecision::Escalate { .. } => "escalate",
        }
    }
}

pub trait PolicyEngine: Send + Sync {
    fn validate(&self, request: &PolicyRequest<'_>) -> PolicyDecision;
}

/// Allows everything (seed 003's M1 policy): a registry without rules.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullPolicyEngine;

impl PolicyEngine for NullPolicyEngine {
    fn validate(&self, _request: &PolicyRequest<'_>) -> PolicyDecision {
        PolicyDecision::Allow
    }
}

/// `policy.rules`, first match decides.
#[derive(Debug, Clone)]
pub struct RulePolicyEngine {
    rules: Vec<PolicyRule>,
}

impl RulePolicyEngine {
    pub fn new(rules: Vec<PolicyRule>) -> Self {
        RulePolicyEngine { rules }
    }
}

impl PolicyEngine for RulePolicyEngine {
    fn validate(&self, request: &PolicyRequest<'_>) -> PolicyDecision {
        let Some(rule) = self.rules.iter().find(|rule| rule.matches(request)) else {
            return PolicyDecision::Allow;
        };
        let message = || {
            rule.message
                .clone()
                .unwrap_or_else(|| "this request needs a parent's approval".to_string())
        };
        match rule.decision {
            RuleDecision::Allow => PolicyDecision::Allow,
            RuleDecision::Deny => PolicyDecision::Deny { message: message() },
            RuleDecision::Escalate => PolicyDecision::Escalate { message: message() },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(yaml: &str) -> RulePolicyEngine {
        RulePolicyEngine::new(serde_yaml::from_str(yaml).expect("rules"))
    }

    fn ask(engine: &RulePolicyEngine, role: FamilyRole, amount: Value, at: &str) -> PolicyDecision {
        let params = BTreeMap::from([("amount".to_string(), amount)]);
        engine.validate(&PolicyRequest {
            intent_id: "allowance",
            role,
            params: &params,
            local_time: parse_clock(at).unwrap(),
        })
    }

    #[test]
    fn the_first_matching_rule_decides_and_none_allows() {
        let engine = rules(
            r#"
- { intent: allowance, role: child, time: { from: "22:00", to: "07:00" }, decision: deny, message: "too late" }
- { intent: allowance, role: child, params: [{ name: amount, op: ">", value: 20 }], decision: escalate, message: "over 20" }
- { intent: allowance, params: [{ name: amount, op: ">", value: 500 }], decision: deny, message: "too much" }
"#,
        );
        use FamilyRole::*;
        assert_eq!(
            ask(&engine, Child, json!(5), "12:00"),
            PolicyDecision::Allow
        );
        assert_eq!(
            ask(&engine, Child, json!(25), "12:00"),
            PolicyDecision::Escalate {
                message: "over 20".into()
            }
        );
        assert_eq!(
            ask(&engine, Child, json!(5), "23:30"),
            PolicyDecision::Deny {
                message: "too late".into()
            }
        );
        assert_eq!(
            ask(&engine, Parent, json!(25), "23:30"),
            PolicyDecision::Allow
        );
        assert_eq!(
            ask(&engine, Parent, json!(600), "12:00"),
            PolicyDecision::Deny {
                message: "too much".into()
            }
        );
        // A value the bound cannot compare never makes a request more permitted.
        assert!(matches!(
            ask(&engine, Child, json!("lots"), "12:00"),
            PolicyDecision::Escalate { .. }
        ));
        // The values compared are the ones the tool gets: 1,000 was read as 1000.
        assert!(matches!(
            ask(&engine, Child, json!(1000), "12:00"),
            PolicyDecision::Escalate { .. }
        ));
        assert_eq!(
            ask(&engine, Child, json!(20), "12:00"),
            PolicyDecision::Allow
        );
        assert_eq!(
            ask(&engine, Child, json!(19.99), "12:00"),
            PolicyDecision::Allow
        );
        assert_eq!(
            NullPolicyEngine.validate(&PolicyRequest {
                intent_id: "x",
                role: Child,
                params: &BTreeMap::new(),
                local_time: parse_clock("23:00").unwrap(),
            }),
            PolicyDecision::Allow
        );
    }

    #[test]
    fn bad_rules_are_named() {
        let rule: PolicyRule = serde_yaml::from_str(
            r#"{ params: [{ name: a, op: ">", value: "x" }], time: { from: "25:00", to: "7" }, decision: deny }"#,
        )
        .unwrap();
        let keys: Vec<String> = rule.problems().into_iter().map(|(key, _)| key).collect();
        assert_eq!(keys, ["params[0].value", "time.from", "time.to", "message"]);
    }
}
