//! What every channel does with a file a member sends: a name that is safe to store, and
//! what the model is told about a file over the size limit.

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

/// Why a file over `limit_bytes` was not kept, for the model to pass on.
pub(crate) fn too_large_note(limit_bytes: u64) -> String {
    format!(
        "it is larger than the {} KB hearth accepts",
        limit_bytes / 1024
    )
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
