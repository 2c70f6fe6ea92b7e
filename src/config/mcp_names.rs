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
//! A server id is used as written, so it must be one that `tool_server_id` finds again:
//! [`check_server_id`] is that rule, and configuration validation refuses any other id.
//!
//! It lives with the configuration because `mcp_servers` ids and `confirm_tools` entries are
//! written in these names; the MCP client (`tools/mcp/`) names the tools it offers with it.

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

/// The longest server id: it leaves room for `__`, at least one character of the tool name
/// and the hash suffix, so even a cut name keeps the whole id in front of its `__`.
pub const MAX_SERVER_ID_LEN: usize =
    MAX_TOOL_NAME_LEN - HASH_SUFFIX_LEN - TOOL_NAME_SEPARATOR.len() - 1;

/// A server id that `tool_server_id` would not find again in the names built from it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "server id {id:?} cannot be read back from its tool names (<id>__<tool>): {reason}; \
     a server id is ascii letters, digits, - and _, without __, not ending in _, \
     at most {MAX_SERVER_ID_LEN} characters"
)]
pub struct BadServerId {
    pub id: String,
    pub reason: String,
}

/// Whether `tool_server_id` finds `server_id` again in every name built from it, and if not,
/// why. The one place that knows the rule: configuration validation calls it.
pub fn check_server_id(server_id: &str) -> Result<(), BadServerId> {
    let reason = if server_id.is_empty() {
        "it is empty".to_owned()
    } else if let Some(refused) = server_id.chars().find(|character| !is_allowed(*character)) {
        // Sanitising would turn it into `_`, and the id in the name would differ.
        format!("{refused:?} is not allowed in a tool name")
    } else if server_id.contains(TOOL_NAME_SEPARATOR) {
        format!("it contains {TOOL_NAME_SEPARATOR}, which separates the id from the tool name")
    } else if server_id.ends_with('_') {
        format!("its trailing _ would run into the {TOOL_NAME_SEPARATOR} after it")
    } else if server_id.len() > MAX_SERVER_ID_LEN {
        format!(
            "it is {} characters long and a cut tool name would lose part of it",
            server_id.len()
        )
    } else {
        return Ok(());
    };
    Err(BadServerId {
        id: server_id.to_owned(),
        reason,
    })
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
    fn server_ids_that_do_not_round_trip_are_refused() {
        for good in [
            "everything",
            "home_assistant",
            "a-b_c",
            &"x".repeat(MAX_SERVER_ID_LEN),
        ] {
            assert_eq!(check_server_id(good), Ok(()), "{good}");
            let longest_tool = "t".repeat(200);
            for tool in ["echo", "read.file", longest_tool.as_str()] {
                let name = namespaced_tool_name(good, tool);
                assert_eq!(tool_server_id(&name), Some(good), "{name}");
            }
        }
        for (bad, reason) in [
            ("a__b", "contains __"),
            ("trailing_", "trailing _"),
            ("has.dot", "'.' is not allowed"),
            ("", "empty"),
            (&"x".repeat(MAX_SERVER_ID_LEN + 1), "53 characters long"),
        ] {
            let error = check_server_id(bad).expect_err(bad);
            assert!(error.to_string().contains(reason), "{error}");
            assert!(error.to_string().contains(&format!("{bad:?}")), "{error}");
        }
        assert_eq!(tool_server_id("__echo"), None);
        assert_eq!(tool_server_id("echo"), None);
    }
}
