//! A server's question (an MCP elicitation form) as chat text, and the member's reply
//! read back into the JSON object the server asked for.
//!
//! A chat has no form widgets, so the question lists the fields with what each accepts,
//! and the reply is either the bare value (a form of one field) or one `field: value`
//! line per field. A reply that does not fit is not guessed at: `read_reply` says what
//! is wrong, and the member is asked again.

use serde_json::{Map, Value};

use crate::turn::{FieldKind, FormField, QuestionForm};

/// What a member types to answer nothing (MCP "decline") or to stop (MCP "cancel").
const DECLINE_WORDS: &[&str] = &["skip", "decline", "no thanks"];
const CANCEL_WORDS: &[&str] = &["cancel", "/cancel", "stop"];

/// What the member's reply means.
#[derive(Debug, Clone, PartialEq)]
pub enum FormReply {
    Accept(Value),
    Decline,
    Cancel,
}

struct Field<'a> {
    name: &'a str,
    schema: &'a Value,
    required: bool,
}

impl Field<'_> {
    fn title(&self) -> &str {
        self.schema
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(self.name)
    }

    fn kind(&self) -> &str {
        self.schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("string")
    }

    /// The values a choice field allows, each with the label people see.
    fn choices(&self) -> Option<Vec<(String, String)>> {
        let schema = match self.kind() {
            "array" => self.schema.get("items")?,
            _ => self.schema,
        };
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            let names = schema.get("enumNames").and_then(Value::as_array);
            return Some(
                values
                    .iter()
                    .enumerate()
                    .filter_map(|(index, value)| {
                        let value = value.as_str()?.to_owned();
                        let label = names
                            .and_then(|names| names.get(index))
                            .and_then(Value::as_str)
                            .map_or_else(|| value.clone(), str::to_owned);
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
                    let value = option.get("const")?.as_str()?.to_owned();
                    let label = option
                        .get("title")
                        .and_then(Value::as_str)
                        .map_or_else(|| value.clone(), str::to_owned);
                    Some((value, label))
                })
                .collect(),
        )
    }

    /// One line telling a person what to give.
    fn describe(&self) -> String {
        let mut line = format!("• {}", self.title());
        if self.title() != self.name {
            line.push_str(&format!(" ({})", self.name));
        }
        if let Some(description) = self.schema.get("description").and_then(Value::as_str) {
            line.push_str(&format!(": {description}"));
        }
        let mut hints = Vec::new();
        if self.required {
            hints.push("required".to_owned());
        }
        match (self.kind(), self.choices()) {
            ("array", Some(choices)) => hints.push(format!(
                "one or more of {}, separated by commas",
                labels(&choices)
            )),
            (_, Some(choices)) => hints.push(format!("one of {}", labels(&choices))),
            ("boolean", None) => hints.push("yes or no".to_owned()),
            ("integer", None) => hints.push(format!("a whole number{}", self.range())),
            ("number", None) => hints.push(format!("a number{}", self.range())),
            _ => {
                if let Some(format) = self.schema.get("format").and_then(Value::as_str) {
                    hints.push(match format {
                        "date" => "a date like 2026-01-31".to_owned(),
                        "date-time" => "a date and time like 2026-01-31T18:00:00Z".to_owned(),
                        "email" => "an email address".to_owned(),
                        "uri" => "a web address".to_owned(),
                        other => other.to_owned(),
                    });
                }
            }
        }
        if let Some(default) = self.schema.get("default") {
            hints.push(format!("default {}", plain(default)));
        }
        if !hints.is_empty() {
            line.push_str(&format!(" [{}]", hints.join("; ")));
        }
        line
    }

    fn range(&self) -> String {
        let bound = |key| self.schema.get(key).map(plain);
        match (bound("minimum"), bound("maximum")) {
            (Some(low), Some(high)) => format!(" from {low} to {high}"),
            (Some(low), None) => format!(" of at least {low}"),
            (None, Some(high)) => format!(" of at most {high}"),
            (None, None) => String::new(),
        }
    }

    /// `text` as this field's JSON value, or what is wrong with it.
    fn read(&self, text: &str) -> Result<Value, String> {
        let title = self.title();
        match (self.kind(), self.choices()) {
            ("array", Some(choices)) => {
                let picked = text
                    .split(',')
                    .map(str::trim)
                    .filter(|part| !part.is_empty())
                    .map(|part| pick(&choices, part).ok_or(part))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|part| {
                        format!("{title}: {part:?} is not one of {}", labels(&choices))
                    })?;
                let count = picked.len() as u64;
                let at_least = self.schema.get("minItems").and_then(Value::as_u64);
                let at_most = self.schema.get("maxItems").and_then(Value::as_u64);
                if at_least.is_some_and(|low| count < low)
                    || at_most.is_some_and(|high| count > high)
                {
                    return Err(format!(
                        "{title}: choose between {} and {} of them",
                        at_least.unwrap_or(0),
                        at_most.map_or_else(|| "any number".to_owned(), |high| high.to_string())
                    ));
                }
                Ok(Value::Array(
                    picked.into_iter().map(Value::String).collect(),
                ))
            }
            (_, Some(choices)) => pick(&choices, text)
                .map(Value::String)
                .ok_or_else(|| format!("{title}: {text:?} is not one of {}", labels(&choices))),
            ("boolean", None) => match text.to_lowercase().as_str() {
                "yes" | "y" | "true" | "ok" | "agree" | "i agree" => Ok(Value::Bool(true)),
                "no" | "n" | "false" | "disagree" => Ok(Value::Bool(false)),
                _ => Err(format!("{title}: answer yes or no, not {text:?}")),
            },
            ("integer", None) => {
                let number: i64 = text
                    .parse()
                    .map_err(|_| format!("{title}: {text:?} is not a whole number"))?;
                self.within_range(number as f64)?;
                Ok(Value::from(number))
            }
            ("number", None) => {
                let number: f64 = text
                    .replace(',', ".")
                    .parse()
                    .ok()
                    .filter(|number: &f64| number.is_finite())
                    .ok_or_else(|| format!("{title}: {text:?} is not a number"))?;
                self.within_range(number)?;
                Ok(Value::from(number))
            }
            _ => {
                let chars = text.chars().count() as u64;
                if let Some(low) = self.schema.get("minLength").and_then(Value::as_u64)
                    && chars < low
                {
                    return Err(format!("{title}: at least {low} characters, please"));
                }
                if let Some(high) = self.schema.get("maxLength").and_then(Value::as_u64)
                    && chars > high
                {
                    return Err(format!("{title}: at most {high} characters, please"));
                }
                Ok(Value::String(text.to_owned()))
            }
        }
    }

    fn within_range(&self, number: f64) -> Result<(), String> {
        let low = self.schema.get("minimum").and_then(Value::as_f64);
        let high = self.schema.get("maximum").and_then(Value::as_f64);
        if low.is_some_and(|low| number < low) || high.is_some_and(|high| number > high) {
            return Err(format!("{}: {number} is not{}", self.title(), self.range()));
        }
        Ok(())
    }
}

fn fields(schema: &Value) -> Vec<Field<'_>> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| {
            properties
                .iter()
                .map(|(name, schema)| Field {
                    name,
                    schema,
                    required: required.contains(&name.as_str()),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn labels(choices: &[(String, String)]) -> String {
    choices
        .iter()
        .map(|(_, label)| label.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The value of the choice whose label or value is `text`, ignoring case.
fn pick(choices: &[(String, String)], text: &str) -> Option<String> {
    choices
        .iter()
        .find(|(value, label)| value.eq_ignore_ascii_case(text) || label.eq_ignore_ascii_case(text))
        .map(|(value, _)| value.clone())
}

/// A JSON value as a person would write it.
fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(items) => items.iter().map(plain).collect::<Vec<_>>().join(", "),
        other => other.to_string(),
    }
}

/// The question as a form: `intro` above one field per value the schema asks for, each
/// answered as its `name: value` line, so the answer is read by `read_reply` like a typed one.
pub fn question_form(intro: String, schema: &Value) -> QuestionForm {
    let fields = fields(schema)
        .iter()
        .map(|field| {
            let number = |key| field.schema.get(key).and_then(Value::as_f64);
            let kind = match (field.kind(), field.choices()) {
                (kind, Some(options)) => FieldKind::Choice {
                    options,
                    multiple: kind == "array",
                },
                ("boolean", None) => FieldKind::Boolean,
                (kind @ ("integer" | "number"), None) => FieldKind::Number {
                    integer: kind == "integer",
                    minimum: number("minimum"),
                    maximum: number("maximum"),
                },
                _ => FieldKind::Text {
                    input: match field.schema.get("format").and_then(Value::as_str) {
                        Some("date") => "date",
                        Some("email") => "email",
                        Some("uri") => "url",
                        _ => "text",
                    },
                },
            };
            FormField {
                name: field.name.to_owned(),
                title: field.title().to_owned(),
                description: field
                    .schema
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                required: field.required,
                kind,
                default: field.schema.get("default").map(plain),
            }
        })
        .collect();
    QuestionForm { intro, fields }
}

/// The question as chat text: who asks, what, the fields and how to answer.
pub fn render_question(asker: &str, message: &str, schema: &Value) -> String {
    let fields = fields(schema);
    let mut text = format!("{asker} asks: {message}");
    for field in &fields {
        text.push('\n');
        text.push_str(&field.describe());
    }
    let how = if fields.len() == 1 {
        "Reply with your answer"
    } else {
        "Reply with one line per field, like `name: value` (leave out what you don't want to give)"
    };
    text.push_str(&format!(
        "\n\n{how}, “skip” to not answer, or “cancel” to stop."
    ));
    text
}

/// The member's reply to a question with `schema`, or what is wrong with it.
pub fn read_reply(schema: &Value, reply: &str) -> Result<FormReply, String> {
    let reply = reply.trim();
    let lowered = reply.to_lowercase();
    if DECLINE_WORDS.contains(&lowered.as_str()) {
        return Ok(FormReply::Decline);
    }
    if CANCEL_WORDS.contains(&lowered.as_str()) {
        return Ok(FormReply::Cancel);
    }
    let fields = fields(schema);
    let mut answer = Map::new();
    let mut problems = Vec::new();
    if let [field] = fields.as_slice() {
        let value = reply
            .strip_prefix(&format!("{}:", field.name))
            .unwrap_or(reply)
            .trim();
        match field.read(value) {
            Ok(value) => {
                answer.insert(field.name.to_owned(), value);
            }
            Err(problem) => problems.push(problem),
        }
    } else {
        for line in reply.lines().map(str::trim).filter(|line| !line.is_empty()) {
            let Some((key, value)) = line.split_once(':') else {
                problems.push(format!("{line:?} is not `field: value`"));
                continue;
            };
            let key = key.trim().trim_start_matches('•').trim();
            let Some(field) = fields.iter().find(|field| {
                field.name.eq_ignore_ascii_case(key) || field.title().eq_ignore_ascii_case(key)
            }) else {
                problems.push(format!("there is no field {key:?}"));
                continue;
            };
            match field.read(value.trim()) {
                Ok(value) => {
                    answer.insert(field.name.to_owned(), value);
                }
                Err(problem) => problems.push(problem),
            }
        }
    }
    for field in fields.iter().filter(|field| field.required) {
        if !answer.contains_key(field.name)
            && !problems.iter().any(|p| p.starts_with(field.title()))
        {
            problems.push(format!("{} is required", field.title()));
        }
    }
    if problems.is_empty() {
        Ok(FormReply::Accept(Value::Object(answer)))
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "Your name", "description": "Full name"},
                "check": {"type": "boolean"},
                "count": {"type": "integer", "minimum": 1, "maximum": 10, "default": 2},
                "hero": {"type": "string", "oneOf": [
                    {"const": "hero-1", "title": "Superman"},
                    {"const": "hero-2", "title": "Green Lantern"}
                ]},
                "tools": {"type": "array", "maxItems": 2,
                    "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]}}
            },
            "required": ["name"]
        })
    }

    #[test]
    fn the_question_lists_every_field_with_what_it_takes() {
        let text = render_question("everything", "Tell me more:", &form());
        assert!(text.starts_with("everything asks: Tell me more:"), "{text}");
        assert!(
            text.contains("• Your name (name): Full name [required]"),
            "{text}"
        );
        assert!(text.contains("• check [yes or no]"), "{text}");
        assert!(
            text.contains("• count [a whole number from 1 to 10; default 2]"),
            "{text}"
        );
        assert!(text.contains("[one of Superman, Green Lantern]"), "{text}");
        assert!(
            text.contains("one or more of Guitar, Piano, Drums"),
            "{text}"
        );
        assert!(text.contains("“skip”"), "{text}");
    }

    #[test]
    fn a_reply_of_field_lines_becomes_the_typed_object() {
        let reply =
            "name: Alice Example\nCheck: yes\ncount: 7\nhero: green lantern\ntools: piano, Drums";
        assert_eq!(
            read_reply(&form(), reply),
            Ok(FormReply::Accept(json!({
                "name": "Alice Example", "check": true, "count": 7,
                "hero": "hero-2", "tools": ["Piano", "Drums"]
            })))
        );
        // Fields can be named by their title too; optional ones can be left out.
        assert_eq!(
            read_reply(&form(), "Your name: Bob"),
            Ok(FormReply::Accept(json!({"name": "Bob"})))
        );
    }

    #[test]
    fn a_reply_that_does_not_fit_says_what_is_wrong() {
        let problems = read_reply(&form(), "count: 11\nhero: Batman\ncolour: red").unwrap_err();
        assert!(
            problems.contains("count: 11 is not from 1 to 10"),
            "{problems}"
        );
        assert!(
            problems.contains("\"Batman\" is not one of Superman"),
            "{problems}"
        );
        assert!(
            problems.contains("there is no field \"colour\""),
            "{problems}"
        );
        assert!(problems.contains("Your name is required"), "{problems}");
        let problems = read_reply(&form(), "name: A\ntools: Guitar, Piano, Drums").unwrap_err();
        assert!(problems.contains("choose between 0 and 2"), "{problems}");
    }

    #[test]
    fn one_field_takes_the_bare_reply_and_words_decline_or_cancel() {
        let one = json!({"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]});
        assert_eq!(
            read_reply(&one, " 42 "),
            Ok(FormReply::Accept(json!({"age": 42})))
        );
        assert!(
            read_reply(&one, "forty")
                .unwrap_err()
                .contains("not a whole number")
        );
        assert_eq!(read_reply(&one, "Skip"), Ok(FormReply::Decline));
        assert_eq!(read_reply(&one, "/cancel"), Ok(FormReply::Cancel));
        let text = render_question("s", "How old?", &one);
        assert!(text.contains("Reply with your answer"), "{text}");
    }
}
