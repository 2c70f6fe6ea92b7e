//! Family memory found again: `search_memory` as each member may read it (private chats,
//! groups, notes; on SQLite and PostgreSQL), its filters, the vector path and its fallback,
//! and `processing_config.recall` (`tool`, `auto`, `off`).

mod memory_privacy;
mod memory_search;
