//! The small local model answering every profile: with `--local-model`, or when the
//! configuration names no `llms` at all, so a fresh checkout answers without any account.
//!
//! The configuration is rewritten before it is checked: an `llms` entry [`LOCAL_MODEL_LLM`]
//! (OpenAI-compatible, backend `local`, no key) replaces an entry of that name, and every
//! layer that names a model names it, with no fallback model. So the profiles' models, and the
//! keys of the models they no longer use, are never required. The entry's `base_url` is known
//! only once the server runs on its port (`app` starts it, `local_model` supervises it).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_yaml::{Mapping, Value};

use super::error::Problems;
use super::transcription::LlmKind;
use super::types::{HearthConfig, LlmBackend, LlmModelConfig, LlmProviderKind};
use crate::local_model::{INSTALL_DIR_ENV, INSTALL_SCRIPT, MODEL_ALIAS, install_dir};

/// The `llms` entry of the local model.
pub const LOCAL_MODEL_LLM: &str = "local_model";

/// Stands in the entry until the server's port is known.
const PLACEHOLDER_BASE_URL: &str = "http://127.0.0.1/v1";
/// A small model on a small machine's CPU reads a long prompt (a profile's tools) slowly.
const TIMEOUT_SECONDS: u64 = 300;
/// Keeps a model this small from rambling until the context is full.
const MAX_TOKENS: u32 = 256;

/// Why the local model answers, and where it is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalModelUse {
    /// The folder `scripts/install-local-llm.sh` installs into.
    pub install_dir: PathBuf,
    /// True with `--local-model`; false when the configuration names no `llms`.
    pub asked: bool,
}

/// Decides whether the local model answers; if it does, rewrites `config` so every profile
/// uses it and says where it is installed (from `env`, by the install script's rule).
pub(crate) fn apply(
    config: &mut HearthConfig,
    asked: bool,
    env: &BTreeMap<String, String>,
    problems: &mut Problems,
) -> Option<LocalModelUse> {
    // A transcription or embedding entry answers no chat: with only those, no model answers
    // the profiles.
    if !asked && config.llms.values().any(LlmModelConfig::is_chat) {
        return None;
    }
    if let Some(llm) = config
        .llms
        .get(LOCAL_MODEL_LLM)
        .filter(|llm| !llm.is_chat())
    {
        problems.push(
            format!("llms.{LOCAL_MODEL_LLM}"),
            format!(
                "the local model's entry takes the name {LOCAL_MODEL_LLM:?}, which would replace \
                 this {kind} entry; give the {kind} entry another name",
                kind = llm.kind
            ),
        );
        return None;
    }
    let variable = |name: &str| env.get(name).map(String::as_str);
    let Some(install_dir) = install_dir(variable(INSTALL_DIR_ENV), variable("HOME")) else {
        problems.push(
            "llms",
            format!(
                "the local model answers, but neither {INSTALL_DIR_ENV} nor HOME is set: set \
                 {INSTALL_DIR_ENV} to the folder `bash {INSTALL_SCRIPT}` installed it into"
            ),
        );
        return None;
    };
    config.llms.insert(
        LOCAL_MODEL_LLM.to_owned(),
        LlmModelConfig {
            kind: LlmKind::Chat,
            provider: LlmProviderKind::OpenAi,
            base_url: PLACEHOLDER_BASE_URL.to_owned(),
            model: MODEL_ALIAS.to_owned(),
            api_key_env: None,
            backend: LlmBackend::Local,
            timeout_seconds: TIMEOUT_SECONDS,
            max_tokens: Some(MAX_TOKENS),
            cost_per_million_input_tokens: 0.0,
            cost_per_million_output_tokens: 0.0,
            vision: false,
            cost_per_audio_minute: 0.0,
        },
    );
    // The defaults always name it; a profile only where it named a model of its own.
    point_layer_at_local_model(&mut config.default_profile_settings.processing_config, true);
    for profile in &mut config.service_profiles {
        if let Some(layer) = &mut profile.processing_config {
            point_layer_at_local_model(layer, false);
        }
    }
    Some(LocalModelUse { install_dir, asked })
}

fn point_layer_at_local_model(layer: &mut Mapping, always: bool) {
    let model_key = Value::from("llm_model");
    if always || layer.contains_key(&model_key) {
        layer.insert(model_key, Value::from(LOCAL_MODEL_LLM));
    }
    // A fallback would be a model that needs what the local model is there to do without.
    layer.remove("llm_fallback_model");
}
