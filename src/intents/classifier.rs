//! The IntentClassifier: one LLM call that names the member's intent among the eligible
//! ones, with the parameters found in the conversation, as JSON
//! `{intent_id, extracted_params, missing_params, confidence}` (a response format, so the
//! OpenAI wire asks for a strict schema and the Anthropic wire forces a tool). The history
//! is part of the request, so "O-12345" after "What's your order ID?" is understood.
//!
//! Output that is not that JSON, or names an intent that was not offered, is asked for once
//! more; a second failure is `ClassifyError::Invalid`. A confidence outside 0 to 1 counts
//! as 0 (not sure). Missing parameters are computed from
//! the intent's `required_params`, never taken on the model's word.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::llm::{AskError, ModelAccess};
use super::params::ParamType;
use super::registry::Intent;
use crate::llm::{ChatMessage, ResponseFormat, Role};
use crate::ports::HistoryEntry;

/// What the classifier found.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    pub intent_id: Option<String>,
    pub extracted_params: BTreeMap<String, String>,
    pub missing_params: Vec<String>,
    pub confidence: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ClassifyError {
    #[error(transparent)]
    Ask(#[from] AskError),
    #[error("the model's classification is unusable twice in a row: {0}")]
    Invalid(String),
}

/// A plan waiting for the member's answer, which the classifier is told about.
#[derive(Debug, Clone)]
pub struct Awaited<'a> {
    pub intent_id: &'a str,
    pub param: &'a str,
}

pub struct IntentClassifier<'a> {
    pub model: &'a ModelAccess,
}

impl IntentClassifier<'_> {
    pub async fn classify(
        &self,
        intents: &[&Intent],
        history: &[HistoryEntry],
        text: &str,
        awaited: Option<Awaited<'_>>,
    ) -> Result<Classification, ClassifyError> {
        let mut messages = vec![ChatMessage::system(instructions(intents, awaited))];
        messages.extend(
            history
                .iter()
                .filter(|entry| {
                    matches!(entry.role, Role::User | Role::Assistant)
                        && entry.tool_calls.is_empty()
                        && !entry.content.trim().is_empty()
                })
                .map(|entry| ChatMessage {
                    role: entry.role,
                    content: entry.content.clone(),
                    tool_calls: Vec::new(),
                    tool_call_id: None,
                    images: Vec::new(),
                }),
        );
        messages.push(ChatMessage::user(text));
        let format = ResponseFormat {
            name: "intent_classification".to_string(),
            schema: schema(intents),
        };
        let mut why = String::new();
        for attempt in 1..=2 {
            let answer = self
                .model
                .ask(messages.clone(), Some(format.clone()))
                .await?;
            match parse(&answer, intents) {
                Ok(classification) => return Ok(classification),
                Err(problem) => {
                    tracing::warn!(attempt, %problem, "unusable intent classification");
                    why = problem;
                }
            }
        }
        Err(ClassifyError::Invalid(why))
    }
}

fn instructions(intents: &[&Intent], awaited: Option<Awaited<'_>>) -> String {
    let mut text = String::from(
        "You classify what a family member asks a family assistant. Pick the one intent below \
         that matches their latest message (read the conversation for context), or null when \
         none does. Give the values of that intent's parameters found in the conversation, \
         exactly as written, and its parameters still without a value. Answer only with JSON: \
         {\"intent_id\": ..., \"extracted_params\": {...}, \"missing_params\": [...], \
         \"confidence\": 0 to 1}.\n\nIntents:\n",
    );
    for intent in intents {
        let params: Vec<String> = intent
            .required_params
            .iter()
            .map(|param| match param.kind {
                ParamType::String => param.name.clone(),
                kind => format!("{} ({})", param.name, kind.described()),
            })
            .collect();
        text.push_str(&format!(
            "- {}: {} (parameters: {})\n",
            intent.id,
            intent.description,
            if params.is_empty() {
                "none".to_string()
            } else {
                params.join(", ")
            }
        ));
    }
    if intents.is_empty() {
        text.push_str("(none: answer with intent_id null)\n");
    }
    if let Some(awaited) = awaited {
        text.push_str(&format!(
            "\nThe assistant has just asked the member for {} (intent {}); their message may \
             be that answer.\n",
            awaited.param, awaited.intent_id
        ));
    }
    text
}

/// The answer's JSON schema, strict: every parameter named, each a string or null.
fn schema(intents: &[&Intent]) -> Value {
    let mut ids: Vec<Value> = intents.iter().map(|intent| json!(intent.id)).collect();
    ids.push(Value::Null);
    let mut params: Vec<&str> = intents
        .iter()
        .flat_map(|intent| intent.param_names())
        .collect();
    params.sort_unstable();
    params.dedup();
    let properties: serde_json::Map<String, Value> = params
        .iter()
        .map(|name| (name.to_string(), json!({"type": ["string", "null"]})))
        .collect();
    json!({
        "type": "object",
        "properties": {
            "intent_id": {"type": ["string", "null"], "enum": ids},
            "extracted_params": {
                "type": "object",
                "properties": properties,
                "required": params,
                "additionalProperties": false
            },
            "missing_params": {"type": "array", "items": {"type": "string"}},
            "confidence": {"type": "number"}
        },
        "required": ["intent_id", "extracted_params", "missing_params", "confidence"],
        "additionalProperties": false
    })
}

/// The classification in `answer`, or why it cannot be used.
pub(crate) fn parse(answer: &str, intents: &[&Intent]) -> Result<Classification, String> {
    let trimmed = answer.trim();
    let body = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .unwrap_or(trimmed);
    let value: Value = serde_json::from_str(body.trim())
        .map_err(|error| format!("not json ({error}): {:.80}", answer))?;
    let Some(object) = value.as_object() else {
        return Err("not a json object".to_string());
    };
    let confidence = match object.get("confidence") {
        Some(Value::Number(number)) => number.as_f64().unwrap_or(0.0),
        None | Some(Value::Null) => 0.0,
        Some(other) => return Err(format!("confidence is not a number: {other}")),
    };
    // A confidence outside 0..1 says nothing about how sure the model is: nothing is done
    // on it, as when it is not sure.
    let confidence = if (0.0..=1.0).contains(&confidence) {
        confidence
    } else {
        tracing::warn!(
            confidence,
            "the model's confidence is outside 0 to 1; counted as 0"
        );
        0.0
    };
    let intent = match object.get("intent_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) if id.is_empty() || id == "null" || id == "none" => None,
        Some(Value::String(id)) => Some(
            intents
                .iter()
                .find(|intent| intent.id == *id)
                .ok_or_else(|| format!("intent_id {id:?} is not one of the intents offered"))?,
        ),
        Some(other) => return Err(format!("intent_id is not a string: {other}")),
    };
    let Some(intent) = intent else {
        return Ok(Classification {
            intent_id: None,
            extracted_params: BTreeMap::new(),
            missing_params: Vec::new(),
            confidence,
        });
    };
    let mut extracted = BTreeMap::new();
    if let Some(Value::Object(params)) = object.get("extracted_params") {
        for name in intent.param_names() {
            let value = match params.get(name) {
                Some(Value::String(text)) => text.trim().to_string(),
                Some(Value::Number(number)) => number.to_string(),
                Some(Value::Bool(flag)) => flag.to_string(),
                _ => continue,
            };
            if !value.is_empty() {
                extracted.insert(name.to_string(), value);
            }
        }
    }
    let missing = intent
        .param_names()
        .filter(|name| !extracted.contains_key(*name))
        .map(str::to_string)
        .collect();
    Ok(Classification {
        intent_id: Some(intent.id.clone()),
        extracted_params: extracted,
        missing_params: missing,
        confidence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order_status() -> Intent {
        serde_json::from_value(json!({
            "id": "order_status",
            "description": "Where an order is",
            "required_params": ["order_id"],
            "tool": "check_order_status"
        }))
        .unwrap()
    }

    #[test]
    fn a_confidence_outside_zero_to_one_counts_as_not_sure() {
        let intent = order_status();
        for (confidence, counted) in [
            ("0.8", 0.8),
            ("1", 1.0),
            ("0", 0.0),
            ("182.0", 0.0),
            ("-2018.08", 0.0),
            ("8469281982094883.0", 0.0),
        ] {
            let answer = format!(
                r#"{{"intent_id": "order_status", "extracted_params": {{"order_id": "O-1"}},
                    "missing_params": [], "confidence": {confidence}}}"#
            );
            let classification = parse(&answer, &[&intent]).unwrap();
            assert_eq!(classification.confidence, counted, "{confidence}");
        }
    }

    #[test]
    fn missing_params_come_from_the_intent_and_unknown_intents_are_refused() {
        let intent = order_status();
        let fenced = "```json\n{\"intent_id\": \"order_status\", \"extracted_params\": \
                      {\"order_id\": \"  \"}, \"missing_params\": [], \"confidence\": 0.9}\n```";
        let classification = parse(fenced, &[&intent]).unwrap();
        assert!(classification.extracted_params.is_empty());
        assert_eq!(classification.missing_params, ["order_id"]);
        let unknown = r#"{"intent_id": "refund", "extracted_params": {}, "missing_params": [],
                          "confidence": 0.9}"#;
        let error = parse(unknown, &[&intent]).unwrap_err();
        assert!(error.contains("\"refund\""), "{error}");
        assert!(parse("sure, here you go", &[&intent]).is_err());
    }

    #[test]
    fn the_schema_names_every_parameter_and_stays_in_what_every_provider_takes() {
        let intent = order_status();
        let schema = schema(&[&intent]);
        // No numeric bounds: strict schema modes refuse them on some providers, so the
        // confidence is checked here instead (`parse`).
        assert_eq!(
            schema["properties"]["confidence"],
            json!({"type": "number"})
        );
        assert_eq!(
            schema["properties"]["extracted_params"]["required"],
            json!(["order_id"])
        );
        assert_eq!(
            schema["properties"]["intent_id"]["enum"],
            json!(["order_status", null])
        );
    }
}
