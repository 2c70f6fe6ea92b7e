//! Family scripts: the household's own programs (back up the photos, wake the media PC,
//! water the garden) kept in `scripts_dir` with a `manifest.json`, and the toolset that
//! walks a member through seed 002's steps: find a script, select it, show its
//! parameters, apply the member's changes, run it after their approval.
//!
//! - `manifest.rs`: the manifest, checked at start-up (file, index, key);
//! - `parameters.rs`: parameter values against their types, final values;
//! - `workflow.rs`: the persisted workflow state per conversation and member, and the
//!   summary the model reads at the start of every turn;
//! - `toolset.rs`: the five tools, enforcing their order;
//! - `runner.rs`: running a script as a child process, safely.

mod manifest;
mod parameters;
mod runner;
mod toolset;
mod workflow;

use std::path::Path;
use std::sync::Arc;

pub use manifest::{
    MANIFEST_FILE, ManifestError, ParameterKind, Script, ScriptCatalog, ScriptKind, ScriptParameter,
};
pub use runner::{ExecutionResult, RunError, RunLimits, run_script};
pub use toolset::{
    GET_PARAMETERS, LIST_SCRIPTS, RUN_DECLINED, RUN_EXPIRED, RUN_SCRIPT, RUN_UNKNOWN,
    SCRIPT_TOOL_NAMES, SELECT_SCRIPT, SET_PARAMETERS, ScriptsToolset,
};
pub use workflow::{NextAction, WorkflowState};

use crate::config::{LoadedConfig, ResolvedProfile};

/// Whether `profile` enables any tool of the scripts toolset.
pub fn profile_uses_scripts(profile: &ResolvedProfile) -> bool {
    profile
        .tools
        .enable_local_tools
        .iter()
        .any(|tool| SCRIPT_TOOL_NAMES.contains(&tool.as_str()))
}

/// The scripts of `scripts_dir` when a profile enables the toolset (a folder nobody uses
/// is not read, so it need not exist); a bad manifest is an error.
pub async fn load_if_used(
    loaded: &LoadedConfig,
) -> Result<Option<Arc<ScriptCatalog>>, ManifestError> {
    if !loaded.profiles.iter().any(profile_uses_scripts) {
        return Ok(None);
    }
    let catalog = ScriptCatalog::load(Path::new(&loaded.config.scripts_dir)).await?;
    tracing::info!(scripts = ?catalog.names(), folder = %catalog.folder().display(), "family scripts loaded");
    Ok(Some(Arc::new(catalog)))
}
