//! hearth: a family assistant built as actix actors.
//! (codemap below)

pub mod actors;
pub mod app;
pub mod config;
pub mod family;
pub mod http;
pub mod llm;
pub mod metrics;
pub mod ports;
pub mod readiness;
pub mod storage;
pub mod tools;
