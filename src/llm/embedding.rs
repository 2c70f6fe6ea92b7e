//! The request that turns texts into vectors: `Embed`, texts sent to the embedding model
//! of config `llms` that `memory.embedding_model` names (an entry with `kind: embedding`),
//! what it answers, and the `Embedder` port a backend implements (`openai_embedding.rs`).
//! The `LlmBroker` handles it like a chat call: the same local/cloud limits, retries,
//! timeout, cost and metrics, texts split into calls of at most [`MAX_TEXTS_PER_CALL`].

use actix::Message;
use async_trait::async_trait;

use super::{LlmError, Usage};
use crate::ids::MemberId;

/// The most texts one call to the backend carries; the broker splits a longer `Embed`.
/// OpenAI takes 2,048 inputs, but a local server embeds a batch in one pass of its memory.
pub const MAX_TEXTS_PER_CALL: usize = 64;

/// What the vectors are for: kept apart in logs and `hearth_llm_embedded_texts_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EmbedPurpose {
    /// Memory's chunks, to be stored and searched.
    Index,
    /// A search's question, compared with the stored chunks.
    Query,
}

impl EmbedPurpose {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbedPurpose::Index => "index",
            EmbedPurpose::Query => "query",
        }
    }
}

/// Turn `texts` into vectors on the embedding model `memory.embedding_model` names.
///
/// Handled in `llm_broker/mod.rs`; the answer has one vector per text, in their order.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Embeddings, LlmError>")]
pub struct Embed {
    pub texts: Vec<String>,
    /// The member whose words or question these are (usage per member); `None` for the
    /// assistant's own words and the family's.
    pub member: Option<MemberId>,
    pub purpose: EmbedPurpose,
}

/// One vector per text asked, in their order, all of `dimension` numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Embeddings {
    pub vectors: Vec<Vec<f32>>,
    /// The configured `llms.<name>.model`, which stored vectors are kept under (the name the
    /// server answers with may carry a version and is not used).
    pub model: String,
    /// The length of every vector; 0 when no text was asked.
    pub dimension: usize,
}

/// What one call to the backend answered.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingBatch {
    /// One per text, in their order, all of one length (checked by the backend).
    pub vectors: Vec<Vec<f32>>,
    /// Tokens read (`input_tokens`); what the cost is counted on.
    pub usage: Usage,
}

/// The port every embedding backend implements; the `LlmBroker` holds one.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// Short name of the wire format, for logs and telemetry.
    fn wire(&self) -> &'static str;

    /// One vector per text of `texts`, in their order, all of one length; a backend that
    /// answers another count or mixed lengths fails with `LlmError::Decode`. Errors map as
    /// chat's do, so the broker retries them alike.
    async fn embed(&self, texts: &[String]) -> Result<EmbeddingBatch, LlmError>;
}

/// Whether `vectors` are one per text of `asked`, of one length above zero, finite: what a
/// backend's answer must be before anything stores it. The length, or why not.
pub(crate) fn checked_dimension(vectors: &[Vec<f32>], asked: usize) -> Result<usize, LlmError> {
    if vectors.len() != asked {
        return Err(LlmError::Decode(format!(
            "asked for {asked} vectors, the embedding answer has {}",
            vectors.len()
        )));
    }
    let Some(first) = vectors.first() else {
        return Ok(0);
    };
    let dimension = first.len();
    if dimension == 0 {
        return Err(LlmError::Decode(
            "the embedding answer has an empty vector".into(),
        ));
    }
    for (index, vector) in vectors.iter().enumerate() {
        if vector.len() != dimension {
            return Err(LlmError::Decode(format!(
                "the embedding answer's vectors differ in length: vector 0 has {dimension} \
                 numbers, vector {index} has {}",
                vector.len()
            )));
        }
        if vector.iter().any(|number| !number.is_finite()) {
            return Err(LlmError::Decode(format!(
                "vector {index} of the embedding answer holds a number out of range"
            )));
        }
    }
    Ok(dimension)
}

/// The dimensions of [`hashed_embedding`]'s vectors as the fakes answer them.
pub const HASHED_DIMENSIONS: usize = 64;

/// A deterministic stand-in for an embedding model, for tests and benchmarks: `text`'s
/// words (runs of letters and digits, lowercased) counted into `dimensions` buckets by
/// their FNV-1a hash, then scaled to length 1. Texts sharing words point alike; the same
/// text gives the same vector on every machine and run. A text without words is all zeros.
pub fn hashed_embedding(text: &str, dimensions: usize) -> Vec<f32> {
    let mut vector = vec![0.0f32; dimensions];
    if dimensions == 0 {
        return vector;
    }
    for word in text
        .split(|character: char| !character.is_alphanumeric())
        .filter(|word| !word.is_empty())
    {
        let hash = fnv1a(word.to_lowercase().as_bytes());
        let bucket = usize::try_from(hash % dimensions as u64).unwrap_or(0);
        vector[bucket] += 1.0;
    }
    let length = vector.iter().map(|value| value * value).sum::<f32>().sqrt();
    if length > 0.0 {
        for value in &mut vector {
            *value /= length;
        }
    }
    vector
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The in-memory `Embedder` for unit tests and benchmarks: [`hashed_embedding`]s of
/// [`HASHED_DIMENSIONS`], a token per word; no server.
#[derive(Debug, Default)]
pub struct HashedEmbedder;

#[async_trait]
impl Embedder for HashedEmbedder {
    fn wire(&self) -> &'static str {
        "hashed"
    }

    async fn embed(&self, texts: &[String]) -> Result<EmbeddingBatch, LlmError> {
        let words = texts.iter().map(|text| text.split_whitespace().count());
        Ok(EmbeddingBatch {
            vectors: texts
                .iter()
                .map(|text| hashed_embedding(text, HASHED_DIMENSIONS))
                .collect(),
            usage: Usage {
                input_tokens: u64::try_from(words.sum::<usize>()).unwrap_or(u64::MAX),
                output_tokens: 0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(a, b)| a * b).sum()
    }

    #[test]
    fn hashed_vectors_are_unit_length_deterministic_and_closer_for_shared_words() {
        let milk = hashed_embedding("Buy milk and eggs", HASHED_DIMENSIONS);
        assert_eq!(milk.len(), HASHED_DIMENSIONS);
        assert!((cosine(&milk, &milk) - 1.0).abs() < 1e-6);
        assert_eq!(
            milk,
            hashed_embedding("buy MILK, and eggs!", HASHED_DIMENSIONS)
        );
        let more_milk = hashed_embedding("milk for the eggs", HASHED_DIMENSIONS);
        let dentist = hashed_embedding("dentist on tuesday", HASHED_DIMENSIONS);
        assert!(cosine(&milk, &more_milk) > cosine(&milk, &dentist));
        assert!(
            hashed_embedding(" ... ", 8)
                .iter()
                .all(|value| *value == 0.0)
        );
        assert!(hashed_embedding("anything", 0).is_empty());
    }

    #[test]
    fn hashed_vectors_are_the_same_on_every_machine() {
        // FNV-1a's published test vectors: fixed by its definition, not by a seed.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        let vector = hashed_embedding("a", 64);
        let bucket = (0xaf63_dc4c_8601_ec8c_u64 % 64) as usize;
        assert_eq!(vector[bucket], 1.0);
    }

    #[test]
    fn a_wrong_count_an_empty_a_mixed_or_an_infinite_vector_is_refused() {
        let two = vec![vec![0.5, 0.5], vec![1.0, 0.0]];
        assert_eq!(checked_dimension(&two, 2).unwrap(), 2);
        assert_eq!(checked_dimension(&[], 0).unwrap(), 0);
        let refused = [
            (
                two.clone(),
                3,
                "asked for 3 vectors, the embedding answer has 2",
            ),
            (vec![vec![]], 1, "empty vector"),
            (vec![vec![1.0, 0.0], vec![1.0]], 2, "vector 1 has 1"),
            (vec![vec![f32::INFINITY]], 1, "out of range"),
        ];
        for (vectors, asked, fragment) in refused {
            let error = checked_dimension(&vectors, asked).unwrap_err();
            assert!(
                matches!(&error, LlmError::Decode(message) if message.contains(fragment)),
                "{error:?}"
            );
            assert!(!error.is_transient());
        }
    }
}
