//! A real llama.cpp server (xllamacpp serving SmolLM2-135M-Instruct) on 127.0.0.1, for tests
//! that must prove hearth talks to a real OpenAI-compatible backend: hearth's own small local
//! model, started by the same `hearth::local_model` code `hearth run --local-model` uses.
//!
//! `scripts/install-local-llm.sh` installs it into `$HEARTH_LOCAL_LLM_DIR` (default
//! `~/.cache/hearth/local-llm`), where this module looks too. With
//! `HEARTH_REQUIRE_REAL_SERVERS=1` a missing install fails the test, otherwise the test skips.

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::path::PathBuf;

use hearth::local_model::{
    INSTALL_DIR_ENV, INSTALL_SCRIPT, LocalModelInstall, LocalModelServer, MODEL_ALIAS, install_dir,
};

/// The model name the launcher registers; llama.cpp serves its one model under any name.
pub const REAL_LLM_MODEL: &str = MODEL_ALIAS;

/// The running server; killed when dropped.
pub type RealLlmServer = LocalModelServer;

/// Where the local model is installed, by the install script's rule.
pub fn local_model_install() -> LocalModelInstall {
    let variable = std::env::var(INSTALL_DIR_ENV).ok();
    let home = std::env::var("HOME").ok();
    let dir = install_dir(variable.as_deref(), home.as_deref())
        .unwrap_or_else(|| PathBuf::from(".cache/hearth/local-llm"));
    LocalModelInstall::new(dir)
}

/// True when the install script's launcher is there.
pub fn local_model_installed() -> bool {
    local_model_install().launcher().is_file()
}

/// `None` (after a note on stderr) when the local model is not installed and the test is
/// skipped; panics when it is missing while `HEARTH_REQUIRE_REAL_SERVERS=1`.
#[track_caller]
pub fn skip_without_local_model(test: &str) -> Option<()> {
    if local_model_installed() {
        return Some(());
    }
    let launcher = local_model_install().launcher();
    if require_real_servers() {
        panic!(
            "{test}: the local model is not installed ({} is missing) and \
             HEARTH_REQUIRE_REAL_SERVERS=1; run bash {INSTALL_SCRIPT}",
            launcher.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: the local model is not installed ({} is missing); run bash \
         {INSTALL_SCRIPT} to enable this test, or set HEARTH_REQUIRE_REAL_SERVERS=1 to make its \
         absence an error",
        launcher.display()
    );
    None
}

/// Start the server for a test, or decide the test is skipped (`None`) because the server is
/// not installed. Panics when it is installed but does not start, and when it is missing
/// while `HEARTH_REQUIRE_REAL_SERVERS=1`.
pub async fn start_real_llm_or_skip(test: &str) -> Option<RealLlmServer> {
    skip_without_local_model(test)?;
    match LocalModelServer::start(&local_model_install()).await {
        Ok(server) => Some(server),
        Err(err) => panic!("{test}: {err}"),
    }
}

/// True when `HEARTH_REQUIRE_REAL_SERVERS=1`: missing real servers fail tests instead of skipping.
pub fn require_real_servers() -> bool {
    std::env::var("HEARTH_REQUIRE_REAL_SERVERS").is_ok_and(|value| value.trim() == "1")
}
