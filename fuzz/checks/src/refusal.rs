//! A refused file must say where to fix it: the file, and the key path of the wrong value
//! (`service_profiles[1].processing_config.llm_model`, `(top level)` for the whole
//! document), so a person can go straight to it.

/// Checks that `key_path` names a place in a document: not empty, no unnamed step (`?`,
/// which is what a path through a value that is not a key looks like), no empty segment.
/// A key that is not a plain name is written quoted (`".1:http"`, `"a b"`), and counts as
/// one named step whatever it holds.
pub fn check_key_path(key_path: &str) -> Result<(), String> {
    if key_path == "(top level)" {
        return Ok(());
    }
    let bad = |why: &str| Err(format!("key path {key_path:?} {why}"));
    if key_path.trim().is_empty() {
        return bad("is empty");
    }
    let Some(key_path) = without_quoted_keys(key_path) else {
        return bad("has a quote that does not end");
    };
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

/// The path with each quoted key (Rust's string escapes inside) written as `k`, or `None`
/// when a quote does not end.
fn without_quoted_keys(key_path: &str) -> Option<String> {
    let mut plain = String::with_capacity(key_path.len());
    let mut characters = key_path.chars();
    while let Some(character) = characters.next() {
        if character != '"' {
            plain.push(character);
            continue;
        }
        loop {
            match characters.next()? {
                '\\' => {
                    characters.next()?;
                }
                '"' => break,
                _ => {}
            }
        }
        plain.push('k');
    }
    Some(plain)
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

/// One problem of a refused file as the checks see it: its key path as shown, its line
/// (when the file has lines) and what is wrong.
pub struct FileProblem<'a> {
    pub key_path: String,
    pub line: Option<usize>,
    pub message: &'a str,
}

/// Checks a refusal of the file `text` (shown as `shown`): at least one problem, and each
/// with a key path that names a place, a message, a line within the text, and, when the
/// file has a name (`file`), a line of the refusal naming file and key; without a name
/// the refusal still names the key.
pub fn check_file_problems(
    shown: &str,
    problems: &[FileProblem<'_>],
    file: Option<&str>,
    text: &str,
) -> Result<(), String> {
    if problems.is_empty() {
        return Err(format!("refused without a problem: {shown}"));
    }
    let lines = text.split('\n').count();
    for problem in problems {
        check_key_path(&problem.key_path).map_err(|why| format!("{why}: {shown}"))?;
        if problem.message.trim().is_empty() {
            return Err(format!("a problem without a message: {shown}"));
        }
        if let Some(line) = problem.line
            && !(1..=lines).contains(&line)
        {
            return Err(format!("line {line} of {lines}: {shown}"));
        }
        match file {
            Some(file) => check_shown(shown, file, &problem.key_path)?,
            None if !shown.contains(&problem.key_path) => {
                return Err(format!("{shown} does not name {}", problem.key_path));
            }
            None => {}
        }
    }
    Ok(())
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
        assert_eq!(check_key_path(r#"".1:http""#), Ok(()));
        assert_eq!(check_key_path(r#"a[0]."b.\"c"."".d"#), Ok(()));
        assert!(check_key_path(r#"a."b"#).is_err());
    }

    #[test]
    fn each_problem_of_a_file_is_within_it_and_named() {
        let problem = |key_path: &str, line| FileProblem {
            key_path: key_path.to_owned(),
            line,
            message: "wrong",
        };
        let shown = "x.yaml:1: a: wrong";
        let text = "a: 1";
        assert_eq!(
            check_file_problems(shown, &[problem("a", Some(1))], Some("x.yaml"), text),
            Ok(())
        );
        assert!(
            check_file_problems(shown, &[problem("a", Some(2))], Some("x.yaml"), text).is_err()
        );
        assert!(check_file_problems(shown, &[], Some("x.yaml"), text).is_err());
        assert!(check_file_problems(shown, &[problem("b", None)], None, text).is_err());
        assert_eq!(
            check_file_problems(shown, &[problem("a", None)], None, text),
            Ok(())
        );
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
