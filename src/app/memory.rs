//! Family memory's indexer, started beside the running app when `memory.enabled`: on the
//! stores' memory, the family, the broker for the embedding model `memory.embedding_model`
//! names (none: nothing is embedded), and, on PostgreSQL, this process among the workers,
//! so only the holder of `memory:indexer` indexes.

use std::time::Duration;

use actix::{Actor, Addr};

use super::family::FamilyParts;
use super::foundation::Foundation;
use crate::actors::llm_broker::LlmBroker;
use crate::actors::memory_indexer::{EmbeddingTarget, IndexerDeps, MemoryIndexer};
use crate::config::LoadedConfig;

/// The `MemoryIndexer`, started (`None` with `memory.enabled: false`). After the queue and
/// the channels, which write what it reads; its first pass waits an interval.
pub(super) fn start_memory_indexer(
    loaded: &LoadedConfig,
    base: &Foundation,
    family: &FamilyParts,
    broker: &Addr<LlmBroker>,
) -> Option<Addr<MemoryIndexer>> {
    let memory = &loaded.config.memory;
    if !memory.enabled {
        tracing::info!("memory.enabled is false: nothing new is indexed");
        return None;
    }
    let embedding = loaded
        .config
        .embedding_llm()
        .map(|(_, llm)| EmbeddingTarget {
            model: llm.model.clone(),
            embedder: broker.clone().recipient(),
        });
    let indexer = MemoryIndexer::new(IndexerDeps {
        memory: base.stores.family_memory.clone(),
        family: family.family.clone(),
        embedding,
        interval: Duration::from_secs(memory.index_interval_seconds),
        metrics: base.metrics.clone(),
        worker: base.shared_worker.clone(),
    });
    Some(indexer.start())
}
