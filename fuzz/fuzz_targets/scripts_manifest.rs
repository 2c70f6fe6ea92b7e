//! The family scripts' `manifest.json` (`hearth::scripts::ScriptCatalog::load`), read from a
//! scripts folder holding a shell script, a Python script, an executable, a file that is
//! not executable, a subfolder and a symbolic link out of the folder.
//!
//! Properties: no input panics; a refusal names the file, and each problem a key path
//! (`[2].parameters[0].name`; `(top level)` for the whole document) and what is wrong, on
//! one line `file: key: what`. A catalogue that loads has only scripts whose files are
//! inside the folder, and names each once.
#![no_main]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hearth::scripts::{ManifestError, ScriptCatalog};
use hearth_fuzz_checks::refusal::{FileProblem, check_file_problems};
use hearth_fuzz_checks::scratch::runtime;
use libfuzzer_sys::fuzz_target;

fn folder() -> &'static Path {
    static FOLDER: OnceLock<tempfile::TempDir> = OnceLock::new();
    FOLDER
        .get_or_init(|| {
            let folder = tempfile::tempdir().expect("a scratch folder");
            let root = folder.path();
            std::fs::write(root.join("hello.sh"), "echo hello\n").unwrap();
            std::fs::write(root.join("report.py"), "print('report')\n").unwrap();
            std::fs::write(root.join("plain.txt"), "not a program\n").unwrap();
            std::fs::create_dir(root.join("lib")).unwrap();
            std::fs::write(root.join("lib").join("tool"), "#!/bin/sh\n").unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                root.join("lib").join("tool"),
                std::fs::Permissions::from_mode(0o755),
            )
            .unwrap();
            std::os::unix::fs::symlink("/etc/hostname", root.join("escape")).unwrap();
            folder
        })
        .path()
}

fuzz_target!(|data: &[u8]| {
    let folder = folder();
    let manifest: PathBuf = folder.join("manifest.json");
    std::fs::write(&manifest, data).expect("the manifest is written");
    let shown_file = manifest.display().to_string();
    match runtime().block_on(ScriptCatalog::load(folder)) {
        Ok(catalog) => {
            let root = folder.canonicalize().unwrap();
            let mut names = BTreeSet::new();
            for script in catalog.scripts() {
                let file = catalog.folder().join(&script.path).canonicalize().unwrap();
                assert!(
                    file.starts_with(&root),
                    "{:?} is outside the folder",
                    script.path
                );
                assert!(names.insert(&script.name), "{} twice", script.name);
            }
        }
        Err(ManifestError::Invalid { file, problems }) => {
            let error = ManifestError::Invalid {
                file: file.clone(),
                problems: problems.clone(),
            };
            let shown = error.to_string();
            assert_eq!(file, manifest);
            let checked: Vec<FileProblem<'_>> = problems
                .iter()
                .map(|(key_path, message)| FileProblem {
                    key_path: key_path.clone(),
                    line: None,
                    message,
                })
                .collect();
            let text = String::from_utf8_lossy(data);
            if let Err(why) = check_file_problems(&shown, &checked, Some(&shown_file), &text) {
                panic!("{why}");
            }
        }
        Err(ManifestError::Read { file, source }) => {
            panic!("the written manifest {file:?} unreadable: {source}")
        }
    }
});
