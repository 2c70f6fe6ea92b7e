//! What the text of `hearth.yaml` must be before it is typed: YAML that serde_yaml reads
//! (it names the line and column of a mistake, and refuses a key written twice in one
//! mapping), one document, a mapping at the top, and every mapping key text, a number or a
//! boolean, as the `config` crate that layers the file requires (it refuses any other key
//! without saying where).

use std::fmt;
use std::path::Path;

use serde::Deserializer;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::error::ConfigError;

/// Parses the text with serde_yaml first: it gives a line and column for syntax errors and,
/// unlike the `config` crate's parser, refuses a key written twice in one mapping instead of
/// silently keeping the last one.
pub(super) fn check_yaml_syntax(path: &Path, text: &str) -> Result<(), ConfigError> {
    let syntax_error = |line, column, message| ConfigError::Syntax {
        file: path.to_path_buf(),
        line,
        column,
        message,
    };
    match serde_yaml::from_str::<serde_yaml::Value>(text) {
        Ok(serde_yaml::Value::Mapping(_)) => keys_are_scalars(text)
            .map_err(|(line, column, message)| syntax_error(Some(line), Some(column), message)),
        // Nothing but comments is an empty configuration; a null written out (`~`, `null`,
        // an anchor alone, a document marker with nothing after it) is not a mapping.
        Ok(serde_yaml::Value::Null) => match first_content_line(text) {
            None => Ok(()),
            Some(line) => Err(syntax_error(
                Some(line),
                Some(1),
                "the top level must be a mapping of keys, found nothing".to_owned(),
            )),
        },
        Ok(other) => Err(syntax_error(
            Some(1),
            Some(1),
            format!(
                "the top level must be a mapping of keys, found {}",
                yaml_kind(&other)
            ),
        )),
        Err(error) => {
            // serde_yaml places every error but one: a second document (`---`) is refused
            // with no position, and is named here at the line that starts it.
            let (line, column) = match error.location() {
                Some(location) => (location.line(), location.column()),
                None => (second_document_line(text).unwrap_or(1), 1),
            };
            Err(syntax_error(Some(line), Some(column), error.to_string()))
        }
    }
}

/// The 1-based line where a second YAML document starts (`---` or `...` after the first
/// document's content), if one does.
fn second_document_line(text: &str) -> Option<usize> {
    let mut content_seen = false;
    for (index, line) in text.lines().enumerate() {
        let marker = line == "---" || line.starts_with("--- ") || line.starts_with("...");
        if marker && content_seen {
            return Some(index + 1);
        }
        let trimmed = line.trim_start();
        if !marker && !trimmed.is_empty() && !trimmed.starts_with('#') && !line.starts_with('%') {
            content_seen = true;
        }
    }
    None
}

fn yaml_kind(value: &serde_yaml::Value) -> &'static str {
    match value {
        serde_yaml::Value::Null => "nothing",
        serde_yaml::Value::Bool(_) => "a boolean",
        serde_yaml::Value::Number(_) => "a number",
        serde_yaml::Value::String(_) => "a string",
        serde_yaml::Value::Sequence(_) => "a list",
        serde_yaml::Value::Mapping(_) => "a mapping",
        serde_yaml::Value::Tagged(_) => "a tagged value",
    }
}

/// The 1-based line of the first thing that is not a comment or a blank: a document marker
/// alone (`---`) is a document holding null, which the `config` crate refuses too.
pub(super) fn first_content_line(text: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let trimmed = line.trim();
            !(trimmed.is_empty() || trimmed.starts_with('#'))
        })
        .map(|index| index + 1)
}

/// Walks the text with serde_yaml's own parser and refuses the first mapping key that is not
/// text, a number or a boolean (an empty key, an anchor alone, a list or a mapping as a
/// key), at its line and column.
fn keys_are_scalars(text: &str) -> Result<(), (usize, usize, String)> {
    let deserializer = serde_yaml::Deserializer::from_str(text);
    match ANY_VALUE.deserialize(deserializer) {
        Ok(()) => Ok(()),
        Err(error) => {
            let (line, column) = error
                .location()
                .map_or((1, 1), |location| (location.line(), location.column()));
            let message = error.to_string();
            let message = message
                .split_once(" at line ")
                .map_or(message.as_str(), |(before, _)| before)
                .to_owned();
            Err((line, column, message))
        }
    }
}

/// A YAML node as the `config` crate reads it; as a mapping key (`as_key`) only text, a
/// number or a boolean.
#[derive(Clone, Copy)]
struct Node {
    as_key: bool,
}

const ANY_VALUE: Node = Node { as_key: false };
const KEY: Node = Node { as_key: true };

impl Node {
    /// Refuses `what` where a key stands, accepts it elsewhere.
    fn not_as_key<E: de::Error>(self, what: de::Unexpected<'_>) -> Result<(), E> {
        match self.as_key {
            true => Err(E::invalid_type(what, &self)),
            false => Ok(()),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Node {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self.as_key {
            true => "a key that is text, a number or a boolean",
            false => "any value",
        })
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.not_as_key(de::Unexpected::Unit)
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.not_as_key(de::Unexpected::Option)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        self.not_as_key(de::Unexpected::Enum)?;
        // A tagged value (`!tag value`): the tag is no key; the value is read on.
        let (IgnoredAny, variant) = data.variant::<IgnoredAny>()?;
        de::VariantAccess::newtype_variant_seed(variant, ANY_VALUE)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        self.not_as_key(de::Unexpected::Seq)?;
        while items.next_element_seed(ANY_VALUE)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        self.not_as_key(de::Unexpected::Map)?;
        while entries.next_key_seed(KEY)?.is_some() {
            entries.next_value_seed(ANY_VALUE)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_document_is_named_at_the_line_that_starts_it() {
        // Found by the fuzz target `config_file`: serde_yaml refuses a second document
        // without a position, and the refusal named no line.
        let text =
            "# hearth\ndatabase_url: \"sqlite://data/hearth.db\"\n---\nhttp:\n  enabled: true\n";
        let error = check_yaml_syntax(Path::new("hearth.yaml"), text).unwrap_err();
        let ConfigError::Syntax { line, column, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!((*line, *column), (Some(3), Some(1)), "{error}");
        assert_eq!(second_document_line("---\na: 1\n...\n"), Some(3));
        assert_eq!(second_document_line("---\n# only a comment\n"), None);
    }

    #[test]
    fn a_key_that_is_not_text_a_number_or_a_boolean_is_named_at_its_line() {
        // Found by the fuzz target `config_file`: an anchor alone as a key (`&a : p`) is a
        // null key; the `config` crate refused it with no line ("Cannot parse Null because it
        // is an unsupported hash key type").
        let text = "http:\n  bind: 127.0.0.1:8080\n&htt : p\nport: 1\n";
        let error = check_yaml_syntax(Path::new("hearth.yaml"), text).unwrap_err();
        let ConfigError::Syntax {
            line,
            column,
            message,
            ..
        } = &error
        else {
            panic!("{error:?}");
        };
        assert_eq!(*line, Some(3), "{error}");
        assert!(column.is_some(), "{error}");
        assert!(message.contains("a key that is text"), "{error}");
        for key in ["? [a, b]\n: 1\n", "? {a: 1}\n: 2\n", "a:\n  ~: 1\n"] {
            assert!(
                check_yaml_syntax(Path::new("hearth.yaml"), key).is_err(),
                "{key}"
            );
        }
        for fine in [
            "a: 1\n1: x\ntrue: y\n1.5: z\n",
            "a: !tag {b: 1}\n",
            "",
            "# only a comment\n",
        ] {
            assert_eq!(
                check_yaml_syntax(Path::new("hearth.yaml"), fine).ok(),
                Some(()),
                "{fine}"
            );
        }
    }

    #[test]
    fn a_null_written_out_is_no_mapping_at_its_line() {
        // Found by the fuzz target `config_file`: `&1-2` (an anchor alone) reads as null,
        // which the `config` crate refused with no line.
        for (text, line) in [("&1-2", 1), ("# hearth\n~\n", 2), ("null\n", 1), ("---", 1)] {
            let error = check_yaml_syntax(Path::new("hearth.yaml"), text).unwrap_err();
            let ConfigError::Syntax {
                line: at, message, ..
            } = &error
            else {
                panic!("{error:?}");
            };
            assert_eq!(*at, Some(line), "{text:?}: {error}");
            assert!(message.contains("found nothing"), "{error}");
        }
    }
}
