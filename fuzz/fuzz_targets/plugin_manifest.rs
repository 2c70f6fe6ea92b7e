//! A plugin's manifest (`hearth::plugins::parse_manifest_yaml`, `plugins/<id>/plugin.yaml`)
//! and the same manifest sent as JSON to the registration API
//! (`PluginManifest::from_json_value`).
//!
//! Properties: no input panics; a refusal names the file, and each problem a key path and
//! what is wrong, on one line `file[:line]: key: what`, its line within the file; a
//! manifest in a folder of another name is refused at `id`. A manifest that loads passes
//! its own check, and its JSON form reads back to the same manifest; text that is JSON
//! (and YAML: a tab can make it only JSON) reads the same through the registration API as
//! from the file, and when refused there, each problem still names a key path.
#![no_main]

use std::path::Path;

use hearth::config::PluginFileProblem;
use hearth::plugins::manifest::{ManifestError, PluginManifest, parse_manifest_yaml};
use hearth_fuzz_checks::refusal::{FileProblem, check_file_problems};
use libfuzzer_sys::fuzz_target;

const FILE: &str = "plugins/shopping/plugin.yaml";

fn check_problems(shown: &str, problems: &[PluginFileProblem], file: Option<&str>, text: &str) {
    let checked: Vec<FileProblem<'_>> = problems
        .iter()
        .map(|problem| FileProblem {
            key_path: problem.key_path.to_string(),
            line: problem.line,
            message: &problem.message,
        })
        .collect();
    if let Err(why) = check_file_problems(shown, &checked, file, text) {
        panic!("{why}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let from_file = parse_manifest_yaml(text, Path::new(FILE), None);
    match &from_file {
        Ok(manifest) => {
            assert_eq!(
                manifest.check(),
                Ok(()),
                "a loaded manifest fails its own check"
            );
            assert_eq!(
                PluginManifest::from_json_value(manifest.to_json_value())
                    .ok()
                    .as_ref(),
                Some(manifest),
                "the JSON form does not read back"
            );
            let in_folder = parse_manifest_yaml(text, Path::new(FILE), Some("shopping"));
            if manifest.id != "shopping" {
                let Err(error) = in_folder else {
                    panic!("id {:?} loaded from folder shopping", manifest.id)
                };
                check_problems(&error.to_string(), error.problems(), Some(FILE), text);
                assert!(
                    error
                        .problems()
                        .iter()
                        .any(|problem| problem.key_path.to_string() == "id")
                );
            }
        }
        Err(ManifestError::Invalid { file, problems }) => {
            assert_eq!(file, Path::new(FILE));
            check_problems(
                &from_file.as_ref().unwrap_err().to_string(),
                problems,
                Some(FILE),
                text,
            );
        }
        Err(other) => panic!("a manifest text refused as {other:?}"),
    }
    let Ok(json) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    // JSON that YAML refuses (a tab where YAML allows none) is refused from the file at its
    // line: there is no file reading to compare with.
    let refused_as_yaml = from_file.as_ref().is_err_and(|error| {
        error
            .problems()
            .iter()
            .any(|problem| problem.message.starts_with("invalid yaml:"))
    });
    if refused_as_yaml {
        return;
    }
    match PluginManifest::from_json_value(json) {
        Ok(registered) => assert_eq!(
            from_file.as_ref().ok(),
            Some(&registered),
            "read as JSON, the manifest is not the one read from the file"
        ),
        Err(error) => {
            assert!(
                from_file.is_err(),
                "the file loads but its JSON is refused: {error}"
            );
            check_problems(&error.to_string(), error.problems(), None, text);
        }
    }
});
