//! An MCP server's elicitation form (a JSON schema of the values it asks for) and the
//! member's reply in chat (`hearth::fuzzing::{render_question, question_form, read_reply}`).
//!
//! Input: the schema's JSON on the first line, the member's reply after it.
//!
//! Properties: the question names every field; the form has one field per property. A
//! reply is declined or cancelled only by those words; an accepted reply is an object of
//! the schema's properties only, every required one present, each value of its field's
//! type and within its bounds (a choice among the choices, a whole number for an integer,
//! a finite number, a string within its lengths, as many items as allowed); when the
//! schema names its fields and choices unambiguously, the accepted values written back as
//! `name: value` lines read back to the same answer. A refusal says what is wrong.
#![no_main]

use std::collections::BTreeSet;

use hearth::fuzzing::{FormReply, question_form, read_reply, render_question};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

const DECLINE: [&str; 3] = ["skip", "decline", "no thanks"];
const CANCEL: [&str; 3] = ["cancel", "/cancel", "stop"];

fn properties(schema: &Value) -> Vec<(&String, &Value)> {
    schema["properties"]
        .as_object()
        .map(|properties| properties.iter().collect())
        .unwrap_or_default()
}

fn kind(field: &Value) -> &str {
    field["type"].as_str().unwrap_or("string")
}

/// The choices of a field (value, label), when it has any.
fn choices(field: &Value) -> Option<Vec<(String, String)>> {
    let schema = match kind(field) {
        "array" => field.get("items")?,
        _ => field,
    };
    if let Some(values) = schema["enum"].as_array() {
        let names = schema["enumNames"].as_array();
        return Some(
            values
                .iter()
                .enumerate()
                .filter_map(|(index, value)| {
                    let value = value.as_str()?.to_string();
                    let label = names
                        .and_then(|names| names.get(index))
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_string);
                    Some((value, label))
                })
                .collect(),
        );
    }
    let options = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))?
        .as_array()?;
    Some(
        options
            .iter()
            .filter_map(|option| {
                let value = option.get("const")?.as_str()?.to_string();
                let label = option["title"]
                    .as_str()
                    .map_or_else(|| value.clone(), str::to_string);
                Some((value, label))
            })
            .collect(),
    )
}

fn check_value(name: &str, field: &Value, value: &Value) {
    let number = |key: &str| field[key].as_f64();
    let within = |x: f64| {
        number("minimum").is_none_or(|low| x >= low)
            && number("maximum").is_none_or(|high| x <= high)
    };
    match (kind(field), choices(field)) {
        ("array", Some(choices)) => {
            let items = value
                .as_array()
                .unwrap_or_else(|| panic!("{name}: {value} is not a list"));
            for item in items {
                assert!(
                    choices
                        .iter()
                        .any(|(choice, _)| Some(choice.as_str()) == item.as_str()),
                    "{name}: {item}"
                );
            }
            let count = items.len() as u64;
            assert!(
                field["minItems"].as_u64().is_none_or(|low| count >= low),
                "{name}: {count} items"
            );
            assert!(
                field["maxItems"].as_u64().is_none_or(|high| count <= high),
                "{name}: {count} items"
            );
        }
        (_, Some(choices)) => assert!(
            choices
                .iter()
                .any(|(choice, _)| Some(choice.as_str()) == value.as_str()),
            "{name}: {value} is not a choice"
        ),
        ("boolean", None) => assert!(value.is_boolean(), "{name}: {value}"),
        ("integer", None) => {
            let whole = value
                .as_i64()
                .unwrap_or_else(|| panic!("{name}: {value} is not whole"));
            assert!(within(whole as f64), "{name}: {whole} out of bounds");
        }
        ("number", None) => {
            let x = value
                .as_f64()
                .unwrap_or_else(|| panic!("{name}: {value} is not a number"));
            assert!(x.is_finite() && within(x), "{name}: {x}");
        }
        _ => {
            let text = value
                .as_str()
                .unwrap_or_else(|| panic!("{name}: {value} is not text"));
            let chars = text.chars().count() as u64;
            assert!(
                field["minLength"].as_u64().is_none_or(|low| chars >= low),
                "{name}: {text:?}"
            );
            assert!(
                field["maxLength"].as_u64().is_none_or(|high| chars <= high),
                "{name}: {text:?}"
            );
        }
    }
}

/// Whether a person can name each field and each choice only one way: names and titles
/// distinct (ignoring case), without `:`, commas in choices, line breaks or spaces around.
fn unambiguous(schema: &Value) -> bool {
    let plain = |text: &str| {
        !text.is_empty()
            && text == text.trim()
            && !text.contains([':', '\n', '\r', '•'])
            && text.lines().count() == 1
    };
    let mut seen = BTreeSet::new();
    for (name, field) in properties(schema) {
        let title = field["title"].as_str().unwrap_or(name);
        if !plain(name) || !plain(title) {
            return false;
        }
        let name_lower = name.to_ascii_lowercase();
        let title_lower = title.to_ascii_lowercase();
        if !seen.insert(name_lower.clone())
            || (title_lower != name_lower && !seen.insert(title_lower))
        {
            return false;
        }
        if let Some(choices) = choices(field) {
            let mut said = BTreeSet::new();
            for (value, label) in &choices {
                if !plain(value) || value.contains(',') || !said.insert(value.to_ascii_lowercase())
                {
                    return false;
                }
                if label.to_ascii_lowercase() != value.to_ascii_lowercase()
                    && !said.insert(label.to_ascii_lowercase())
                {
                    return false;
                }
            }
        }
    }
    true
}

/// A value as a person types it.
fn typed(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(typed).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

fn check_accepted(schema: &Value, answer: &Map<String, Value>) {
    let fields = properties(schema);
    for (name, value) in answer {
        let field = fields
            .iter()
            .find(|(field_name, _)| *field_name == name)
            .unwrap_or_else(|| panic!("{name} is not a field of the schema"))
            .1;
        check_value(name, field, value);
    }
    for required in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if fields.iter().any(|(name, _)| name.as_str() == required) {
            assert!(answer.contains_key(required), "required {required} missing");
        }
    }
    if !unambiguous(schema) || answer.is_empty() {
        return;
    }
    let written: Vec<String> = answer
        .iter()
        .map(|(name, value)| format!("{name}: {}", typed(value)))
        .collect();
    let written = written.join("\n");
    assert_eq!(
        read_reply(schema, &written),
        Ok(FormReply::Accept(Value::Object(answer.clone()))),
        "the answer written back as {written:?} reads otherwise"
    );
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let Some((schema, reply)) = text.split_once('\n') else {
        return;
    };
    let Ok(schema) = serde_json::from_str::<Value>(schema) else {
        return;
    };
    let question = render_question("calendar", "When should it start?", &schema);
    let form = question_form("When should it start?".to_string(), &schema);
    let fields = properties(&schema);
    assert_eq!(form.fields.len(), fields.len());
    for (name, field) in &fields {
        let title = field["title"].as_str().unwrap_or(name);
        assert!(
            question.contains(title),
            "the question does not name {title:?}"
        );
    }
    let said = reply.trim().to_lowercase();
    match read_reply(&schema, reply) {
        Ok(FormReply::Decline) => assert!(DECLINE.contains(&said.as_str()), "{reply:?} declined"),
        Ok(FormReply::Cancel) => assert!(CANCEL.contains(&said.as_str()), "{reply:?} cancelled"),
        Ok(FormReply::Accept(Value::Object(answer))) => {
            assert!(!DECLINE.contains(&said.as_str()) && !CANCEL.contains(&said.as_str()));
            check_accepted(&schema, &answer);
        }
        Ok(FormReply::Accept(other)) => panic!("an answer that is not an object: {other}"),
        Err(problem) => assert!(!problem.trim().is_empty(), "refused without saying why"),
    }
});
