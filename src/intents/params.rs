//! An intent's parameters: how `required_params` declares each (a plain name is text; a
//! mapping adds its `type`, a `pattern` the whole text must match, `min` and `max` for
//! numbers, an `example` shown when a value does not fit), and each value the classifier
//! found read once into that type (`ParamValue`), right after classification. The policy
//! compares these values and the tool gets them as JSON (a number as a JSON number, a date
//! as `"YYYY-MM-DD"`); a value that cannot be read counts as missing, and the member is
//! told what was wrong with it when asked again (`unreadable.rs`).

use std::collections::BTreeMap;
use std::fmt;

use chrono::NaiveDate;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::registry::Intent;
use super::unreadable::{Problem, Unreadable};
use super::written::{DateProblem, NumberProblem, read_date, read_number};

/// What a parameter's value is read as.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    /// The text as written, trimmed.
    #[default]
    String,
    Number,
    /// A number without a fraction.
    Integer,
    Date,
}

impl ParamType {
    /// The type with its article, as said in a sentence: "an integer".
    pub fn described(self) -> &'static str {
        match self {
            ParamType::String => "a string",
            ParamType::Number => "a number",
            ParamType::Integer => "an integer",
            ParamType::Date => "a date",
        }
    }

    pub fn is_numeric(self) -> bool {
        matches!(self, ParamType::Number | ParamType::Integer)
    }
}

/// A regular expression the whole value must match, as written in the file.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub source: String,
    regex: regex::Regex,
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl<'de> Deserialize<'de> for Pattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let source = String::deserialize(deserializer)?;
        Pattern::new(&source).map_err(de::Error::custom)
    }
}

impl Pattern {
    /// `source` anchored at both ends, so it matches the whole value or nothing.
    pub fn new(source: &str) -> Result<Self, String> {
        regex::RegexBuilder::new(&format!("^(?:{source})$"))
            .size_limit(1 << 20)
            .build()
            .map(|regex| Pattern {
                source: source.to_string(),
                regex,
            })
            .map_err(|error| {
                // The library's message draws the pattern over several lines; its last
                // line says what is wrong.
                let text = error.to_string();
                let what = text.lines().last().unwrap_or_default().trim();
                let what = what.strip_prefix("error: ").unwrap_or(what);
                format!("{source:?} is not a regular expression: {what}")
            })
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

/// One entry of `required_params`.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub kind: ParamType,
    pub pattern: Option<Pattern>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// A value that fits, shown to a member whose value did not.
    pub example: Option<String>,
}

/// The mapping form of an entry, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ParamFields {
    name: String,
    #[serde(default, rename = "type")]
    kind: ParamType,
    #[serde(default)]
    pattern: Option<Pattern>,
    #[serde(default)]
    min: Option<f64>,
    #[serde(default)]
    max: Option<f64>,
    #[serde(default)]
    example: Option<String>,
}

impl ParamSpec {
    /// A parameter read as text, as a plain name declares it.
    pub fn text(name: &str) -> Self {
        ParamSpec {
            name: name.to_string(),
            kind: ParamType::String,
            pattern: None,
            min: None,
            max: None,
            example: None,
        }
    }

    /// How the member reads the parameter's name.
    pub fn spoken_name(&self) -> String {
        self.name.replace('_', " ")
    }

    /// What is wrong with this declaration that its shape cannot say, as (key, message).
    pub(crate) fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        if self.name.trim().is_empty() {
            problems.push(("name", "a parameter name must not be empty".to_string()));
        }
        if self.pattern.is_some() && self.kind != ParamType::String {
            problems.push((
                "pattern",
                format!(
                    "a pattern checks text; {:?} is read as {}, so leave the pattern out or \
                     make it type string",
                    self.name,
                    self.kind.described()
                ),
            ));
        }
        for (key, bound) in [("min", self.min), ("max", self.max)] {
            let Some(bound) = bound else { continue };
            if !self.kind.is_numeric() {
                problems.push((
                    key,
                    format!(
                        "{key} bounds a number; {:?} is read as {}, so make it type number \
                         or integer",
                        self.name,
                        self.kind.described()
                    ),
                ));
            } else if !bound.is_finite() {
                problems.push((key, format!("a finite number, found {bound}")));
            }
        }
        if let (Some(min), Some(max)) = (self.min, self.max)
            && min > max
        {
            problems.push((
                "min",
                format!("min {min} is greater than max {max}: nothing could be given"),
            ));
        }
        problems
    }

    /// `written` (what the classifier found) read as this parameter's type, within its
    /// bounds; `today` in the profile's timezone, for `today` and `tomorrow`.
    pub fn read(&self, written: &str, today: NaiveDate) -> Result<ParamValue, Unreadable> {
        let written = written.trim();
        let unreadable = |problem| Unreadable {
            written: written.to_string(),
            problem,
        };
        let number = || {
            read_number(written).map_err(|problem| {
                unreadable(match problem {
                    NumberProblem::NotANumber => Problem::NotANumber,
                    NumberProblem::TooLong => Problem::TooLong,
                    NumberProblem::Ambiguous { decimal, grouped } => {
                        Problem::AmbiguousNumber { decimal, grouped }
                    }
                })
            })
        };
        let value = match self.kind {
            ParamType::String => {
                if written.is_empty() {
                    return Err(unreadable(Problem::Empty));
                }
                if let Some(pattern) = &self.pattern
                    && !pattern.is_match(written)
                {
                    return Err(unreadable(Problem::NotMatching));
                }
                return Ok(ParamValue::Text(written.to_string()));
            }
            ParamType::Date => {
                return read_date(written, today)
                    .map(ParamValue::Date)
                    .map_err(|problem| {
                        unreadable(match problem {
                            DateProblem::NotADate => Problem::NotADate,
                            DateProblem::Ambiguous => Problem::AmbiguousDate,
                        })
                    });
            }
            ParamType::Number => number()?,
            ParamType::Integer => {
                let value = number()?;
                if value.fract() != 0.0 {
                    return Err(unreadable(Problem::NotWhole));
                }
                value
            }
        };
        if let Some(min) = self.min
            && value < min
        {
            return Err(unreadable(Problem::BelowMin(min)));
        }
        if let Some(max) = self.max
            && value > max
        {
            return Err(unreadable(Problem::AboveMax(max)));
        }
        Ok(match self.kind {
            // Whole and within 15 digits (`read_number`): exact as an i64.
            ParamType::Integer => ParamValue::Integer(value as i64),
            _ => ParamValue::Number(value),
        })
    }
}

impl<'de> Deserialize<'de> for ParamSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SpecVisitor;

        impl<'de> Visitor<'de> for SpecVisitor {
            type Value = ParamSpec;

            fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
                formatter.write_str(
                    "a parameter name, or a mapping with its name and type, pattern, min, \
                     max, example",
                )
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<ParamSpec, E> {
                Ok(ParamSpec::text(name))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ParamSpec, A::Error> {
                let fields = ParamFields::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ParamSpec {
                    name: fields.name,
                    kind: fields.kind,
                    pattern: fields.pattern,
                    min: fields.min,
                    max: fields.max,
                    example: fields.example,
                })
            }
        }

        deserializer.deserialize_any(SpecVisitor)
    }
}

/// The values found for `intent`'s parameters (as the classifier extracted them), each read
/// once into its declared type: the ones read, as the tool gets them, and the ones that
/// could not be, which count as missing.
pub fn read_params(
    intent: &Intent,
    found: &BTreeMap<String, String>,
    today: NaiveDate,
) -> (BTreeMap<String, Value>, Vec<(String, Unreadable)>) {
    let mut values = BTreeMap::new();
    let mut unreadable = Vec::new();
    for spec in &intent.required_params {
        let Some(written) = found.get(&spec.name) else {
            continue;
        };
        match spec.read(written, today) {
            Ok(value) => {
                values.insert(spec.name.clone(), value.to_json());
            }
            Err(problem) => unreadable.push((spec.name.clone(), problem)),
        }
    }
    (values, unreadable)
}

/// A parameter's value, read once into its type.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Text(String),
    Number(f64),
    Integer(i64),
    Date(NaiveDate),
}

impl ParamValue {
    /// As the tool gets it: a number as a JSON number (without a fraction when it has
    /// none), a date as `"YYYY-MM-DD"`.
    pub fn to_json(&self) -> Value {
        match self {
            ParamValue::Text(text) => Value::String(text.clone()),
            ParamValue::Integer(number) => Value::from(*number),
            // Whole and within 15 digits: exact as an i64, and written without ".0".
            ParamValue::Number(number) if number.fract() == 0.0 && number.abs() < 1e15 => {
                Value::from(*number as i64)
            }
            ParamValue::Number(number) => Value::from(*number),
            ParamValue::Date(date) => Value::String(date.format("%Y-%m-%d").to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(yaml: &str) -> ParamSpec {
        serde_yaml::from_str(yaml).expect("a parameter")
    }

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, 10, 20).unwrap()
    }

    #[test]
    fn each_value_is_read_once_into_its_type_and_given_to_the_tool_as_json() {
        let amount = spec("{ name: amount, type: number, min: 0 }");
        let read =
            |spec: &ParamSpec, written: &str| spec.read(written, today()).map(|v| v.to_json());
        assert_eq!(read(&amount, "1,000"), Ok(json!(1000)));
        assert_eq!(read(&amount, "1 000"), Ok(json!(1000)));
        assert_eq!(read(&amount, "25.00"), Ok(json!(25)));
        assert_eq!(read(&amount, "$30"), Ok(json!(30)));
        assert_eq!(read(&amount, "30 EUR"), Ok(json!(30)));
        assert_eq!(read(&amount, "12,50 €"), Ok(json!(12.5)));
        let tickets = spec("{ name: tickets, type: integer }");
        assert_eq!(read(&tickets, "3"), Ok(json!(3)));
        assert_eq!(read(&tickets, "3.00"), Ok(json!(3)));
        let when = spec("{ name: when, type: date }");
        assert_eq!(read(&when, "20 Oct 2025"), Ok(json!("2025-10-20")));
        assert_eq!(read(&when, "tomorrow"), Ok(json!("2025-10-21")));
        let order = spec(r#"{ name: order_id, pattern: 'O-\d{5}', example: O-12345 }"#);
        assert_eq!(read(&order, " O-12345 "), Ok(json!("O-12345")));
        assert_eq!(
            read(&ParamSpec::text("note"), " as is "),
            Ok(json!("as is"))
        );
    }

    #[test]
    fn a_plain_name_is_text_and_declarations_are_checked() {
        assert_eq!(spec("order_id"), ParamSpec::text("order_id"));
        let problems = |yaml: &str| -> Vec<&'static str> {
            spec(yaml)
                .problems()
                .into_iter()
                .map(|(key, _)| key)
                .collect()
        };
        assert_eq!(
            problems("{ name: a, type: number, min: 5, max: 1 }"),
            ["min"]
        );
        assert_eq!(problems("{ name: a, type: date, min: 1 }"), ["min"]);
        assert_eq!(
            problems("{ name: a, type: number, pattern: '\\d+' }"),
            ["pattern"]
        );
        assert_eq!(problems("{ name: ' ' }"), ["name"]);
        assert!(problems("{ name: a, type: integer, min: 1, max: 1 }").is_empty());
        let error = serde_yaml::from_str::<ParamSpec>("{ name: a, pattern: 'O-\\d{5' }")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("\"O-\\\\d{5\" is not a regular expression"),
            "{error}"
        );
        let error = serde_yaml::from_str::<ParamSpec>("{ name: a, type: float }")
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown variant `float`"), "{error}");
        let error = serde_yaml::from_str::<ParamSpec>("{ name: a, kind: number }")
            .unwrap_err()
            .to_string();
        assert!(error.contains("unknown field `kind`"), "{error}");
    }
}
