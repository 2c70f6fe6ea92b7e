//! The OpenAI-compatible embeddings wire format (OpenAI, Ollama, llama.cpp's server, vLLM):
//! texts as `POST {base_url}/embeddings` with `{"model": ..., "input": [...]}`, answered by
//! `{"data": [{"index": 0, "embedding": [...]}, ...], "usage": {"prompt_tokens": n}}`.
//! Nothing outside this file knows this shape.

use std::fmt;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::embedding::checked_dimension;
use super::{
    Embedder, EmbeddingBatch, LlmError, ProviderSettings, Usage, join_url, send_for_json_within,
    without_key,
};

/// The most one text's vector may take in an answer: 8,192 numbers written out in full
/// (`-0.012345678901234567, `) and then some. A larger answer is refused as it arrives.
const ANSWER_BYTES_PER_TEXT: usize = 256 * 1024;
/// The rest of an answer: its `usage`, `model` and the objects around the vectors.
const ANSWER_BYTES_OVERHEAD: usize = 64 * 1024;

/// An `Embedder` speaking OpenAI's `/v1/embeddings`.
pub struct OpenAiEmbedder {
    settings: ProviderSettings,
    url: String,
    client: reqwest::Client,
}

impl OpenAiEmbedder {
    /// The client is shared with the chat providers, so all reuse one connection pool.
    pub fn new(settings: ProviderSettings, client: reqwest::Client) -> Self {
        // The same joining rule as chat's `chat/completions`, so one `base_url` serves both.
        let url = join_url(&settings.base_url, "embeddings");
        OpenAiEmbedder {
            settings,
            url,
            client,
        }
    }
}

// By hand: the settings hold the API key, which is never printed.
impl fmt::Debug for OpenAiEmbedder {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiEmbedder")
            .field("url", &self.url)
            .field("model", &self.settings.model)
            .field("timeout", &self.settings.timeout)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn wire(&self) -> &'static str {
        "openai"
    }

    async fn embed(&self, texts: &[String]) -> Result<EmbeddingBatch, LlmError> {
        let body = WireRequest {
            model: &self.settings.model,
            input: texts,
        };
        let http = self.client.post(&self.url).json(&body);
        let http = match &self.settings.api_key {
            Some(key) => http.bearer_auth(key),
            None => http,
        };
        let max_bytes = ANSWER_BYTES_OVERHEAD + texts.len() * ANSWER_BYTES_PER_TEXT;
        let answer: WireResponse = send_for_json_within(http, self.settings.timeout, max_bytes)
            .await
            .map_err(|error| without_key(error, self.settings.api_key.as_deref()))?;
        answer.into_batch(texts.len())
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    input: &'a [String],
}

#[derive(Deserialize)]
struct WireResponse {
    data: Vec<WireEmbedding>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireEmbedding {
    /// Which text of `input` this is; a server that leaves it out answers in their order.
    #[serde(default)]
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

impl WireResponse {
    /// The vectors in the order of the texts asked, checked.
    fn into_batch(self, asked: usize) -> Result<EmbeddingBatch, LlmError> {
        let answered = self.data.len();
        if answered != asked {
            return Err(LlmError::Decode(format!(
                "asked for {asked} vectors, the embedding answer has {answered}"
            )));
        }
        let vectors = if self.data.iter().all(|item| item.index.is_none()) {
            self.data.into_iter().map(|item| item.embedding).collect()
        } else {
            in_index_order(self.data)?
        };
        checked_dimension(&vectors, asked)?;
        // A server that does not count tokens (some local ones leave `usage` out) is
        // counted as zero, not estimated: such a server is one's own and costs nothing,
        // and a guess would show tokens nobody counted.
        let input_tokens = self
            .usage
            .and_then(|usage| usage.prompt_tokens)
            .unwrap_or(0);
        Ok(EmbeddingBatch {
            vectors,
            usage: Usage {
                input_tokens,
                output_tokens: 0,
            },
        })
    }
}

/// The vectors placed by their `index`: each of `0..n` exactly once.
fn in_index_order(data: Vec<WireEmbedding>) -> Result<Vec<Vec<f32>>, LlmError> {
    let count = data.len();
    let mut placed: Vec<Option<Vec<f32>>> = vec![None; count];
    for (position, item) in data.into_iter().enumerate() {
        let index = item.index.ok_or_else(|| {
            LlmError::Decode(format!(
                "item {position} of the embedding answer has no index, others have"
            ))
        })?;
        match placed.get_mut(index) {
            Some(slot @ None) => *slot = Some(item.embedding),
            Some(Some(_)) => {
                return Err(LlmError::Decode(format!(
                    "the embedding answer has index {index} twice"
                )));
            }
            None => {
                return Err(LlmError::Decode(format!(
                    "the embedding answer has index {index}, past the {count} texts asked"
                )));
            }
        }
    }
    // `count` items each in its own slot of `count`: every slot is filled.
    Ok(placed.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(json: serde_json::Value, asked: usize) -> Result<EmbeddingBatch, LlmError> {
        serde_json::from_value::<WireResponse>(json)
            .expect("the answer's shape")
            .into_batch(asked)
    }

    #[test]
    fn vectors_are_put_in_the_order_of_their_index_and_usage_counted() {
        let batch = answer(
            serde_json::json!({
                "object": "list",
                "data": [
                    {"object": "embedding", "index": 1, "embedding": [0.0, 1.0]},
                    {"object": "embedding", "index": 0, "embedding": [1.0, 0.0]},
                ],
                "model": "text-embedding-3-small",
                "usage": {"prompt_tokens": 7, "total_tokens": 7},
            }),
            2,
        )
        .unwrap();
        assert_eq!(batch.vectors, [vec![1.0, 0.0], vec![0.0, 1.0]]);
        assert_eq!(batch.usage.input_tokens, 7);
    }

    #[test]
    fn without_indexes_or_usage_the_order_is_the_answer_s_and_tokens_are_zero() {
        let batch = answer(
            serde_json::json!({"data": [{"embedding": [0.5]}, {"embedding": [0.25]}]}),
            2,
        )
        .unwrap();
        assert_eq!(batch.vectors, [vec![0.5], vec![0.25]]);
        assert_eq!(batch.usage, Usage::default());
    }

    #[test]
    fn a_wrong_count_twice_an_index_or_mixed_lengths_are_refused() {
        let cases = [
            (
                serde_json::json!({"data": [{"index": 0, "embedding": [1.0]}]}),
                2,
                "asked for 2 vectors, the embedding answer has 1",
            ),
            (
                serde_json::json!({"data": [
                    {"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]}),
                2,
                "index 0 twice",
            ),
            (
                serde_json::json!({"data": [
                    {"index": 0, "embedding": [1.0]}, {"index": 2, "embedding": [1.0]}]}),
                2,
                "index 2, past the 2 texts asked",
            ),
            (
                serde_json::json!({"data": [
                    {"index": 0, "embedding": [1.0]}, {"embedding": [1.0]}]}),
                2,
                "item 1 of the embedding answer has no index",
            ),
            (
                serde_json::json!({"data": [
                    {"index": 0, "embedding": [1.0, 0.0]}, {"index": 1, "embedding": [1.0]}]}),
                2,
                "vector 1 has 1",
            ),
        ];
        for (json, asked, fragment) in cases {
            let error = answer(json, asked).unwrap_err();
            assert!(
                matches!(&error, LlmError::Decode(message) if message.contains(fragment)),
                "{fragment}: {error:?}"
            );
        }
    }

    #[test]
    fn the_key_is_never_printed() {
        let embedder = OpenAiEmbedder::new(
            ProviderSettings {
                base_url: "http://127.0.0.1:9/v1/".into(),
                model: "nomic-embed-text".into(),
                api_key: Some("sk-very-secret".into()),
                timeout: std::time::Duration::from_secs(5),
                max_tokens: None,
            },
            reqwest::Client::new(),
        );
        let printed = format!("{embedder:?}");
        assert!(!printed.contains("sk-very-secret"), "{printed}");
        assert!(printed.contains("http://127.0.0.1:9/v1/embeddings"));
    }
}
