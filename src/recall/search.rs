//! One search of family memory as a member asks it: the query's words through the full-text
//! index and, when an embedding model is configured, its vector through the stored vectors,
//! the two rankings fused (`fusion::fuse`), one hit per source. The reader is always the
//! member who asks; what they may read is the port's to enforce (`ports::FamilyMemory`).
//!
//! The query's vector comes from the LLM broker through `QueryEmbedder`, a trait of this
//! module implemented in `app` over the broker's address, so recall names no actor. When
//! embedding fails the search goes on with the words alone (logged): a member never hears
//! of an embedding server.

use std::collections::HashSet;
use std::sync::Arc;

use async_trait::async_trait;

use super::fusion::fuse;
use crate::ids::MemberId;
use crate::llm::LlmError;
use crate::ports::{
    FamilyMemory, MemoryFilter, MemoryHit, MemoryKind, StorageError, memory_query_words,
};

/// Candidates each ranking gives the fusion: enough that a good chunk of one ranking meets
/// its place in the other, few enough to read quickly.
const CANDIDATES: usize = 24;

/// The most characters of a query embedded: a long message is embedded by its start.
pub const MAX_EMBEDDED_QUERY_CHARS: usize = 1_000;

/// Vector hits less similar than this to the query are left out, so a question unlike
/// anything kept finds nothing instead of the least unlike. Low: a word the member used
/// and nothing else are found by the full text.
pub const MIN_SIMILARITY: f64 = 0.25;

/// A query's vector and the model it is of (what the stored vectors are kept under).
#[derive(Debug, Clone, PartialEq)]
pub struct QueryVector {
    pub model: String,
    pub vector: Vec<f32>,
}

/// Why a query has no vector.
#[derive(Debug, thiserror::Error)]
pub enum QueryVectorError {
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error("the llm broker did not answer: {0}")]
    Broker(String),
}

/// Turns a member's query into a vector on memory's embedding model (`Embed` with the
/// purpose `Query`, through the LLM broker's limits, retries, costs and metrics).
#[async_trait]
pub trait QueryEmbedder: Send + Sync {
    /// `query`'s vector, asked for `member` (their usage).
    async fn embed_query(
        &self,
        query: &str,
        member: &MemberId,
    ) -> Result<QueryVector, QueryVectorError>;
}

/// What one search found, best first, and the words it looked for (the snippets are cut
/// around them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Found {
    pub hits: Vec<MemoryHit>,
    pub words: Vec<String>,
}

/// Family memory searched by words and, with an embedder, by meaning.
pub struct MemorySearch {
    memory: Arc<dyn FamilyMemory>,
    embedder: Option<Arc<dyn QueryEmbedder>>,
}

impl MemorySearch {
    /// `embedder` is `None` when no `memory.embedding_model` is configured.
    pub fn new(memory: Arc<dyn FamilyMemory>, embedder: Option<Arc<dyn QueryEmbedder>>) -> Self {
        MemorySearch { memory, embedder }
    }

    /// Whether a query is searched by meaning too (an embedding model is configured).
    pub fn by_meaning_too(&self) -> bool {
        self.embedder.is_some()
    }

    /// At most `limit` hits `reader` may read for `query`, admitted by `filter`, best first,
    /// the best chunk of each source only. A storage failure is an error; an embedding
    /// failure is logged and the words alone decide.
    pub async fn find(
        &self,
        reader: &MemberId,
        query: &str,
        filter: &MemoryFilter,
        limit: usize,
    ) -> Result<Found, StorageError> {
        let words = memory_query_words(query);
        let by_words = async {
            if words.is_empty() {
                return Ok(Vec::new());
            }
            self.memory
                .search_words(reader, &words, filter, CANDIDATES)
                .await
        };
        let (by_words, by_meaning) = tokio::join!(by_words, self.by_meaning(reader, query, filter));
        let by_words = by_words?;
        let by_meaning = by_meaning?;
        let rankings: Vec<Vec<i64>> = [&by_words, &by_meaning]
            .iter()
            .map(|hits| hits.iter().map(|hit| hit.chunk_id).collect())
            .collect();
        let mut chunks = by_words.into_iter().chain(by_meaning).collect::<Vec<_>>();
        let mut seen_sources: HashSet<(MemoryKind, String)> = HashSet::new();
        let mut hits = Vec::new();
        for (chunk_id, score) in fuse(&rankings) {
            let Some(position) = chunks.iter().position(|hit| hit.chunk_id == chunk_id) else {
                continue;
            };
            let mut hit = chunks.swap_remove(position);
            if !seen_sources.insert((hit.kind, hit.reference.clone())) {
                continue;
            }
            hit.score = score;
            hits.push(hit);
            if hits.len() == limit {
                break;
            }
        }
        Ok(Found { hits, words })
    }

    /// The chunks nearest to `query`'s vector, or none without an embedder or when it
    /// fails.
    async fn by_meaning(
        &self,
        reader: &MemberId,
        query: &str,
        filter: &MemoryFilter,
    ) -> Result<Vec<MemoryHit>, StorageError> {
        let Some(embedder) = &self.embedder else {
            return Ok(Vec::new());
        };
        let query: String = query
            .trim()
            .chars()
            .take(MAX_EMBEDDED_QUERY_CHARS)
            .collect();
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let vector = match embedder.embed_query(&query, reader).await {
            Ok(vector) => vector,
            Err(error) => {
                // The words still find what they find; the member hears nothing of it.
                tracing::warn!(%error, member = %reader, "memory query not embedded; searched by words alone");
                return Ok(Vec::new());
            }
        };
        let mut hits = self
            .memory
            .search_vector(reader, &vector.model, &vector.vector, filter, CANDIDATES)
            .await?;
        hits.retain(|hit| hit.score >= MIN_SIMILARITY);
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::hashed_embedding;
    use crate::ports::{MemoryReaders, MemorySource};
    use crate::storage::in_memory::InMemoryStore;

    const MODEL: &str = "test-embedding";

    /// Hashed vectors, or a failure.
    struct Embedder {
        fails: bool,
    }

    #[async_trait]
    impl QueryEmbedder for Embedder {
        async fn embed_query(
            &self,
            query: &str,
            _member: &MemberId,
        ) -> Result<QueryVector, QueryVectorError> {
            if self.fails {
                return Err(QueryVectorError::Broker("stopped".into()));
            }
            Ok(QueryVector {
                model: MODEL.into(),
                vector: hashed_embedding(query, 64),
            })
        }
    }

    fn note(reference: &str, chunks: &[&str]) -> MemorySource {
        MemorySource {
            kind: MemoryKind::Note,
            reference: reference.into(),
            title: format!("note {reference}"),
            readers: MemoryReaders::Family,
            member: None,
            conversation: None,
            created_at_ms: 1_000,
            chunks: chunks.iter().map(|text| text.to_string()).collect(),
        }
    }

    /// A store with three notes, the second's vector the one of "tooth doctor" (a model
    /// that knows a dentist is one), the others their own text's.
    async fn store() -> Arc<InMemoryStore> {
        let store = Arc::new(InMemoryStore::default());
        let sources = [
            note(
                "1",
                &[
                    "The wifi password is hearth-rocks",
                    "Wifi in the garden: none",
                ],
            ),
            note("2", &["Dr Okafor on Linden Street, Thursdays"]),
            note("3", &["Bring the garden chairs in"]),
        ];
        store.put_sources(&sources, None, 2_000).await.unwrap();
        let missing = store.vectors_missing(MODEL, 10).await.unwrap();
        let vectors: Vec<(String, Vec<f32>)> = missing
            .into_iter()
            .map(|(hash, text)| {
                let meaning = if text.contains("Okafor") {
                    "tooth doctor"
                } else {
                    text.as_str()
                };
                (hash, hashed_embedding(meaning, 64))
            })
            .collect();
        store.put_vectors(MODEL, &vectors).await.unwrap();
        store
    }

    fn alice() -> MemberId {
        "alice".parse().unwrap()
    }

    fn references(found: &Found) -> Vec<&str> {
        found
            .hits
            .iter()
            .map(|hit| hit.reference.as_str())
            .collect()
    }

    #[tokio::test]
    async fn one_hit_per_source_and_vectors_find_what_no_word_does() {
        let store = store().await;
        let words_only = MemorySearch::new(store.clone(), None);
        let filter = MemoryFilter::default();
        let found = words_only
            .find(&alice(), "the wifi in the garden", &filter, 6)
            .await
            .unwrap();
        assert_eq!(found.words, ["wifi", "garden"]);
        // Note 1 has two chunks holding the words: it is shown once.
        assert_eq!(references(&found), ["1", "3"]);
        let nothing = words_only
            .find(&alice(), "tooth doctor", &filter, 6)
            .await
            .unwrap();
        assert!(nothing.hits.is_empty());

        let both = MemorySearch::new(store.clone(), Some(Arc::new(Embedder { fails: false })));
        let found = both
            .find(&alice(), "tooth doctor", &filter, 6)
            .await
            .unwrap();
        // First by far: hashed vectors of 64 numbers also meet where words share a bucket.
        assert_eq!(references(&found)[0], "2");
    }

    #[tokio::test]
    async fn a_failing_embedder_leaves_the_words() {
        let store = store().await;
        let search = MemorySearch::new(store, Some(Arc::new(Embedder { fails: true })));
        let found = search
            .find(&alice(), "wifi password", &MemoryFilter::default(), 6)
            .await
            .unwrap();
        assert_eq!(references(&found), ["1"]);
        let limited = search
            .find(&alice(), "wifi garden chairs", &MemoryFilter::default(), 1)
            .await
            .unwrap();
        assert_eq!(limited.hits.len(), 1);
    }
}
