//! `manifest.json` of the scripts folder: the family's scripts, each with its program,
//! its parameters and their types. Read once at start-up; a bad entry stops hearth (and
//! `hearth check-config`) naming the file, the entry's index and the key.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::parameters::check_value;
use crate::config::KeyPath;

/// The manifest's file name inside the scripts folder.
pub const MANIFEST_FILE: &str = "manifest.json";

/// How a script's file is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptKind {
    /// `python3 <path>`.
    Python,
    /// `sh <path>`.
    Shell,
    /// The file itself, which must be executable.
    Executable,
}

/// The type of a parameter's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParameterKind {
    String,
    Number,
    Boolean,
    /// One of the parameter's `options`.
    Enum,
}

/// One parameter of a script, as the manifest declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptParameter {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ParameterKind,
    /// The allowed values of an `enum` parameter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub description: String,
}

/// One script of the manifest, checked: its `path` is a file inside the folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    pub name: String,
    pub description: String,
    /// Relative to the scripts folder, never leaving it.
    pub path: String,
    #[serde(rename = "type")]
    pub kind: ScriptKind,
    #[serde(default)]
    pub parameters: Vec<ScriptParameter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
    /// Every run is approved by the member; `false` is refused.
    #[serde(default = "always")]
    pub confirm: bool,
}

fn always() -> bool {
    true
}

impl Script {
    pub fn parameter(&self, name: &str) -> Option<&ScriptParameter> {
        self.parameters
            .iter()
            .find(|parameter| parameter.name == name)
    }
}

/// The key path of a problem of the whole document, as the configuration's errors say it.
const TOP_LEVEL: &str = "(top level)";

/// Why the scripts folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{}: cannot read the scripts manifest: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Every problem found, one per line: `file: [index].key: what is wrong`.
    #[error("{}", lines(file, problems))]
    Invalid {
        file: PathBuf,
        problems: Vec<(String, String)>,
    },
}

fn lines(file: &Path, problems: &[(String, String)]) -> String {
    problems
        .iter()
        .map(|(key, message)| format!("{}: {key}: {message}", file.display()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The scripts of a folder, checked.
#[derive(Debug, Clone)]
pub struct ScriptCatalog {
    folder: PathBuf,
    scripts: Vec<Script>,
}

impl ScriptCatalog {
    /// Read and check `<folder>/manifest.json` (off the async runtime's threads).
    pub async fn load(folder: &Path) -> Result<ScriptCatalog, ManifestError> {
        let folder = folder.to_path_buf();
        tokio::task::spawn_blocking(move || Self::load_blocking(&folder))
            .await
            .unwrap_or_else(|error| {
                Err(ManifestError::Invalid {
                    file: PathBuf::from(MANIFEST_FILE),
                    problems: vec![(TOP_LEVEL.to_owned(), format!("reading stopped: {error}"))],
                })
            })
    }

    fn load_blocking(folder: &Path) -> Result<ScriptCatalog, ManifestError> {
        let file = folder.join(MANIFEST_FILE);
        let bytes = std::fs::read(&file).map_err(|source| ManifestError::Read {
            file: file.clone(),
            source,
        })?;
        let invalid = |problems| ManifestError::Invalid {
            file: file.clone(),
            problems,
        };
        let text = String::from_utf8(bytes).map_err(|error| {
            invalid(vec![(
                TOP_LEVEL.to_owned(),
                format!(
                    "not UTF-8 text (byte {} is not): save it as UTF-8",
                    error.utf8_error().valid_up_to()
                ),
            )])
        })?;
        let mut deserializer = serde_json::Deserializer::from_str(&text);
        let scripts: Vec<Script> =
            serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
                let key = KeyPath::from_serde_path(error.path()).to_string();
                invalid(vec![(key, error.into_inner().to_string())])
            })?;
        let root = folder
            .canonicalize()
            .map_err(|source| ManifestError::Read {
                file: folder.to_path_buf(),
                source,
            })?;
        let mut problems = Vec::new();
        let mut names = BTreeSet::new();
        for (index, script) in scripts.iter().enumerate() {
            let mut problem = |key: &str, message: String| {
                problems.push((format!("[{index}].{key}"), message));
            };
            if !is_identifier(&script.name) {
                problem(
                    "name",
                    format!(
                        "{:?} must be letters, digits, '_' or '-' (at most 64)",
                        script.name
                    ),
                );
            } else if !names.insert(script.name.clone()) {
                problem(
                    "name",
                    format!("{:?} is used by an earlier script", script.name),
                );
            }
            if script.description.trim().is_empty() {
                problem("description", "must not be empty".into());
            }
            if let Err(message) = check_path(&root, &script.path, script.kind) {
                problem("path", message);
            }
            if script.timeout_seconds == Some(0) {
                problem("timeout_seconds", "must be at least 1, found 0".into());
            }
            if !script.confirm {
                problem(
                    "confirm",
                    "false is not allowed: every run of a family script is approved by the \
                     member first"
                        .into(),
                );
            }
            let mut parameter_names = BTreeSet::new();
            for (position, parameter) in script.parameters.iter().enumerate() {
                let key = |field: &str| format!("parameters[{position}].{field}");
                if !is_identifier(&parameter.name) {
                    problem(
                        &key("name"),
                        format!(
                            "{:?} must be letters, digits, '_' or '-' (at most 64)",
                            parameter.name
                        ),
                    );
                } else if !parameter_names.insert(parameter.name.clone()) {
                    problem(
                        &key("name"),
                        format!("{:?} is used by an earlier parameter", parameter.name),
                    );
                }
                match (parameter.kind, parameter.options.is_empty()) {
                    (ParameterKind::Enum, true) => {
                        problem(&key("options"), "an enum parameter needs options".into())
                    }
                    (ParameterKind::Enum, false) => {}
                    (_, false) => {
                        problem(&key("options"), "only an enum parameter has options".into())
                    }
                    (_, true) => {}
                }
                if let Some(default) = &parameter.default
                    && let Err(message) = check_value(parameter, default)
                {
                    problem(&key("default"), message);
                }
            }
        }
        if !problems.is_empty() {
            return Err(invalid(problems));
        }
        Ok(ScriptCatalog {
            folder: root,
            scripts,
        })
    }

    /// The folder, absolute: every script runs in it.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    pub fn scripts(&self) -> &[Script] {
        &self.scripts
    }

    pub fn get(&self, name: &str) -> Option<&Script> {
        self.scripts.iter().find(|script| script.name == name)
    }

    pub fn names(&self) -> Vec<String> {
        self.scripts
            .iter()
            .map(|script| script.name.clone())
            .collect()
    }

    /// The scripts whose name or description holds any of the words of `query` (all of
    /// them for a blank query), best matches first.
    pub fn search(&self, query: &str) -> Vec<&Script> {
        let words: Vec<String> = query
            .split(|c: char| !c.is_alphanumeric())
            .filter(|word| word.chars().count() >= 2)
            .map(str::to_lowercase)
            .collect();
        if words.is_empty() {
            return self.scripts.iter().collect();
        }
        let mut scored: Vec<(usize, &Script)> = self
            .scripts
            .iter()
            .filter_map(|script| {
                let text = format!("{} {}", script.name, script.description)
                    .replace(['_', '-'], " ")
                    .to_lowercase();
                let hits = words.iter().filter(|word| text.contains(*word)).count();
                (hits > 0).then_some((hits, script))
            })
            .collect();
        scored.sort_by_key(|(hits, _)| std::cmp::Reverse(*hits));
        scored.into_iter().map(|(_, script)| script).collect()
    }
}

fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// A script's `path`: relative, inside the folder (symbolic links followed), a file, and
/// executable for `type: executable`.
fn check_path(root: &Path, path: &str, kind: ScriptKind) -> Result<(), String> {
    let relative = Path::new(path);
    if path.trim().is_empty() {
        return Err("must not be empty".into());
    }
    if relative
        .components()
        .any(|component| !matches!(component, Component::Normal(_) | Component::CurDir))
    {
        return Err(format!(
            "{path:?} leaves the scripts folder (it must be a relative path without '..')"
        ));
    }
    let full = root.join(relative);
    let real = full
        .canonicalize()
        .map_err(|error| format!("{path:?} cannot be opened: {error}"))?;
    if !real.starts_with(root) {
        return Err(format!(
            "{path:?} leaves the scripts folder (through a symbolic link)"
        ));
    }
    let metadata = real
        .metadata()
        .map_err(|error| format!("{path:?} cannot be opened: {error}"))?;
    if !metadata.is_file() {
        return Err(format!("{path:?} is not a file"));
    }
    #[cfg(unix)]
    if kind == ScriptKind::Executable {
        use std::os::unix::fs::PermissionsExt;
        if metadata.permissions().mode() & 0o111 == 0 {
            return Err(format!(
                "{path:?} is not executable (type executable needs chmod +x)"
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = kind;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_that_is_not_json_is_refused_at_the_top_level() {
        // Found by the fuzz target `scripts_manifest`: an empty manifest was refused under
        // an empty key (`manifest.json: : EOF while parsing a value`).
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join(MANIFEST_FILE), "").unwrap();
        let Err(ManifestError::Invalid { problems, .. }) =
            ScriptCatalog::load_blocking(folder.path())
        else {
            panic!("an empty manifest was not refused as invalid");
        };
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].0, "(top level)");
        assert!(problems[0].1.contains("EOF"), "{problems:?}");
    }

    #[test]
    fn a_manifest_that_is_not_utf8_is_refused_at_the_top_level_in_words() {
        // Found by the fuzz target `scripts_manifest`: such a manifest was "unreadable",
        // as if the file could not be opened.
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(folder.path().join(MANIFEST_FILE), b"[{\"name\": \"\xff\"}]").unwrap();
        let Err(ManifestError::Invalid { problems, .. }) =
            ScriptCatalog::load_blocking(folder.path())
        else {
            panic!("the manifest was not refused as invalid");
        };
        assert_eq!(problems[0].0, "(top level)");
        assert!(
            problems[0].1.contains("not UTF-8 text (byte 11"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_key_that_is_not_a_string_is_refused_at_the_entry_that_holds_it() {
        // Found by the fuzz target `scripts_manifest`: JSON broken inside an entry's key was
        // refused at the key path `[0].?`, a step that names nothing.
        let folder = tempfile::tempdir().unwrap();
        let manifest = r#"[{"name": "x", .sh","description": "y", "path": "hello.sh", "type": "sh"#;
        std::fs::write(folder.path().join(MANIFEST_FILE), manifest).unwrap();
        let Err(ManifestError::Invalid { problems, .. }) =
            ScriptCatalog::load_blocking(folder.path())
        else {
            panic!("the broken manifest was not refused as invalid");
        };
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].0, "[0]", "{problems:?}");
        assert!(
            problems[0].1.contains("key must be a string"),
            "{problems:?}"
        );
    }
}
