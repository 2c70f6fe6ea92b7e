//! `hearth.yaml` as a person writes it, loaded as `hearth run` loads it
//! (`hearth::config::load_with_env`): read from a file, typed, profiles merged, validated.
//!
//! Properties: no input panics; a configuration is loaded or refused; a refusal names the
//! file, and each problem a key path (`(top level)` for the whole document) and what is
//! wrong, on one line `file: key: what`; text that is not YAML at all is named by file,
//! line and column. A loaded configuration prints its resolved profiles.
#![no_main]

use std::collections::BTreeMap;

use hearth::config::{ConfigError, LoadOptions, load_with_env, render_resolved_profiles};
use hearth::tools::LOCAL_TOOL_NAMES;
use hearth_fuzz_checks::refusal::{FileProblem, check_file_problems};
use libfuzzer_sys::fuzz_target;

/// The secrets the example configuration names, as a deployment has them.
fn environment() -> BTreeMap<String, String> {
    [
        "HEARTH_API_KEY",
        "OPENAI_API_KEY",
        "TELEGRAM_BOT_TOKEN",
        "MATRIX_PASSWORD",
        "MATRIX_STORE_PASSPHRASE",
        "CALDAV_PASSWORD",
    ]
    .into_iter()
    .map(|name| (name.to_string(), format!("secret-of-{name}")))
    .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let path = &hearth_fuzz_checks::scratch::folder().join("hearth.yaml");
    std::fs::write(path, text).expect("the scratch file is written");
    let options = LoadOptions {
        known_local_tools: LOCAL_TOOL_NAMES,
        local_model: false,
    };
    let shown_file = path.display().to_string();
    match load_with_env(path, &environment(), &options) {
        Ok(loaded) => {
            assert_eq!(&loaded.file, path);
            assert!(!render_resolved_profiles(&loaded).is_empty());
        }
        Err(error) => {
            let shown = error.to_string();
            assert!(
                shown.starts_with(&shown_file),
                "the refusal does not name the file: {shown}"
            );
            match &error {
                ConfigError::Syntax {
                    line,
                    column,
                    message,
                    ..
                } => {
                    assert!(!message.trim().is_empty(), "{shown}");
                    assert!(
                        line.is_some() && column.is_some(),
                        "a syntax error without its line and column: {shown}"
                    );
                }
                ConfigError::Invalid { problems, .. } => {
                    let checked: Vec<FileProblem<'_>> = problems
                        .iter()
                        .map(|problem| FileProblem {
                            key_path: problem.key_path.clone(),
                            line: None,
                            message: &problem.message,
                        })
                        .collect();
                    if let Err(why) = check_file_problems(&shown, &checked, Some(&shown_file), text)
                    {
                        panic!("{why}");
                    }
                }
                ConfigError::Read { .. } | ConfigError::Environment { .. } => {
                    panic!("a written file with no overrides refused as {error:?}")
                }
            }
        }
    }
});
