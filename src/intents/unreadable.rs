//! A value that could not be read as its parameter's type (`params.rs`): what was written,
//! why it could not be read, and what the member is told when asked for it again, in
//! hearth's own words: what was wrong, and how to write it.

use super::params::{ParamSpec, ParamType, ParamValue};

/// A value that could not be read as its parameter's type: what was written and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub written: String,
    pub problem: Problem,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    Empty,
    NotANumber,
    AmbiguousNumber { decimal: f64, grouped: f64 },
    TooLong,
    NotWhole,
    BelowMin(f64),
    AboveMax(f64),
    NotMatching,
    NotADate,
    AmbiguousDate,
}

impl Problem {
    /// The problem as recorded in telemetry (never the value itself).
    pub fn code(&self) -> &'static str {
        match self {
            Problem::Empty => "empty",
            Problem::NotANumber => "not_a_number",
            Problem::AmbiguousNumber { .. } => "ambiguous_number",
            Problem::TooLong => "too_long",
            Problem::NotWhole => "not_whole",
            Problem::BelowMin(_) => "below_min",
            Problem::AboveMax(_) => "above_max",
            Problem::NotMatching => "not_matching",
            Problem::NotADate => "not_a_date",
            Problem::AmbiguousDate => "ambiguous_date",
        }
    }
}

/// A number as a member reads it: `1000`, `12.5`.
fn spoken_number(number: f64) -> String {
    ParamValue::Number(number).to_json().to_string()
}

/// At most 60 characters of what the member wrote, to quote it back.
fn quoted(written: &str) -> String {
    let mut shown: String = written.chars().take(60).collect();
    if written.chars().count() > 60 {
        shown.push('…');
    }
    format!("\"{shown}\"")
}

impl Unreadable {
    /// What the member is told when asked for `spec` again: what was wrong, and how to
    /// write it.
    pub fn ask_again(&self, spec: &ParamSpec) -> String {
        let name = spec.spoken_name();
        let written = quoted(&self.written);
        let like = |fallback: &str| spec.example.clone().unwrap_or_else(|| fallback.to_string());
        match &self.problem {
            Problem::Empty => format!("What is the {name}?"),
            Problem::NotANumber if spec.kind == ParamType::Integer => format!(
                "I couldn't read {written} as the {name}: please write it as a whole number, \
                 like {}.",
                like("3")
            ),
            Problem::NotANumber => format!(
                "I couldn't read {written} as the {name}: please write it as a number, like {}.",
                like("25 or 12.50")
            ),
            Problem::AmbiguousNumber { decimal, grouped } => format!(
                "I can't tell whether {written} means {} or {}: please write the {name} again, \
                 as {} or as {}.",
                spoken_number(*decimal),
                spoken_number(*grouped),
                spoken_number(*grouped),
                spoken_number(*decimal)
            ),
            Problem::TooLong => format!(
                "{written} has more digits than I can read exactly: please write the {name} \
                 again."
            ),
            Problem::NotWhole => format!(
                "I couldn't use {written} as the {name}: it must be a whole number, like {}.",
                like("3")
            ),
            Problem::BelowMin(min) => format!(
                "I can't use {written} as the {name}: it must be at least {}.",
                spoken_number(*min)
            ),
            Problem::AboveMax(max) => format!(
                "I can't use {written} as the {name}: it must be at most {}.",
                spoken_number(*max)
            ),
            Problem::NotMatching => match &spec.example {
                Some(example) => format!(
                    "{written} doesn't look like the {name} I need: please write it like \
                     {example}."
                ),
                None => format!(
                    "{written} doesn't look like the {name} I need: please check it and write \
                     it again."
                ),
            },
            Problem::NotADate => format!(
                "I couldn't read {written} as the {name}: please write the date like {}.",
                like("2025-10-20 or 20 October 2025")
            ),
            Problem::AmbiguousDate => format!(
                "I can't tell which day {written} is: please write the {name} like {}.",
                like("2025-10-20 or 20 October 2025")
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::NaiveDate;

    use super::*;

    fn spec(yaml: &str) -> ParamSpec {
        serde_yaml::from_str(yaml).expect("a parameter")
    }

    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2025, 10, 20).unwrap()
    }

    #[test]
    fn a_value_that_cannot_be_read_is_told_back_in_words() {
        let amount = spec("{ name: amount, type: number, min: 0, max: 500 }");
        let told = |spec: &ParamSpec, written: &str| {
            let unreadable = spec.read(written, today()).unwrap_err();
            (unreadable.problem.code(), unreadable.ask_again(spec))
        };
        assert_eq!(
            told(&amount, "1e3"),
            (
                "not_a_number",
                "I couldn't read \"1e3\" as the amount: please write it as a number, like 25 or \
                 12.50."
                    .to_string()
            )
        );
        for written in ["NaN", "inf", "", "lots", "30 euros"] {
            assert_eq!(told(&amount, written).0, "not_a_number", "{written:?}");
        }
        assert_eq!(
            told(&amount, "1.000"),
            (
                "ambiguous_number",
                "I can't tell whether \"1.000\" means 1 or 1000: please write the amount again, \
                 as 1000 or as 1."
                    .to_string()
            )
        );
        assert_eq!(
            told(&amount, "-5"),
            (
                "below_min",
                "I can't use \"-5\" as the amount: it must be at least 0.".to_string()
            )
        );
        assert_eq!(
            told(&amount, "1,000"),
            (
                "above_max",
                "I can't use \"1,000\" as the amount: it must be at most 500.".to_string()
            )
        );
        let tickets = spec("{ name: ticket_count, type: integer }");
        assert_eq!(
            told(&tickets, "2.5").1,
            "I couldn't use \"2.5\" as the ticket count: it must be a whole number, like 3."
        );
        let order = spec(r#"{ name: order_id, pattern: '^O-\d{5}$', example: O-12345 }"#);
        assert_eq!(
            told(&order, "12345"),
            (
                "not_matching",
                "\"12345\" doesn't look like the order id I need: please write it like O-12345."
                    .to_string()
            )
        );
        // Anchored: a match inside the value is not enough.
        assert_eq!(
            told(&spec(r"{ name: id, pattern: 'O-\d' }"), "xO-1y").0,
            "not_matching"
        );
        let when = spec("{ name: when, type: date }");
        assert_eq!(
            told(&when, "03/04/2025"),
            (
                "ambiguous_date",
                "I can't tell which day \"03/04/2025\" is: please write the when like 2025-10-20 \
                 or 20 October 2025."
                    .to_string()
            )
        );
        assert_eq!(told(&when, "someday").0, "not_a_date");
        let long = "9".repeat(80);
        assert!(
            told(&amount, &long)
                .1
                .starts_with(&format!("\"{}…\"", "9".repeat(60)))
        );
    }
}
