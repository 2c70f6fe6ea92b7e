//! Reading the YAML files that configuration names beside `hearth.yaml` (a plugin's
//! `plugin.yaml` and `config.yml`, a profile's intents file) so that every problem names its
//! file, line and key path: key paths (`capabilities[0].parameters[2].type`), the line of the
//! text each one is written on, the problem type, and typing a document with those.
//!
//! A file is first parsed into a `serde_yaml::Value` (syntax errors carry their line) and typed
//! from that value with `serde_path_to_error` (which names the key path but knows no lines);
//! the line is then found by walking the text again down that path with serde_yaml's own
//! parser, whose errors carry the position of the node they were raised at. The semantic
//! checks that run on the typed document find their lines the same way.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess,
    Visitor,
};

/// One thing wrong in a plugin file or an intents file (or in a manifest sent to the
/// registration API, which has no lines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginFileProblem {
    pub key_path: KeyPath,
    /// 1-based line in the file, when the problem comes from a file.
    pub line: Option<usize>,
    /// What is wrong, lowercase, naming the wrong value and what to do.
    pub message: String,
}

impl PluginFileProblem {
    pub(crate) fn new(key_path: KeyPath, message: impl Into<String>) -> Self {
        Self {
            key_path,
            line: None,
            message: message.into(),
        }
    }

    /// Sets the line from the file's text, where the key path can be found in it.
    pub(crate) fn located_in(mut self, text: &str) -> Self {
        if self.line.is_none() {
            self.line = yaml_line_of(text, &self.key_path);
        }
        self
    }
}

impl fmt::Display for PluginFileProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.key_path, self.message)
    }
}

/// Problems of one file, one per line as `file:line: key.path: message`, the way compilers
/// print them so that editors and terminals can jump to the line.
pub(crate) struct ProblemLines<'a> {
    pub(crate) file: &'a Path,
    pub(crate) problems: &'a [PluginFileProblem],
}

impl fmt::Display for ProblemLines<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, problem) in self.problems.iter().enumerate() {
            if position > 0 {
                formatter.write_str("\n")?;
            }
            write!(formatter, "{}", self.file.display())?;
            if let Some(line) = problem.line {
                write!(formatter, ":{line}")?;
            }
            write!(formatter, ": {problem}")?;
        }
        Ok(())
    }
}

/// Types a YAML document, or says where it is not YAML or not of the expected shape (the
/// first such problem: serde stops there). An empty file reads as an empty mapping.
pub(crate) fn parse_yaml_document<T: DeserializeOwned>(text: &str) -> Result<T, PluginFileProblem> {
    let value = match serde_yaml::from_str::<serde_yaml::Value>(text) {
        Ok(serde_yaml::Value::Null) => serde_yaml::Value::Mapping(serde_yaml::Mapping::new()),
        Ok(value) => value,
        Err(error) => {
            let location = error.location();
            let full_message = error.to_string();
            // serde_yaml appends the position to its message; the problem carries it already.
            let message = location
                .as_ref()
                .and_then(|location| {
                    full_message
                        .strip_suffix(&format!(
                            " at line {} column {}",
                            location.line(),
                            location.column()
                        ))
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| full_message.clone());
            return Err(PluginFileProblem {
                key_path: KeyPath::root(),
                line: location.map(|location| within_text(text, location.line())),
                message: format!("invalid yaml: {message}"),
            });
        }
    };
    serde_path_to_error::deserialize(value).map_err(|error| {
        PluginFileProblem::new(
            KeyPath::from_serde_path(error.path()),
            error.inner().to_string(),
        )
        .located_in(text)
    })
}

/// Types a JSON document (a manifest sent to the registration API) with the key path of the
/// first value that does not fit.
pub(crate) fn parse_json_document<T: DeserializeOwned>(
    value: serde_json::Value,
) -> Result<T, PluginFileProblem> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        PluginFileProblem::new(
            KeyPath::from_serde_path(error.path()),
            error.inner().to_string(),
        )
    })
}

/// For keys written with nothing after them (`parameters:`, `family:`), which YAML reads as
/// null: they mean "none", like leaving the key out, instead of a type error.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// One step of a key path: a mapping key or a list index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySegment {
    Key(String),
    Index(usize),
}

/// Where a value sits in a plugin file; displayed as `capabilities[0].parameters[2].type`,
/// or `(top level)` for the whole document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath {
    segments: Vec<KeySegment>,
}

impl KeyPath {
    /// The whole document.
    pub fn root() -> Self {
        Self::default()
    }

    /// This path followed by a mapping key.
    pub fn key(&self, key: impl Into<String>) -> Self {
        let mut segments = self.segments.clone();
        segments.push(KeySegment::Key(key.into()));
        Self { segments }
    }

    /// This path followed by a list index.
    pub fn index(&self, index: usize) -> Self {
        let mut segments = self.segments.clone();
        segments.push(KeySegment::Index(index));
        Self { segments }
    }

    /// This path followed by `relative`, a path hearth's own checks write (`params[0].value`,
    /// `time.from`): split at its dots and indexes. Never for keys a file wrote, which may
    /// hold dots themselves: those go in whole with [`KeyPath::key`].
    pub fn then(&self, relative: &str) -> Self {
        let mut path = self.clone();
        for part in relative.split('.') {
            let (name, indexes) = part.split_once('[').unwrap_or((part, ""));
            if !name.is_empty() {
                path = path.key(name);
            }
            for index in indexes.split('[') {
                if let Ok(index) = index.trim_end_matches(']').parse() {
                    path = path.index(index);
                }
            }
        }
        path
    }

    pub fn segments(&self) -> &[KeySegment] {
        &self.segments
    }

    /// The path that `serde_path_to_error` reports. Enum variants are not keys of the file,
    /// and nothing below a non-string key can be named, so the path stops there.
    pub(crate) fn from_serde_path(path: &serde_path_to_error::Path) -> Self {
        let mut segments = Vec::new();
        for segment in path {
            match segment {
                serde_path_to_error::Segment::Seq { index } => {
                    segments.push(KeySegment::Index(*index));
                }
                serde_path_to_error::Segment::Map { key } => {
                    segments.push(KeySegment::Key(key.clone()));
                }
                serde_path_to_error::Segment::Enum { .. } => {}
                serde_path_to_error::Segment::Unknown => break,
            }
        }
        Self { segments }
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.segments.is_empty() {
            return formatter.write_str("(top level)");
        }
        for (position, segment) in self.segments.iter().enumerate() {
            match segment {
                KeySegment::Key(key) => {
                    if position > 0 {
                        formatter.write_str(".")?;
                    }
                    write_key(formatter, key)?;
                }
                KeySegment::Index(index) => write!(formatter, "[{index}]")?,
            }
        }
        Ok(())
    }
}

/// A key as a path shows it: bare when it is a name (`llm_model`, `home-assistant`), quoted
/// otherwise, so that a key written as `.1:http` or `a b` or `""` cannot be read as two steps
/// of the path or as none.
fn write_key(formatter: &mut fmt::Formatter<'_>, key: &str) -> fmt::Result {
    let is_name = !key.is_empty()
        && key
            .chars()
            .all(|character| character.is_alphanumeric() || matches!(character, '_' | '-'));
    if is_name {
        formatter.write_str(key)
    } else {
        write!(formatter, "{key:?}")
    }
}

/// The 1-based line of `path` in the YAML `text`: the line of the last key when the path ends
/// with a key, of the list item when it ends with an index. A path that goes further than the
/// text (a missing key) gives the line of the deepest node that exists, so a "missing field"
/// problem points at the mapping that lacks it.
pub(crate) fn yaml_line_of(text: &str, path: &KeyPath) -> Option<usize> {
    let deserializer = serde_yaml::Deserializer::from_str(text);
    // The walk always ends in an error: it is the error's position that we are after.
    match (LocateSeed {
        rest: path.segments(),
    })
    .deserialize(deserializer)
    {
        Ok(()) => None,
        Err(error) => error
            .location()
            .map(|location| within_text(text, location.line())),
    }
}

/// A line serde_yaml names, as a line of `text`: at the end of a text (one without a final
/// line break, or holding only comments) serde_yaml names the line after the last, and the
/// reader looks for the last.
fn within_text(text: &str, line: usize) -> usize {
    line.min(text.split('\n').count())
}

/// The error the walk raises where the path ends; serde_yaml stamps it with that node's mark.
fn found<E: de::Error>() -> E {
    E::custom("key path located")
}

struct LocateSeed<'path> {
    rest: &'path [KeySegment],
}

impl<'de> DeserializeSeed<'de> for LocateSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(LocateVisitor { rest: self.rest })
    }
}

/// Visits one node. Scalars are left to the default `visit_*` methods: each of them returns
/// an error, which is exactly what ends the walk at a scalar.
struct LocateVisitor<'path> {
    rest: &'path [KeySegment],
}

impl<'de> Visitor<'de> for LocateVisitor<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any yaml node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((KeySegment::Key(wanted), deeper)) = self.rest.split_first() else {
            return Err(found());
        };
        while let Some(is_wanted) = map.next_key_seed(KeySeed {
            wanted,
            stop_at_key: deeper.is_empty(),
        })? {
            if is_wanted {
                map.next_value_seed(LocateSeed { rest: deeper })?;
                return Err(found());
            }
            map.next_value::<IgnoredAny>()?;
        }
        Err(found())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((KeySegment::Index(wanted), deeper)) = self.rest.split_first() else {
            return Err(found());
        };
        for _ in 0..*wanted {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Err(found());
            }
        }
        seq.next_element_seed(LocateSeed { rest: deeper })?;
        Err(found())
    }
}

/// Reads one mapping key and says whether it is the wanted one. When the path ends at that
/// key, it raises the "found" error while the key is the current node, so the position is
/// the key's own (the line a reader looks for), not its value's.
struct KeySeed<'path> {
    wanted: &'path str,
    stop_at_key: bool,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl KeySeed<'_> {
    fn matches<E: de::Error>(&self, key: &str) -> Result<bool, E> {
        let is_wanted = key == self.wanted;
        if is_wanted && self.stop_at_key {
            return Err(found());
        }
        Ok(is_wanted)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = bool;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a mapping key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        self.matches(key)
    }

    fn visit_bool<E: de::Error>(self, key: bool) -> Result<bool, E> {
        self.matches(&key.to_string())
    }

    fn visit_i64<E: de::Error>(self, key: i64) -> Result<bool, E> {
        self.matches(&key.to_string())
    }

    fn visit_u64<E: de::Error>(self, key: u64) -> Result<bool, E> {
        self.matches(&key.to_string())
    }

    fn visit_f64<E: de::Error>(self, key: f64) -> Result<bool, E> {
        self.matches(&key.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
id: buy
capabilities:
  - id: place_order
    parameters:
      - name: item
        type: string
      - { name: address, type: strng }
";

    fn line(path: KeyPath) -> Option<usize> {
        yaml_line_of(TEXT, &path)
    }

    #[test]
    fn a_problem_at_the_end_of_the_text_is_on_its_last_line() {
        // Found by the fuzz targets `intents_file` and `plugin_manifest`: a file of comments
        // only, without a final line break, was refused at "line 2" of a one-line file.
        let text = "# The intents of a profile (no final line break)";
        let problem = parse_yaml_document::<MustHaveId>(text).unwrap_err();
        assert_eq!(problem.line, Some(1), "{problem}");
        let text = "# a plugin\n# call as JSON{\n ";
        let problem = parse_yaml_document::<MustHaveId>(text).unwrap_err();
        assert_eq!(problem.line, Some(3), "{problem}");
    }

    #[derive(Debug, serde::Deserialize)]
    struct MustHaveId {
        #[allow(dead_code)]
        id: String,
    }

    #[test]
    fn a_key_that_is_not_a_name_is_quoted_so_the_path_reads_one_way() {
        let path = KeyPath::root()
            .key(".1:http")
            .index(0)
            .key("a b")
            .key("")
            .key("llm_model");
        assert_eq!(path.to_string(), r#"".1:http"[0]."a b"."".llm_model"#);
        let rule = KeyPath::root().key("policy").key("rules").index(1);
        assert_eq!(
            rule.then("params[0].value").to_string(),
            "policy.rules[1].params[0].value"
        );
        assert_eq!(
            rule.then("time.from").to_string(),
            "policy.rules[1].time.from"
        );
        assert_eq!(
            KeyPath::root().key("home-assistant").to_string(),
            "home-assistant"
        );
    }

    #[test]
    fn an_error_at_the_end_of_a_file_without_a_last_line_break_names_its_last_line() {
        // Found by the fuzz targets `plugin_manifest` and `intents_file`: serde_yaml named
        // the line after the last ("line 31" of a 30-line file).
        let problem = parse_yaml_document::<serde_yaml::Value>("a: [\n  {b: 1}").unwrap_err();
        assert_eq!(problem.line, Some(2), "{}", problem.message);
        let problem = parse_yaml_document::<serde_yaml::Value>("a: [\n  {b: 1}\n").unwrap_err();
        assert!(problem.line <= Some(3), "{:?}", problem.line);
    }

    #[test]
    fn key_paths_display_like_the_files_read() {
        let path = KeyPath::root()
            .key("capabilities")
            .index(0)
            .key("parameters")
            .index(2)
            .key("type");
        assert_eq!(path.to_string(), "capabilities[0].parameters[2].type");
        assert_eq!(KeyPath::root().to_string(), "(top level)");
    }

    #[test]
    fn lines_are_found_for_keys_items_and_flow_mappings() {
        let parameters = KeyPath::root()
            .key("capabilities")
            .index(0)
            .key("parameters");
        assert_eq!(line(KeyPath::root().key("id")), Some(1));
        assert_eq!(line(KeyPath::root().key("capabilities")), Some(2));
        assert_eq!(line(parameters.index(0).key("type")), Some(6));
        assert_eq!(line(parameters.index(1)), Some(7));
        assert_eq!(line(parameters.index(1).key("type")), Some(7));
    }

    #[test]
    fn a_path_past_the_text_points_at_the_deepest_node_that_exists() {
        let first_capability = KeyPath::root().key("capabilities").index(0);
        assert_eq!(line(first_capability.key("description")), Some(3));
        assert_eq!(line(KeyPath::root().key("capabilities").index(5)), Some(3));
    }
}
