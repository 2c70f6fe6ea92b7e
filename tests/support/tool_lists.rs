//! The local tools and profiles the tests give hearth by kind: the note tools, and the
//! delegation profiles (`delegation_profiles`, `secure_ops`) with the tools they delegate through.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use hearth::config::ServiceProfileConfig;
use serde_yaml::Value;

use super::test_config::{ProfileParts, entries, profile};

/// Every note tool, as `enable_local_tools` lists them.
pub const NOTE_TOOLS: &str = "add_or_update_note, get_note, search_notes, list_notes, delete_note";

/// The profiles delegated to: `helper` (its own prompt), `helper2` and `helper3` at once,
/// `vault` never.
pub fn delegation_profiles() -> Vec<ServiceProfileConfig> {
    let level = |level: &str| ("delegation_security_level", Value::from(level));
    vec![
        profile("helper").description("Does sums.").processing(&[
            level("unrestricted"),
            (
                "prompts",
                entries(&[("system_prompt", "You are the helper.".into())]),
            ),
        ]),
        profile("helper2")
            .description("Second helper.")
            .processing(&[level("unrestricted")]),
        profile("helper3")
            .description("Third helper.")
            .processing(&[level("unrestricted")]),
        profile("vault")
            .description("Keeps secrets.")
            .processing(&[level("blocked")]),
    ]
}

pub const DELEGATION_TOOLS: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
    "profile_get,profile_update,delegate_to_service",
);

/// A target that may be delegated to at once and asks before `profile_update`.
pub fn secure_ops() -> ServiceProfileConfig {
    profile("secure_ops")
        .description("Keeps records.")
        .processing(&[
            ("delegation_security_level", "unrestricted".into()),
            ("confirmation_timeout_seconds", 600.into()),
            (
                "prompts",
                entries(&[("system_prompt", "You are secure_ops.".into())]),
            ),
        ])
        .local_tools(&["profile_get", "profile_update"])
        .confirm(&["profile_update"])
}
