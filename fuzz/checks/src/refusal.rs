//! A refused file must say where to fix it: the file, and the key path of the wrong value
//! (`service_profiles[1].processing_config.llm_model`, `(top level)` for the whole
//! document), so a person can go straight to it.

/// Checks that `key_path` names a place in a document: not empty, no unnamed step (`?`,
/// which is what a path through a value that is not a key looks like), no empty segment.
pub fn check_key_path(key_path: &str) -> Result<(), String> {
    if key_path == "(top level)" {
        return Ok(());
    }
    let bad = |why: &str| Err(format!("key path {key_path:?} {why}"));
    if key_path.trim().is_empty() {
        return bad("is empty");
    }
    if key_path.starts_with('.') || key_path.ends_with('.') || key_path.contains("..") {
        return bad("has an empty segment");
    }
    if key_path
        .split(['.', '[', ']'])
        .any(|segment| segment == "?")
    {
        return bad("has an unnamed segment");
    }
    Ok(())
}

/// Checks that the refusal as shown (`shown`) says the file and the key path of a problem
/// on one line: `file...: key path: ...`.
pub fn check_shown(shown: &str, file: &str, key_path: &str) -> Result<(), String> {
    let names_both = shown.lines().any(|line| {
        line.starts_with(file)
            && line[file.len()..]
                .split_once(": ")
                .is_some_and(|(_, rest)| rest.starts_with(key_path))
    });
    match names_both {
        true => Ok(()),
        false => Err(format!(
            "no line of the refusal starts with the file {file:?} and names key {key_path:?}:\n{shown}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_paths_name_a_place() {
        assert_eq!(check_key_path("a.b[2].c"), Ok(()));
        assert_eq!(check_key_path("(top level)"), Ok(()));
        assert!(check_key_path("").is_err());
        assert!(check_key_path("a.?.c").is_err());
        assert!(check_key_path("a..c").is_err());
    }

    #[test]
    fn the_shown_refusal_names_file_and_key_on_one_line() {
        let shown = "x.yaml:3: a.b: wrong\nx.yaml: c: also";
        assert_eq!(check_shown(shown, "x.yaml", "a.b"), Ok(()));
        assert_eq!(check_shown(shown, "x.yaml", "c"), Ok(()));
        assert!(check_shown(shown, "x.yaml", "d").is_err());
        assert!(check_shown(shown, "y.yaml", "c").is_err());
    }
}
