//! What every channel does with a file a member sends: a name that is safe to store.

/// A file name from someone's phone, made safe to join to a folder: no separators, no
/// control characters, no `..`, at most 120 characters.
pub(crate) fn safe_file_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .map(|character| match character {
            '/' | '\\' | '\0' | ':' => '_',
            other if other.is_control() => '_',
            other => other,
        })
        .take(120)
        .collect();
    match cleaned.trim_matches('.') {
        "" => "file".to_string(),
        name => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::safe_file_name;

    #[test]
    fn file_names_cannot_leave_their_folder() {
        assert_eq!(safe_file_name("../../etc/passwd"), "_.._etc_passwd");
        assert_eq!(safe_file_name(".."), "file");
        assert_eq!(safe_file_name("scan 1.pdf"), "scan 1.pdf");
    }
}
