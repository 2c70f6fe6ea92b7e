//! Fitting a value to a parameter's type: the model's JSON arguments, profile facts (always
//! text) and config presets all pass through [`fit_to_type`], so "3" from a profile is the
//! integer 3, "yes" the boolean true and "Groceries" the enum value "groceries".

use serde_json::{Number, Value};

use super::manifest::ParameterType;

/// What a value is once fitted to a parameter's type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Fitted {
    /// Nothing usable: null, or text that is empty once trimmed. The next source is tried.
    Absent,
    /// The value in the type's own JSON form.
    Value(Value),
    /// Of another type; says what was expected.
    WrongType { expected: String },
}

/// What a parameter of `kind` accepts, in words for the model and the member.
pub fn expected_value(kind: &ParameterType) -> String {
    match kind {
        ParameterType::String => "text".to_owned(),
        ParameterType::Number => "a number such as 2.5".to_owned(),
        ParameterType::Integer => "a whole number such as 3".to_owned(),
        ParameterType::Boolean => "yes or no (true or false)".to_owned(),
        ParameterType::Enum(values) => format!("one of: {}", values.join(", ")),
    }
}

const TRUE_WORDS: &[&str] = &["true", "yes", "y", "on", "1"];
const FALSE_WORDS: &[&str] = &["false", "no", "n", "off", "0"];

/// Integers beyond this are not exact as f64, so a float is only taken as an integer inside it.
const LARGEST_EXACT_FLOAT_INTEGER: f64 = 9_007_199_254_740_992.0;

pub(crate) fn fit_to_type(kind: &ParameterType, value: &Value) -> Fitted {
    if value.is_null() || value.as_str().is_some_and(|text| text.trim().is_empty()) {
        return Fitted::Absent;
    }
    let fitted = match kind {
        ParameterType::String => fit_string(value),
        ParameterType::Number => fit_number(value),
        ParameterType::Integer => fit_integer(value),
        ParameterType::Boolean => fit_boolean(value),
        ParameterType::Enum(values) => fit_enum(values, value),
    };
    match fitted {
        Some(value) => Fitted::Value(value),
        None => Fitted::WrongType {
            expected: expected_value(kind),
        },
    }
}

/// Text, and numbers or booleans as their text: a model often writes a phone number or a
/// house number as a JSON number, and it means the digits.
fn fit_string(value: &Value) -> Option<Value> {
    match value {
        Value::String(_) => Some(value.clone()),
        Value::Number(number) => Some(Value::String(number.to_string())),
        Value::Bool(flag) => Some(Value::String(flag.to_string())),
        Value::Null | Value::Array(_) | Value::Object(_) => None,
    }
}

fn fit_number(value: &Value) -> Option<Value> {
    match value {
        Value::Number(_) => Some(value.clone()),
        Value::String(text) => {
            let text = text.trim();
            if let Ok(integer) = text.parse::<i64>() {
                return Some(Value::Number(integer.into()));
            }
            text.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
        }
        _ => None,
    }
}

fn fit_integer(value: &Value) -> Option<Value> {
    let whole = |float: f64| {
        (float.fract() == 0.0 && float.abs() <= LARGEST_EXACT_FLOAT_INTEGER)
            .then(|| Value::Number((float as i64).into()))
    };
    match value {
        Value::Number(number) if number.is_i64() || number.is_u64() => Some(value.clone()),
        Value::Number(number) => number.as_f64().and_then(whole),
        Value::String(text) => {
            let text = text.trim();
            match text.parse::<i64>() {
                Ok(integer) => Some(Value::Number(integer.into())),
                Err(_) => text.parse::<f64>().ok().and_then(whole),
            }
        }
        _ => None,
    }
}

fn fit_boolean(value: &Value) -> Option<Value> {
    match value {
        Value::Bool(_) => Some(value.clone()),
        Value::Number(number) => match number.as_i64() {
            Some(1) => Some(Value::Bool(true)),
            Some(0) => Some(Value::Bool(false)),
            _ => None,
        },
        Value::String(text) => {
            let word = text.trim().to_lowercase();
            if TRUE_WORDS.contains(&word.as_str()) {
                Some(Value::Bool(true))
            } else if FALSE_WORDS.contains(&word.as_str()) {
                Some(Value::Bool(false))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Matches ignoring case and surrounding spaces, and answers with the manifest's spelling,
/// which is what the plugin expects.
fn fit_enum(values: &[String], value: &Value) -> Option<Value> {
    let text = match value {
        Value::String(text) => text.trim().to_owned(),
        Value::Number(number) => number.to_string(),
        Value::Bool(flag) => flag.to_string(),
        _ => return None,
    };
    let folded = text.to_lowercase();
    values
        .iter()
        .find(|candidate| candidate.trim().to_lowercase() == folded)
        .map(|candidate| Value::String(candidate.clone()))
}

/// A value as a member or the model reads it: text without quotes, anything else as JSON.
pub fn display_value(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fitted(kind: &ParameterType, value: Value) -> Fitted {
        fit_to_type(kind, &value)
    }

    #[test]
    fn numbers_accept_numeric_text() {
        assert_eq!(
            fitted(&ParameterType::Number, json!("2.5")),
            Fitted::Value(json!(2.5))
        );
        assert_eq!(
            fitted(&ParameterType::Number, json!(" 4 ")),
            Fitted::Value(json!(4))
        );
        assert!(matches!(
            fitted(&ParameterType::Number, json!("lots")),
            Fitted::WrongType { .. }
        ));
    }

    #[test]
    fn integers_refuse_fractions() {
        assert_eq!(
            fitted(&ParameterType::Integer, json!(3.0)),
            Fitted::Value(json!(3))
        );
        assert_eq!(
            fitted(&ParameterType::Integer, json!("12")),
            Fitted::Value(json!(12))
        );
        assert!(matches!(
            fitted(&ParameterType::Integer, json!(2.5)),
            Fitted::WrongType { .. }
        ));
    }

    #[test]
    fn booleans_accept_yes_and_no_words() {
        for word in ["yes", "Y", "true", "On", "1"] {
            assert_eq!(
                fitted(&ParameterType::Boolean, json!(word)),
                Fitted::Value(json!(true)),
                "{word}"
            );
        }
        assert_eq!(
            fitted(&ParameterType::Boolean, json!("No")),
            Fitted::Value(json!(false))
        );
        assert!(matches!(
            fitted(&ParameterType::Boolean, json!("maybe")),
            Fitted::WrongType { .. }
        ));
    }

    #[test]
    fn enums_match_ignoring_case_and_answer_the_manifest_spelling() {
        let kind = ParameterType::Enum(vec!["Card".to_owned(), "cash".to_owned()]);
        assert_eq!(fitted(&kind, json!("card")), Fitted::Value(json!("Card")));
        assert_eq!(
            fitted(&kind, json!("cheque")),
            Fitted::WrongType {
                expected: "one of: Card, cash".to_owned()
            }
        );
    }

    #[test]
    fn blank_text_and_null_are_absent() {
        assert_eq!(fitted(&ParameterType::String, json!("  ")), Fitted::Absent);
        assert_eq!(fitted(&ParameterType::Integer, Value::Null), Fitted::Absent);
        assert_eq!(
            fitted(&ParameterType::String, json!(5551234)),
            Fitted::Value(json!("5551234"))
        );
    }
}
