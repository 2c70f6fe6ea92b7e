//! Fakes that speak real protocols on loopback, hearth's actors on a paused clock, and the
//! seeds of random moments, shared by the integration tests and the benchmarks.

pub mod background_server;
pub mod browser;
pub mod buy_server;
pub mod calendar_server;
pub mod delivery;
pub mod faketime;
pub mod family_memory;
pub mod family_scripts;
pub mod hearth_app;
pub mod intents_profile;
pub mod llm_server;
pub mod matrix_family;
pub mod matrix_member;
pub mod mcp;
pub mod measure;
pub mod memory_indexing;
pub mod paused;
pub mod plugin_server;
pub mod postgres;
pub mod providers;
pub mod radicale;
pub mod real_llm;
pub mod reminders;
pub mod seed;
pub mod synapse;
pub mod telegram;
pub mod telegram_family;
pub mod test_config;
pub mod tool_lists;
pub mod transcription_server;
pub mod voice;
pub mod web_page;
pub mod workers;
