//! Family memory found again: `search_memory` as each member may read it (private chats,
//! groups, notes; on SQLite and PostgreSQL), its filters, the vector path and its fallback,
//! and `processing_config.recall` (`tool`, `auto`, `off`); and its indexer over real
//! sockets: a chat over HTTP indexed and found as its member only, `hearth memory status`
//! beside the running hearth, and the real binary killed with kill -9 while it indexes a
//! long history. (Two PostgreSQL workers indexing once between them:
//! `postgres/postgres_memory.rs`.)

mod memory_chat_indexed;
mod memory_indexer_kill;
mod memory_privacy;
mod memory_search;
