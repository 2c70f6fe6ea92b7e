//! A profile's intents file (`hearth::intents::IntentsRegistry::from_text`), as a person
//! writes it.
//!
//! Properties: no input panics; a refusal names the file, and each problem a key path and
//! what is wrong, on one line `file[:line]: key: what`, its line within the file; a
//! registry that loads names, for each intent whose tool the profile lacks, that intent's
//! `tool` key.
#![no_main]

use std::path::Path;

use hearth::config::PluginFileProblem;
use hearth::intents::IntentsRegistry;
use hearth_fuzz_checks::refusal::{FileProblem, check_file_problems};
use libfuzzer_sys::fuzz_target;

const FILE: &str = "config/intents.yaml";

fn check_problems(shown: &str, problems: &[PluginFileProblem], text: &str) {
    assert!(
        shown.starts_with(FILE),
        "the refusal does not name the file: {shown}"
    );
    if let Err(why) = check_file_problems(shown, &as_checked(problems), Some(FILE), text) {
        panic!("{why}");
    }
}

fn as_checked(problems: &[PluginFileProblem]) -> Vec<FileProblem<'_>> {
    problems
        .iter()
        .map(|problem| FileProblem {
            key_path: problem.key_path.to_string(),
            line: problem.line,
            message: &problem.message,
        })
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    match IntentsRegistry::from_text(Path::new(FILE), text) {
        Ok(registry) => {
            let Err(error) = registry.check_tools(&[], "family") else {
                assert!(
                    registry
                        .intents
                        .iter()
                        .all(|intent| intent.tool.contains("__")),
                    "a tool the profile lacks passed"
                );
                return;
            };
            check_problems(&error.to_string(), &error.problems, text);
            for problem in &error.problems {
                let key_path = problem.key_path.to_string();
                assert!(
                    key_path.starts_with("intents[") && key_path.ends_with("].tool"),
                    "{key_path}"
                );
            }
        }
        Err(error) => check_problems(&error.to_string(), &error.problems, text),
    }
});
