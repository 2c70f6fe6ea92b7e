//! hearth's real OpenAI and Anthropic providers pointed at the scripted model server, and a
//! plain request to them.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use std::time::Duration;

use hearth::llm::anthropic::AnthropicProvider;
use hearth::llm::openai::OpenAiProvider;
use hearth::llm::{ChatMessage, ChatRequest, ProviderSettings};

use super::llm_server::*;

pub const TIMEOUT: Duration = Duration::from_secs(5);

pub fn openai_at(base_url: String, api_key: Option<&str>, timeout: Duration) -> OpenAiProvider {
    OpenAiProvider::new(
        ProviderSettings {
            base_url,
            model: "gpt-test".to_string(),
            api_key: api_key.map(str::to_string),
            timeout,
            max_tokens: None,
        },
        reqwest::Client::new(),
    )
}

pub fn anthropic_at(
    base_url: String,
    api_key: Option<&str>,
    timeout: Duration,
) -> AnthropicProvider {
    AnthropicProvider::new(
        ProviderSettings {
            base_url,
            model: "claude-test".to_string(),
            api_key: api_key.map(str::to_string),
            timeout,
            max_tokens: None,
        },
        reqwest::Client::new(),
    )
}

pub fn openai(server: &ScriptedLlmServer) -> OpenAiProvider {
    openai_at(server.base_url(), Some("sk-test"), TIMEOUT)
}

pub fn anthropic(server: &ScriptedLlmServer) -> AnthropicProvider {
    anthropic_at(server.anthropic_base_url(), Some("ak-test"), TIMEOUT)
}

pub fn ask(text: &str) -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::system("be kind"), ChatMessage::user(text)],
        ..Default::default()
    }
}
