//! JSON that two correct readers may read differently: an object naming a key twice
//! (RFC 8259 leaves which one counts to the reader). Telegram and a Matrix homeserver never
//! send it (Matrix's canonical JSON forbids it), so a target checks hearth's reading only of
//! JSON without it.

use std::collections::HashSet;
use std::fmt;

use serde::Deserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Whether some object in `json` names a key twice; `false` for text that is not JSON.
pub fn has_duplicate_keys(json: &str) -> bool {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    match Walk.deserialize(&mut deserializer) {
        Ok(()) => false,
        Err(error) => error.to_string().starts_with(DUPLICATE),
    }
}

const DUPLICATE: &str = "a key named twice";

struct Walk;

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
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
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(Walk)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = entries.next_key::<String>()? {
            if !seen.insert(key) {
                return Err(serde::de::Error::custom(DUPLICATE));
            }
            entries.next_value_seed(Walk)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_named_twice_is_found_at_any_depth() {
        assert!(has_duplicate_keys(r#"{"a": 1, "a": 2}"#));
        assert!(has_duplicate_keys(r#"{"a": {"b": [{"c": 1, "c": 1}]}}"#));
        assert!(!has_duplicate_keys(r#"{"a": 1, "b": {"a": 2}}"#));
        assert!(!has_duplicate_keys("not json"));
    }
}
