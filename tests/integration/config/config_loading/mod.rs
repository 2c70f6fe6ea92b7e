//! Loading `hearth.yaml` from real files: the example configuration (`example.rs`), seed
//! 004's profile merging (`profiles.rs`), the file's shape and `HEARTH__*` overrides
//! (`shape.rs`), the message of every validation error, several reported together
//! (`validation.rs`), secrets from the environment (`secrets.rs`), voice notes'
//! (`voice_notes.rs`) and memory's (`memory.rs`) entries of `llms`. The helpers that
//! write a config and read its errors are here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hearth::config::*;
use tempfile::TempDir;

mod example;
mod memory;
mod profiles;
mod secrets;
mod shape;
mod test_config;
mod validation;
mod voice_notes;

/// The local tools this build knows: seed 004's examples (`add_or_update_note`,
/// `modify_calendar_event`) are real tools.
pub(super) const KNOWN_LOCAL_TOOLS: &[&str] = hearth::tools::LOCAL_TOOL_NAMES;

/// Enough for a configuration to load: one LLM named `main` (no key) and the HTTP API without
/// auth. Cases add their own sections after it.
pub(super) const MINIMAL: &str = r#"
http: { auth_enabled: false }
llms:
  main: { provider: openai, base_url: "http://127.0.0.1:8081/v1", model: test-model, backend: local }
"#;

/// A config file in its own temporary directory; the directory lives as long as the value.
pub(super) struct ConfigFile {
    _directory: TempDir,
    pub(super) path: PathBuf,
}

pub(super) fn write_config(text: &str) -> ConfigFile {
    let directory = tempfile::tempdir().expect("temporary directory");
    let path = directory.path().join("hearth.yaml");
    std::fs::write(&path, text).expect("write the config file");
    ConfigFile {
        _directory: directory,
        path,
    }
}

pub(super) fn environment(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

pub(super) fn load_from(
    path: &Path,
    env: &BTreeMap<String, String>,
) -> Result<LoadedConfig, ConfigError> {
    load_with_env(
        path,
        env,
        &LoadOptions {
            known_local_tools: KNOWN_LOCAL_TOOLS,
            local_model: false,
        },
    )
}

pub(super) fn load_text(text: &str, env: &[(&str, &str)]) -> LoadedConfig {
    let file = write_config(text);
    load_from(&file.path, &environment(env))
        .unwrap_or_else(|error| panic!("the config should load, got:\n{error}"))
}

/// Loads a config that must fail; returns the message and the file's path as displayed.
pub(super) fn load_error(text: &str, env: &[(&str, &str)]) -> (String, String) {
    let file = write_config(text);
    match load_from(&file.path, &environment(env)) {
        Ok(loaded) => panic!("the config should be refused, got {loaded:?}"),
        Err(error) => (error.to_string(), file.path.display().to_string()),
    }
}

/// Asserts that one line of the message is `file: key_path: ...` and contains `fragment`.
pub(super) fn assert_problem(message: &str, file: &str, key_path: &str, fragment: &str) {
    let prefix = format!("{file}: {key_path}: ");
    assert!(
        message
            .lines()
            .any(|line| line.starts_with(&prefix) && line.contains(fragment)),
        "expected a line starting with {prefix:?} containing {fragment:?} in:\n{message}"
    );
}

pub(super) fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/hearth.example.yaml")
}

pub(super) const EXAMPLE_SECRETS: &[(&str, &str)] = &[
    ("OPENAI_API_KEY", "sk-test-openai"),
    ("HEARTH_API_KEY", "test-api-key"),
];
