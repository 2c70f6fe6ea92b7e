//! The LLM providers of config `llms`: one per named chat model, sharing one HTTP client;
//! the transcriber of its `kind: transcription` entry, if there is one; the embedder of the
//! `kind: embedding` entry `memory.embedding_model` names, if it names one; the small local
//! model's server, started when every profile answers with it; and the `LlmBroker` over
//! them, the only door to a model.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr};

use super::foundation::Foundation;
use super::{StartError, secret_named_by};
use crate::actors::llm_broker::{
    BrokerSettings, EmbeddingEntry, LlmBroker, ModelEntry, TranscriptionEntry,
};
use crate::config::{HearthConfig, LOCAL_MODEL_LLM, LlmModelConfig, LlmProviderKind, LoadedConfig};
use crate::llm::anthropic::AnthropicProvider;
use crate::llm::openai::OpenAiProvider;
use crate::llm::openai_embedding::OpenAiEmbedder;
use crate::llm::openai_transcription::OpenAiTranscriber;
use crate::llm::{LlmProvider, ProviderSettings};
use crate::local_model::{LocalModelInstall, LocalModelServer};

/// The `LlmBroker` over `models`, config's transcription entry and its embedding model, with
/// config's bounds on calls at once and retries. Started before the tools and the profiles,
/// which all send it their requests (the plugins' parameter resolver, the intents engine,
/// every turn).
pub(super) fn start_llm_broker(
    loaded: &LoadedConfig,
    models: HashMap<String, ModelEntry>,
    base: &Foundation,
) -> Result<Addr<LlmBroker>, StartError> {
    let config = &loaded.config;
    let broker = LlmBroker::new(
        models,
        BrokerSettings {
            max_concurrent_local: config.llm_max_concurrent_local,
            max_concurrent_cloud: config.llm_max_concurrent_cloud,
            retry: config.llm_retry.clone(),
            transcription: build_transcription(loaded)?,
            embedding: build_embedding(loaded)?,
        },
        base.stores.telemetry.clone(),
        base.metrics.clone(),
    );
    Ok(broker.start())
}

/// The small local model's server, running and ready, when every profile answers with it.
pub(super) async fn start_local_model(
    loaded: &LoadedConfig,
) -> Result<Option<LocalModelServer>, StartError> {
    let Some(local) = &loaded.local_model else {
        return Ok(None);
    };
    if !local.asked {
        tracing::info!(
            config = %loaded.file.display(),
            "no model is configured in llms: answering with the small local model"
        );
    }
    let server = LocalModelServer::start(&LocalModelInstall::new(&local.install_dir)).await?;
    Ok(Some(server))
}

/// One provider per named model of config `llms`, sharing one HTTP client; the local model's
/// entry reaches `local_model`'s port.
pub(crate) fn build_models(
    loaded: &LoadedConfig,
    local_model: Option<&LocalModelServer>,
) -> Result<HashMap<String, ModelEntry>, StartError> {
    let client = http_client()?;
    let mut models = HashMap::new();
    for (name, model) in &loaded.config.llms {
        if !model.is_chat() {
            continue;
        }
        let base_url = match local_model {
            Some(server) if name == LOCAL_MODEL_LLM => server.base_url(),
            _ => model.base_url.clone(),
        };
        let settings = provider_settings(loaded, model, base_url);
        let timeout = settings.timeout;
        let provider: Arc<dyn LlmProvider> = match model.provider {
            LlmProviderKind::OpenAi => Arc::new(OpenAiProvider::new(settings, client.clone())),
            LlmProviderKind::Anthropic => {
                Arc::new(AnthropicProvider::new(settings, client.clone()))
            }
        };
        models.insert(
            name.clone(),
            ModelEntry {
                model: model.model.clone(),
                backend: model.backend,
                // The broker's bound sits just above the provider's own HTTP timeout.
                timeout: timeout + Duration::from_secs(1),
                provider,
                cost_per_million_input_tokens: model.cost_per_million_input_tokens,
                cost_per_million_output_tokens: model.cost_per_million_output_tokens,
                vision: model.vision,
            },
        );
    }
    Ok(models)
}

/// The transcriber of the `llms` entry with `kind: transcription`; none without one.
pub(crate) fn build_transcription(
    loaded: &LoadedConfig,
) -> Result<Option<TranscriptionEntry>, StartError> {
    let Some((name, model)) = loaded.config.transcription_llm() else {
        return Ok(None);
    };
    // Validation let only `provider: openai` through: the one transcription wire there is.
    let settings = provider_settings(loaded, model, model.base_url.clone());
    let timeout = settings.timeout;
    Ok(Some(TranscriptionEntry {
        llm_name: name.to_owned(),
        model: model.model.clone(),
        backend: model.backend,
        timeout: timeout + Duration::from_secs(1),
        transcriber: Arc::new(OpenAiTranscriber::new(settings, http_client()?)),
        cost_per_audio_minute: model.cost_per_audio_minute,
        language: loaded.config.voice_notes.language.clone(),
    }))
}

/// The embedder of the `llms` entry `memory.embedding_model` names; none without one.
pub(crate) fn build_embedding(loaded: &LoadedConfig) -> Result<Option<EmbeddingEntry>, StartError> {
    let Some((name, model)) = loaded.config.embedding_llm() else {
        return Ok(None);
    };
    // Validation let only `provider: openai` through: the one embedding wire there is.
    let settings = provider_settings(loaded, model, model.base_url.clone());
    let timeout = settings.timeout;
    Ok(Some(EmbeddingEntry {
        llm_name: name.to_owned(),
        model: model.model.clone(),
        backend: model.backend,
        timeout: timeout + Duration::from_secs(1),
        embedder: Arc::new(OpenAiEmbedder::new(settings, http_client()?)),
        cost_per_million_input_tokens: model.cost_per_million_input_tokens,
    }))
}

/// The names the plugin LLM API may ask for: the chat models, never the transcriber or an
/// embedder.
pub(super) fn chat_llm_names(config: &HearthConfig) -> Vec<String> {
    let chat = config.llms.iter().filter(|(_, llm)| llm.is_chat());
    chat.map(|(name, _)| name.clone()).collect()
}

fn http_client() -> Result<reqwest::Client, StartError> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .map_err(|error| StartError::HttpClient(error.to_string()))
}

fn provider_settings(
    loaded: &LoadedConfig,
    model: &LlmModelConfig,
    base_url: String,
) -> ProviderSettings {
    ProviderSettings {
        base_url,
        model: model.model.clone(),
        api_key: secret_named_by(loaded, &model.api_key_env),
        timeout: Duration::from_secs(model.timeout_seconds.max(1)),
        max_tokens: model.max_tokens,
    }
}
