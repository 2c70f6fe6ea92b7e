//! The LLM providers of config `llms`: one per named model, sharing one HTTP client; and
//! the small local model's server, started when every profile answers with it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{StartError, secret_named_by};
use crate::actors::llm_broker::ModelEntry;
use crate::config::{LOCAL_MODEL_LLM, LlmProviderKind, LoadedConfig};
use crate::llm::anthropic::AnthropicProvider;
use crate::llm::openai::OpenAiProvider;
use crate::llm::{LlmProvider, ProviderSettings};
use crate::local_model::{LocalModelInstall, LocalModelServer};

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
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .map_err(|error| StartError::HttpClient(error.to_string()))?;
    let mut models = HashMap::new();
    for (name, model) in &loaded.config.llms {
        let api_key = secret_named_by(loaded, &model.api_key_env);
        let timeout = Duration::from_secs(model.timeout_seconds.max(1));
        let base_url = match local_model {
            Some(server) if name == LOCAL_MODEL_LLM => server.base_url(),
            _ => model.base_url.clone(),
        };
        let settings = ProviderSettings {
            base_url,
            model: model.model.clone(),
            api_key,
            timeout,
            max_tokens: model.max_tokens,
        };
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
