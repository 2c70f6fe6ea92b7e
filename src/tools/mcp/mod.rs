//! MCP servers as tool providers (the `rmcp` client): every server of `mcp_servers`
//! connected and supervised, its tools offered to profiles as `{server_id}__{tool_name}`.
//!
//! - `McpServers::start` connects to every server at once, each within the init timeout;
//!   a server that fails does not stop hearth: it is retried in the background (1 s doubling
//!   to 60 s), and `states()` shows how each one is doing (for readiness).
//! - A stdio server runs as a child process with `args`, hearth's `PATH`, `HOME`, locale and
//!   terminal variables and its own `env` and `env_from_env` (nothing else of hearth's
//!   environment, which holds bot tokens and API keys). It is killed when hearth stops
//!   (`shutdown`, or when the `McpServers` and the runtime are dropped): no orphans.
//!   If hearth itself is killed, the server's stdin closes, which stdio servers take as the
//!   signal to exit (a wrapper command's own children are not killed by hearth directly).
//! - A server that dies is restarted with the same backoff; meanwhile calls to its tools
//!   answer "error: tool server <id> is unavailable right now: ..." instead of failing the turn.
//!   A stdio server's death ends its connection; an HTTP server's is found by a ping (every
//!   30 s, and after a call failed at the transport or timed out).
//! - `notifications/tools/list_changed` makes hearth list that server's tools again.
//! - What a server sends is read within a bound (`MAX_MESSAGE_BYTES` a message): over stdio
//!   a larger tool result reaches the model cut to the start of its text without ever being
//!   held whole (`stdio.rs`, `oversized.rs`); over streamable HTTP a larger event ends its
//!   call with an error.
//! - Elicitation: see `elicitation.rs` (hearth's side of the protocol) and `elicitation_chat.rs`
//!   (the question asked in the member's chat); names: see `config/mcp_names.rs`, which
//!   config validation and `confirm_tools` read too.
//! - `check.rs`: one server reached once and closed (`hearth doctor`).
//! - The client is the Cargo feature `mcp` (in the default build). Without it this module is
//!   empty, and config with `mcp_servers` is refused.

#[cfg(feature = "mcp")]
mod check;
#[cfg(feature = "mcp")]
mod client;
#[cfg(feature = "mcp")]
mod elicitation;
#[cfg(feature = "mcp")]
mod elicitation_chat;
#[cfg(feature = "mcp")]
pub(crate) mod elicitation_form;
#[cfg(feature = "mcp")]
mod oversized;
#[cfg(feature = "mcp")]
mod provider;
#[cfg(feature = "mcp")]
mod server;
#[cfg(all(test, feature = "mcp"))]
mod server_tests;
#[cfg(feature = "mcp")]
mod servers;
#[cfg(feature = "mcp")]
mod stdio;
#[cfg(feature = "mcp")]
mod transport;

#[cfg(feature = "mcp")]
pub use check::{CheckedServer, McpCheckError, check_server};
#[cfg(feature = "mcp")]
pub use elicitation::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, MAX_ELICITATION_WAIT,
};
#[cfg(feature = "mcp")]
pub use elicitation_chat::ChatElicitation;
#[cfg(feature = "mcp")]
pub use provider::{IDEMPOTENCY_META_KEY, MAX_RESULT_BYTES};
#[cfg(feature = "mcp")]
pub use servers::{McpOptions, McpServers, ServerState};
#[cfg(feature = "mcp")]
pub use stdio::MAX_MESSAGE_BYTES;
