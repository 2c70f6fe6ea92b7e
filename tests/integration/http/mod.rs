//! The HTTP API and the message pipeline behind it.

mod http_api;
mod http_edges;
mod pipeline;
