//! How an MCP tool is named to the model: `{server_id}__{tool_name}`, kept to the
//! characters and length every LLM API accepts.
//!
//! The mapping, per tool:
//! - a tool name made only of `[a-zA-Z0-9_-]` that fits in 64 characters with its prefix is
//!   kept as it is (`everything` + `echo` → `everything__echo`);
//! - any other name has each refused character replaced by `_`, is cut to fit, and gets `-`
//!   and 8 hex digits of a hash of the original name, so two names that differ only in refused
//!   characters stay apart and the mapping is the same on every start (`files` + `read.file`
//!   → `files__read_file-2d6f0437`).
//!
//! A server id is used as written; it should match `[a-zA-Z0-9-]+(_[a-zA-Z0-9-]+)*` (no `__`, no
//! trailing `_`) for `tool_server_id` to find it again; `McpServers::start` warns otherwise.

/// Between the server id and the tool name in a namespaced tool name.
pub const TOOL_NAME_SEPARATOR: &str = "__";

/// The longest tool name the LLM APIs accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;

/// `-` and 8 hex digits.
const HASH_SUFFIX_LEN: usize = 9;

/// The server id of a namespaced tool name: the part before the first `__`.
pub fn tool_server_id(namespaced: &str) -> Option<&str> {
    let (server_id, tool) = namespaced.split_once(TOOL_NAME_SEPARATOR)?;
    (!server_id.is_empty() && !tool.is_empty()).then_some(server_id)
}

/// The name the model sees for `tool_name` of server `server_id`.
pub fn namespaced_tool_name(server_id: &str, tool_name: &str) -> String {
    let prefix = format!("{}{TOOL_NAME_SEPARATOR}", sanitize(server_id));
    let fits = prefix.len() + tool_name.len() <= MAX_TOOL_NAME_LEN;
    if fits && !tool_name.is_empty() && tool_name.chars().all(is_allowed) {
        return format!("{prefix}{tool_name}");
    }
    let mut name = format!("{prefix}{}", sanitize(tool_name));
    // Sanitised text is ASCII, so truncating by bytes cuts no character.
    name.truncate(MAX_TOOL_NAME_LEN - HASH_SUFFIX_LEN);
    name.push_str(&format!("-{:08x}", fnv1a(tool_name.as_bytes())));
    name
}

/// Whether `tool_server_id` finds `server_id` again in the names built from it.
pub(super) fn server_id_round_trips(server_id: &str) -> bool {
    !server_id.is_empty()
        && server_id.chars().all(is_allowed)
        && !server_id.contains(TOOL_NAME_SEPARATOR)
        && !server_id.ends_with('_')
        && server_id.len() + TOOL_NAME_SEPARATOR.len() + HASH_SUFFIX_LEN < MAX_TOOL_NAME_LEN
}

fn is_allowed(character: char) -> bool {
    character.is_ascii_alphanumeric() || character == '_' || character == '-'
}

fn sanitize(text: &str) -> String {
    text.chars()
        .map(|character| {
            if is_allowed(character) {
                character
            } else {
                '_'
            }
        })
        .collect()
}

/// 32-bit FNV-1a: small, and stable across Rust versions and runs (unlike `DefaultHasher`),
/// which matters because tool names are stored with pending confirmations.
fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5, |hash: u32, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(0x0100_0193)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn valid(name: &str) -> bool {
        !name.is_empty() && name.len() <= MAX_TOOL_NAME_LEN && name.chars().all(is_allowed)
    }

    #[test]
    fn valid_names_are_kept() {
        assert_eq!(
            namespaced_tool_name("everything", "echo"),
            "everything__echo"
        );
        assert_eq!(
            namespaced_tool_name("everything", "trigger-elicitation-request"),
            "everything__trigger-elicitation-request"
        );
        assert_eq!(tool_server_id("everything__echo"), Some("everything"));
        assert_eq!(tool_server_id("files__read__file"), Some("files"));
    }

    #[test]
    fn refused_characters_are_replaced_and_told_apart() {
        let dotted = namespaced_tool_name("files", "read.file");
        let spaced = namespaced_tool_name("files", "read file");
        assert_eq!(dotted, "files__read_file-2d6f0437");
        assert!(valid(&dotted) && valid(&spaced));
        assert_ne!(dotted, spaced);
        assert_eq!(dotted, namespaced_tool_name("files", "read.file"));
        assert!(valid(&namespaced_tool_name("café", "crème brûlée")));
        assert_eq!(tool_server_id(&dotted), Some("files"));
    }

    #[test]
    fn long_names_are_cut_to_64_and_stay_distinct() {
        let long_a = format!("{}a", "x".repeat(80));
        let long_b = format!("{}b", "x".repeat(80));
        let a = namespaced_tool_name("server", &long_a);
        let b = namespaced_tool_name("server", &long_b);
        assert_eq!(a.len(), MAX_TOOL_NAME_LEN);
        assert!(valid(&a) && valid(&b));
        assert_ne!(a, b);
        assert_eq!(tool_server_id(&a), Some("server"));
    }

    #[test]
    fn ambiguous_server_ids_are_detected() {
        assert!(server_id_round_trips("everything"));
        assert!(server_id_round_trips("home_assistant"));
        assert!(!server_id_round_trips("a__b"));
        assert!(!server_id_round_trips("trailing_"));
        assert!(!server_id_round_trips("has.dot"));
        assert!(!server_id_round_trips(""));
        assert_eq!(tool_server_id("__echo"), None);
        assert_eq!(tool_server_id("echo"), None);
    }
}
