//! The local tools and profiles the tests give hearth by kind: the note tools, and the
//! delegation profiles (`PROFILES`, `SECURE_OPS`) with the tools they delegate through.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

/// Every note tool, as `enable_local_tools` lists them.
pub const NOTE_TOOLS: &str = "add_or_update_note, get_note, search_notes, list_notes, delete_note";

pub const PROFILES: &str = r#"  - id: helper
    description: "Does sums."
    processing_config: { delegation_security_level: unrestricted, prompts: { system_prompt: "You are the helper." } }
  - id: helper2
    description: "Second helper."
    processing_config: { delegation_security_level: unrestricted }
  - id: helper3
    description: "Third helper."
    processing_config: { delegation_security_level: unrestricted }
  - id: vault
    description: "Keeps secrets."
    processing_config: { delegation_security_level: blocked }
"#;

pub const DELEGATION_TOOLS: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
    "profile_get,profile_update,delegate_to_service",
);

/// A target that may be delegated to at once and asks before `profile_update`.
pub const SECURE_OPS: &str = r#"  - id: secure_ops
    description: "Keeps records."
    processing_config: { delegation_security_level: unrestricted, confirmation_timeout_seconds: 600, prompts: { system_prompt: "You are secure_ops." } }
    tools_config: { enable_local_tools: [profile_get, profile_update], confirm_tools: [profile_update] }
"#;
