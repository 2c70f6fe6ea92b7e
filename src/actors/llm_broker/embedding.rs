//! `Embed` on the embedding entry: its texts split into calls of at most
//! `MAX_TEXTS_PER_CALL`, one after another, each tried again as a chat call is (`calls.rs`)
//! and checked before it counts as answered: one vector per text, all of the length the
//! first call answered. A call that fails for good fails the whole `Embed`; the calls
//! before it were recorded and cost what they cost.

use super::Shared;
use super::calls::{Spent, Target};
use crate::llm::{CallOrigin, Embed, EmbeddingBatch, Embeddings, LlmError, MAX_TEXTS_PER_CALL};

impl Shared {
    pub(super) async fn embed(&self, message: Embed) -> Result<Embeddings, LlmError> {
        let entry = self.embedding.as_ref().ok_or(LlmError::NoEmbedding)?;
        let target = Target {
            llm_name: &entry.llm_name,
            model: &entry.model,
            backend: entry.backend,
            timeout: entry.timeout,
            wire: entry.embedder.wire(),
        };
        let origin = CallOrigin {
            member_id: message.member.clone(),
            ..CallOrigin::default()
        };
        let purpose = message.purpose.as_str();
        let mut vectors = Vec::with_capacity(message.texts.len());
        let mut dimension = None;
        for texts in message.texts.chunks(MAX_TEXTS_PER_CALL) {
            let attempt = || async move {
                let batch = entry.embedder.embed(texts).await?;
                let answered = crate::llm::checked_dimension(&batch.vectors, texts.len())?;
                match dimension {
                    Some(expected) if expected != answered => Err(LlmError::Decode(format!(
                        "the embedding model answered vectors of {answered} numbers after \
                             vectors of {expected} for the same request"
                    ))),
                    _ => Ok(batch),
                }
            };
            let spent = |answer: &EmbeddingBatch| Spent {
                usage: answer.usage,
                cost: entry.cost(answer.usage.input_tokens),
            };
            let batch = self
                .call_with_retries(&target, &origin, attempt, spent)
                .await?;
            self.metrics.add(
                "hearth_llm_embedded_texts_total",
                &[("llm", &entry.llm_name), ("purpose", purpose)],
                texts.len() as f64,
            );
            dimension = dimension.or(batch.vectors.first().map(Vec::len));
            vectors.extend(batch.vectors);
        }
        tracing::debug!(
            llm = %entry.llm_name,
            purpose,
            texts = vectors.len(),
            "texts embedded"
        );
        Ok(Embeddings {
            vectors,
            model: entry.model.clone(),
            dimension: dimension.unwrap_or(0),
        })
    }
}
