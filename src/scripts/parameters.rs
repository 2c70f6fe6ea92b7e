//! A script's parameter values: each checked against its declared type, and the final
//! values of a run (the member's changes over the defaults, every required one set).

use serde_json::{Map, Number, Value};

use super::manifest::{ParameterKind, Script, ScriptParameter};

/// `value` as a valid value of `parameter`, or what is wrong with it (lowercase, naming
/// the value). A number or boolean may come as text ("20", "yes"): members and models
/// write them so.
pub fn check_value(parameter: &ScriptParameter, value: &Value) -> Result<Value, String> {
    let name = &parameter.name;
    match parameter.kind {
        ParameterKind::String => match value {
            Value::String(text) => Ok(Value::String(text.clone())),
            other => Err(format!("{name} must be text, found {other}")),
        },
        ParameterKind::Number => {
            let number = match value {
                Value::Number(number) => Some(number.clone()),
                Value::String(text) => text
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|number| number.is_finite())
                    .and_then(|number| {
                        if number.fract() == 0.0 && number.abs() < 9.0e15 {
                            Some(Number::from(number as i64))
                        } else {
                            Number::from_f64(number)
                        }
                    }),
                _ => None,
            };
            number
                .map(Value::Number)
                .ok_or_else(|| format!("{name} must be a number, found {value}"))
        }
        ParameterKind::Boolean => match value {
            Value::Bool(flag) => Ok(Value::Bool(*flag)),
            Value::String(text) => match text.trim().to_lowercase().as_str() {
                "true" | "yes" | "on" => Ok(Value::Bool(true)),
                "false" | "no" | "off" => Ok(Value::Bool(false)),
                _ => Err(format!("{name} must be true or false, found {value}")),
            },
            other => Err(format!("{name} must be true or false, found {other}")),
        },
        ParameterKind::Enum => match value {
            Value::String(text) if parameter.options.contains(text) => {
                Ok(Value::String(text.clone()))
            }
            other => Err(format!(
                "{name} must be one of {}, found {other}",
                parameter.options.join(", ")
            )),
        },
    }
}

/// The member's `changes` checked against `script`'s parameters: every problem, or the
/// checked values.
pub fn check_changes(
    script: &Script,
    changes: &Map<String, Value>,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut checked = Map::new();
    let mut problems = Vec::new();
    for (name, value) in changes {
        let Some(parameter) = script.parameter(name) else {
            let known: Vec<&str> = script.parameters.iter().map(|p| p.name.as_str()).collect();
            problems.push(format!(
                "{} has no parameter {name:?} (its parameters: {})",
                script.name,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
            continue;
        };
        match check_value(parameter, value) {
            Ok(value) => {
                checked.insert(name.clone(), value);
            }
            Err(problem) => problems.push(problem),
        }
    }
    if problems.is_empty() {
        Ok(checked)
    } else {
        Err(problems)
    }
}

/// The values a run would use: each parameter's change, else its default. Err: the
/// required parameters without a value.
pub fn final_values(
    script: &Script,
    modifications: &Map<String, Value>,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut values = Map::new();
    let mut missing = Vec::new();
    for parameter in &script.parameters {
        match modifications
            .get(&parameter.name)
            .or(parameter.default.as_ref())
        {
            Some(value) => {
                values.insert(parameter.name.clone(), value.clone());
            }
            None if parameter.required => missing.push(parameter.name.clone()),
            None => {}
        }
    }
    if missing.is_empty() {
        Ok(values)
    } else {
        Err(missing)
    }
}

/// A value as a person (and a `--name value` argument) reads it: text without quotes.
pub fn plain(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parameter(kind: ParameterKind, options: &[&str]) -> ScriptParameter {
        ScriptParameter {
            name: "p".into(),
            kind,
            options: options.iter().map(|o| o.to_string()).collect(),
            default: None,
            required: false,
            description: String::new(),
        }
    }

    #[test]
    fn values_are_checked_against_their_type() {
        let number = parameter(ParameterKind::Number, &[]);
        assert_eq!(check_value(&number, &json!("20")), Ok(json!(20)));
        assert_eq!(check_value(&number, &json!(2.5)), Ok(json!(2.5)));
        assert_eq!(
            check_value(&number, &json!("lots")),
            Err("p must be a number, found \"lots\"".into())
        );
        let flag = parameter(ParameterKind::Boolean, &[]);
        assert_eq!(check_value(&flag, &json!("yes")), Ok(json!(true)));
        assert!(check_value(&flag, &json!(3)).is_err());
        let choice = parameter(ParameterKind::Enum, &["lawn", "roses"]);
        assert_eq!(check_value(&choice, &json!("roses")), Ok(json!("roses")));
        assert_eq!(
            check_value(&choice, &json!("moon")),
            Err("p must be one of lawn, roses, found \"moon\"".into())
        );
        let text = parameter(ParameterKind::String, &[]);
        assert!(check_value(&text, &json!(1)).is_err());
    }
}
