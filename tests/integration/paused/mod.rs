//! hearth's timers on tokio's paused clock (`support::paused`): the actors in this process
//! with in-memory stores and a model in this process, the wall clock following tokio's,
//! so what takes minutes or days of hearth's time takes none of the test's and happens
//! the same way every run. Timers inside one module (delivery pauses and give-up, typing,
//! the LLM broker's backoff, retention, forgetting handled commands) are tested beside
//! their code.

use std::path::PathBuf;

use tempfile::TempDir;

use crate::support::family_scripts::{overrides as script_overrides, write_scripts};
use crate::support::paused::PausedHearth;

mod confirmations;
mod retries;
mod ttls;

/// hearth with the family scripts of `family_scripts.rs` and their tools, `extra` set too;
/// the scripts folder, and the folder holding it.
async fn with_family_scripts(extra: (&str, &str)) -> (PausedHearth, PathBuf, TempDir) {
    let folder = tempfile::tempdir().unwrap();
    let scripts = write_scripts(folder.path());
    let owned = script_overrides(&scripts);
    let mut overrides: Vec<(&str, &str)> = owned
        .iter()
        .map(|(key, value)| (*key, value.as_str()))
        .collect();
    overrides.push(extra);
    (PausedHearth::start(&overrides).await, scripts, folder)
}
