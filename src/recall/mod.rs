//! Recall: what the family told hearth, found again. This module owns the rules that are
//! neither storage nor an actor:
//!
//! - `chunks.rs`: how a text is cut into chunks;
//! - `fusion.rs`: how the full-text and vector rankings of one search are made one;
//! - `search.rs`: one search as a member asks it (words, and the query's vector through
//!   `QueryEmbedder`, the broker reached from `app`), fused, one hit per source;
//! - `texts.rs`: each hit as a short snippet saying where it comes from, who said it and
//!   when, in bounded lists;
//! - `tools.rs`: the `search_memory` tool and the snippets `processing_config.recall: auto`
//!   gives the model with each message.
//!
//! What a member may find is the port's to enforce (`ports::FamilyMemory`): every row
//! carries who may read it and every query asks as the member, who is always the one the
//! turn is for (`ToolContext::member_id`), never an argument.

pub mod chunks;
pub mod fusion;
mod search;
mod texts;
mod tools;

pub use search::{
    Found, MAX_EMBEDDED_QUERY_CHARS, MIN_SIMILARITY, MemorySearch, QueryEmbedder, QueryVector,
    QueryVectorError,
};
pub use texts::{AUTO_CHARS, AUTO_HITS, Reading, SNIPPET_CHARS, TOOL_CHARS, TOOL_HITS, snippet};
pub use tools::{
    MAX_QUERY_CHARS, MEMORY_TOOL_NAMES, MemoryQuery, MemoryToolset, SEARCH_MEMORY, read_arguments,
};
