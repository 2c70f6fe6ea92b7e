//! Turning the file and the `HEARTH__*` environment variables into a typed [`HearthConfig`]:
//! reading, YAML syntax, layering with the `config` crate, and deserializing with the key path
//! of any value that does not fit.
//!
//! Environment overrides: `HEARTH__HTTP__BIND=0.0.0.0:9000` sets `http.bind`; each `__` goes one
//! level down; values that read as a bool or a number are typed as such. Two additions to what
//! the `config` crate does on its own:
//! - a number segment right after `service_profiles` or `family` is a list index
//!   (`HEARTH__SERVICE_PROFILES__1__PROCESSING_CONFIG__LLM_MODEL=local`), because the crate
//!   would otherwise replace the whole list with a map;
//! - the list-valued keys (`enable_local_tools`, `confirm_tools`, `slash_commands`, ...) take a
//!   comma-separated value.
//!
//! Limits: variable names are case-insensitive, so an override reaches a map entry (an LLM, an
//! MCP server) only when the entry's name is lowercase in the file; an empty variable counts as
//! unset, because a compose file's `${VAR}` expanding to nothing is an accident far more often
//! than a wish to set a key to "".

use std::collections::BTreeMap;
use std::path::Path;

use ::config::{Config, Environment, File, FileFormat, Map, Source, Value, ValueKind};

use super::error::{ConfigError, ConfigProblem, Problems};
use super::types::HearthConfig;
use super::yaml_file::KeyPath;
use super::yaml_syntax::{check_yaml_syntax, first_content_line};

/// The prefix of override variables, with its separator. `HEARTH_CONFIG` (one underscore), the
/// CLI's path variable, does not match and is never read as a key.
const OVERRIDE_PREFIX: &str = "HEARTH__";

/// Top-level keys that hold lists, where a number segment is an index into the list.
const LIST_SECTIONS: &[&str] = &["service_profiles", "family"];

/// Keys whose value is a list of names; their override is split on commas.
const LIST_VALUED_KEYS: &[&str] = &[
    "enable_local_tools",
    "enable_mcp_server_ids",
    "confirm_tools",
    "slash_commands",
    "args",
    "trusted_proxies",
];

/// One `HEARTH__*` variable and the key it sets, so a problem at that key can say where the
/// wrong value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvOverride {
    pub(crate) variable: String,
    /// Dotted key path as reported in problems, e.g. `service_profiles[1].id`.
    pub(crate) key_path: String,
}

/// Names the variable that set `key_path` (or a key above it), if one did.
pub(crate) fn override_source<'a>(overrides: &'a [EnvOverride], key_path: &str) -> Option<&'a str> {
    overrides
        .iter()
        .find(|env_override| {
            key_path == env_override.key_path
                || key_path
                    .strip_prefix(env_override.key_path.as_str())
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
        })
        .map(|env_override| env_override.variable.as_str())
}

/// The file's typed content with the overrides applied, and the overrides themselves.
pub(crate) struct RawConfig {
    pub(crate) config: HearthConfig,
    pub(crate) overrides: Vec<EnvOverride>,
}

/// Reads `path`, applies the `HEARTH__*` entries of `env` on top, and types the result.
pub(crate) fn read_config(
    path: &Path,
    env: &BTreeMap<String, String>,
) -> Result<RawConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    check_yaml_syntax(path, &text)?;

    let (environment_source, overrides) = environment_source(env);
    let layered = Config::builder()
        .add_source(File::from_str(&text, FileFormat::Yaml))
        .add_source(environment_source)
        .build()
        .map_err(|error| match error {
            ::config::ConfigError::FileParse { cause, .. } => {
                let message = cause.to_string();
                // The `config` crate's parser names no place for what it refuses of the
                // whole document (it read `&-::` as an anchored nothing, where serde_yaml
                // read a mapping): the document's first line is the place then.
                let (line, column) = position_in_message(&message)
                    .unwrap_or_else(|| (first_content_line(&text).unwrap_or(1), 1));
                ConfigError::Syntax {
                    file: path.to_path_buf(),
                    line: Some(line),
                    column: Some(column),
                    message,
                }
            }
            other => ConfigError::Environment {
                file: path.to_path_buf(),
                message: other.to_string(),
            },
        })?;

    let config = typed_config(layered).map_err(|problems| ConfigError::Invalid {
        file: path.to_path_buf(),
        problems: with_override_sources(problems, &overrides),
    })?;
    Ok(RawConfig { config, overrides })
}

/// Types the layered configuration. Each top-level section is typed on its own first, so that
/// a mistake in `llms` and another in `queue` are reported together (within one section, the
/// first mistake stops the typing).
fn typed_config(layered: Config) -> Result<HearthConfig, Vec<ConfigProblem>> {
    let mut problems = Problems::default();
    let sections = layered.collect().map_err(|error| {
        vec![ConfigProblem::new(
            "(top level)",
            describe_config_error("(top level)".to_owned(), &error).1,
        )]
    })?;
    let mut section_names: Vec<&String> = sections.keys().collect();
    section_names.sort();
    for name in section_names {
        let section_only = Map::from_iter([(name.clone(), sections[name].clone())]);
        let value = Value::new(None, ValueKind::Table(section_only));
        if let Err(error) = serde_path_to_error::deserialize::<_, HearthConfig>(value) {
            let (key_path, message) =
                describe_config_error(display_key_path(error.path()), error.inner());
            problems.push(key_path, message);
        }
    }
    if !problems.is_empty() {
        return Err(problems.into_vec());
    }
    serde_path_to_error::deserialize(layered).map_err(|error| {
        let (key_path, message) =
            describe_config_error(display_key_path(error.path()), error.inner());
        vec![ConfigProblem::new(key_path, message)]
    })
}

/// Adds to each problem the `HEARTH__*` variable that set its key, if one did: the file is
/// not where that value has to be fixed.
pub(crate) fn with_override_sources(
    problems: Vec<ConfigProblem>,
    overrides: &[EnvOverride],
) -> Vec<ConfigProblem> {
    problems
        .into_iter()
        .map(|mut problem| {
            if let Some(variable) = override_source(overrides, &problem.key_path) {
                problem
                    .message
                    .push_str(&format!(" (set by environment variable {variable})"));
            }
            problem
        })
        .collect()
}

/// The position the `config` crate's YAML parser writes into its message (`... at byte 11558
/// line 193 column 63`): it refuses a little that serde_yaml lets through, and gives the
/// position only in words.
fn position_in_message(message: &str) -> Option<(usize, usize)> {
    let (_, rest) = message.rsplit_once(" line ")?;
    let (line, rest) = rest.split_once(" column ")?;
    let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((line.trim().parse().ok()?, column.parse().ok()?))
}

/// The `config` crate source for the `HEARTH__*` entries of `env`, with list indexes rewritten
/// into the crate's `[n]` path syntax, and the key each entry sets.
fn environment_source(env: &BTreeMap<String, String>) -> (Environment, Vec<EnvOverride>) {
    let mut source_entries = Map::new();
    let mut overrides = Vec::new();
    let mut list_keys = Vec::new();
    for (variable, value) in env {
        let Some(key) = strip_prefix_ignore_case(variable, OVERRIDE_PREFIX) else {
            continue;
        };
        if value.is_empty() || key.is_empty() {
            continue;
        }
        let segments = key_segments(key);
        let key_path = segments.join(".").replace(".[", "[");
        let mut value = value.clone();
        if segments
            .last()
            .is_some_and(|last| LIST_VALUED_KEYS.contains(&last.as_str()))
        {
            list_keys.push(key_path.clone());
            // `a, b` as people write lists: the names, never their spaces.
            value = value
                .split(',')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(",");
        }
        // The crate lowercases the name, drops the prefix and turns `__` into `.`; joining the
        // segments back with `__` keeps the `[n]` index attached to its list's name.
        let rewritten = format!(
            "{OVERRIDE_PREFIX}{}",
            segments.join("__").replace("__[", "[")
        );
        source_entries.insert(rewritten, value);
        overrides.push(EnvOverride {
            variable: variable.clone(),
            key_path,
        });
    }

    let mut environment = Environment::with_prefix("HEARTH")
        .separator("__")
        .try_parsing(true)
        .ignore_empty(true);
    // Only with named list keys: a list separator alone would split every value on commas,
    // including a system prompt's.
    if !list_keys.is_empty() {
        environment = environment.list_separator(",");
        for list_key in &list_keys {
            environment = environment.with_list_parse_key(list_key);
        }
    }
    (environment.source(Some(source_entries)), overrides)
}

/// Splits the part after the prefix into lowercase segments, writing a list index as `[n]`.
fn key_segments(key: &str) -> Vec<String> {
    let mut segments: Vec<String> = Vec::new();
    for raw_segment in key.split("__") {
        let segment = raw_segment.to_lowercase();
        let follows_list = segments.len() == 1 && LIST_SECTIONS.contains(&segments[0].as_str());
        if follows_list && !segment.is_empty() && segment.bytes().all(|byte| byte.is_ascii_digit())
        {
            segments.push(format!("[{segment}]"));
        } else {
            segments.push(segment);
        }
    }
    segments
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// The key path `serde_path_to_error` found, as hearth shows every key path (`(top level)`
/// for the whole file, odd keys quoted, nothing below a key that is not a string).
pub(crate) fn display_key_path(path: &serde_path_to_error::Path) -> String {
    KeyPath::from_serde_path(path).to_string()
}

/// The key path and message for an error of the `config` crate's deserializer. Its errors carry
/// their own copy of the key in their text; the path from `serde_path_to_error` is the one
/// reported, so only the bare reason is kept here.
fn describe_config_error(key_path: String, error: &::config::ConfigError) -> (String, String) {
    match error {
        ::config::ConfigError::At { error, .. } => describe_config_error(key_path, error),
        ::config::ConfigError::NotFound(key) => {
            // The crate builds the missing key's path as `parent.child` or `list[0]child`.
            let field = key.rsplit(['.', ']']).next().unwrap_or(key);
            let missing_path = if key_path == "(top level)" {
                field.to_owned()
            } else {
                format!("{key_path}.{field}")
            };
            (missing_path, "missing, and this key is required".to_owned())
        }
        ::config::ConfigError::Type {
            unexpected,
            expected,
            ..
        } => (
            key_path,
            format!("invalid type: {unexpected}, expected {expected}"),
        ),
        other => (key_path, describe_serde_message(&other.to_string())),
    }
}

/// Rewords serde's "unknown field" in the file's own vocabulary: YAML has keys, not fields.
pub(crate) fn describe_serde_message(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("unknown field `")
        && let Some((_, expected)) = rest.split_once("`, ")
    {
        let expected = expected
            .strip_prefix("expected ")
            .map(|names| format!("expected {names}"))
            .unwrap_or_else(|| "this section takes no keys".to_owned());
        return format!("unknown key ({expected})");
    }
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        return format!("unknown value {rest}");
    }
    message.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_value_only_the_config_parser_refuses_is_named_at_its_line() {
        // Found by the fuzz target `config_file`: serde_yaml reads this quoted value's
        // indentation, the `config` crate's parser refuses it, and the refusal named no line.
        assert_eq!(
            position_in_message(
                "invalid indentation in quoted scalar at byte 11558 line 193 column 63"
            ),
            Some((193, 63))
        );
        assert_eq!(position_in_message("no position here"), None);
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("hearth.yaml");
        std::fs::write(&path, "a:\n  - id: x\n    description: \"Short\n  # rt\"\n").unwrap();
        let Err(error) = read_config(&path, &BTreeMap::new()) else {
            panic!("the quoted value was read");
        };
        let ConfigError::Syntax { line, column, .. } = &error else {
            panic!("{error:?}");
        };
        assert!(line.is_some() && column.is_some(), "{error}");
    }

    #[test]
    fn a_document_the_two_yaml_readers_read_apart_is_named_at_its_first_line() {
        // Found by the fuzz target `config_file` (its unoptimised build): serde_yaml reads
        // `&-::` as a mapping, the `config` crate's parser as an anchored nothing, which it
        // refused naming no line.
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("hearth.yaml");
        std::fs::write(&path, "# hearth\n&-::").unwrap();
        let Err(error) = read_config(&path, &BTreeMap::new()) else {
            panic!("the document was read");
        };
        let ConfigError::Syntax { line, column, .. } = &error else {
            panic!("{error:?}");
        };
        assert_eq!((*line, *column), (Some(2), Some(1)), "{error}");
    }

    #[test]
    fn a_key_that_is_not_a_name_is_shown_quoted_in_its_path() {
        // Found by the fuzz target `config_file`: the unknown top-level key `.1:http` was
        // named as the path `.1:http`, which reads as an empty step and another key.
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("hearth.yaml");
        std::fs::write(&path, ".1:http:\n  bind\n").unwrap();
        let options = crate::config::LoadOptions {
            known_local_tools: &[],
            local_model: false,
        };
        let Err(ConfigError::Invalid { problems, .. }) =
            crate::config::load_with_env(&path, &BTreeMap::new(), &options)
        else {
            panic!("the unknown key was not refused");
        };
        let paths: Vec<&str> = problems.iter().map(|p| p.key_path.as_str()).collect();
        assert!(paths.contains(&"\".1:http\""), "{paths:?}");
    }
}
