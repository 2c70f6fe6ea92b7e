//! Family memory in the configuration: `memory` (whether the indexer runs, how often, and
//! which `llms` entry turns its text into vectors) and the checks of `kind: embedding`
//! entries: each speaks the OpenAI-compatible `/v1/embeddings`, and
//! `memory.embedding_model` names one of them. No key that names a chat model may name one
//! (`HearthConfig::not_a_chat_model`, `transcription.rs`).

use serde::{Deserialize, Serialize};

use super::error::Problems;
use super::transcription::LlmKind;
use super::types::{HearthConfig, LlmModelConfig, LlmProviderKind};

/// Family memory: what hearth remembers of chats, notes and documents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// Whether the indexer keeps memory (`actors/memory_indexer/`); false: nothing new is
    /// indexed, what is indexed stays.
    pub enabled: bool,
    /// How often the indexer looks for what is new (chats, changed notes, texts without a
    /// vector); at least 1.
    pub index_interval_seconds: u64,
    /// The `llms` entry (`kind: embedding`) memory's text is turned into vectors by; unset:
    /// nothing is turned into vectors.
    pub embedding_model: Option<String>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            enabled: true,
            index_interval_seconds: 5,
            embedding_model: None,
        }
    }
}

impl HearthConfig {
    /// The `llms` entry `memory.embedding_model` names, with its name; after the checks it
    /// has `kind: embedding`.
    pub fn embedding_llm(&self) -> Option<(&str, &LlmModelConfig)> {
        let name = self.memory.embedding_model.as_deref()?;
        self.llms
            .get_key_value(name)
            .filter(|(_, llm)| llm.kind == LlmKind::Embedding)
            .map(|(name, llm)| (name.as_str(), llm))
    }
}

/// The checks of `kind: embedding` entries and of `memory`.
pub(crate) fn check_memory(config: &HearthConfig, problems: &mut Problems) {
    let embedding_entries = config
        .llms
        .iter()
        .filter(|(_, llm)| llm.kind == LlmKind::Embedding);
    for (name, llm) in embedding_entries.clone() {
        if llm.provider != LlmProviderKind::OpenAi {
            problems.push(
                format!("llms.{name}.provider"),
                format!(
                    "{:?} cannot embed: an embedding entry speaks the OpenAI-compatible \
                     /v1/embeddings (OpenAI, Ollama, llama.cpp's server, vLLM); write \
                     provider: openai",
                    llm.provider.as_str()
                ),
            );
        }
    }
    if config.memory.index_interval_seconds == 0 {
        problems.push(
            "memory.index_interval_seconds",
            "must be at least 1, found 0",
        );
    }
    let Some(named) = &config.memory.embedding_model else {
        return;
    };
    let key = "memory.embedding_model";
    let Some(llm) = config.llms.get(named) else {
        let defined: Vec<&str> = embedding_entries.map(|(name, _)| name.as_str()).collect();
        let choice = match defined.as_slice() {
            [] => "no entry of llms has kind: embedding; add one (an OpenAI-compatible \
                   /v1/embeddings server)"
                .to_owned(),
            names => format!("the embedding entries of llms are {}", names.join(", ")),
        };
        problems.push(
            key,
            format!(
                "{named:?} names no entry of llms: {choice}, or leave memory.embedding_model \
                 out to turn nothing into vectors"
            ),
        );
        return;
    };
    if llm.kind != LlmKind::Embedding {
        problems.push(
            key,
            format!(
                "{named:?} is {} entry of llms (kind: {}), which {}; name an entry with kind: \
                 embedding, or write kind: embedding on llms.{named} if it is an embedding model",
                if llm.kind == LlmKind::Chat {
                    "a chat"
                } else {
                    "the transcription"
                },
                llm.kind,
                llm.kind.what_it_does()
            ),
        );
    }
}
