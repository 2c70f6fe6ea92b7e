//! The LLM providers of config `llms`: one per named model, sharing one HTTP client.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{StartError, secret_named_by};
use crate::actors::llm_broker::ModelEntry;
use crate::config::{LlmProviderKind, LoadedConfig};
use crate::llm::anthropic::AnthropicProvider;
use crate::llm::openai::OpenAiProvider;
use crate::llm::{LlmProvider, ProviderSettings};

/// One provider per named model of config `llms`, sharing one HTTP client.
pub(crate) fn build_models(
    loaded: &LoadedConfig,
) -> Result<HashMap<String, ModelEntry>, StartError> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .map_err(|error| StartError::HttpClient(error.to_string()))?;
    let mut models = HashMap::new();
    for (name, model) in &loaded.config.llms {
        let api_key = secret_named_by(loaded, &model.api_key_env);
        let timeout = Duration::from_secs(model.timeout_seconds.max(1));
        let settings = ProviderSettings {
            base_url: model.base_url.clone(),
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
