//! The one integration-test binary: every black-box test of hearth, over real sockets.

#[path = "../support/mod.rs"]
mod support;

mod approvals;
mod cli;
mod config_loading;
mod confirmations;
mod delegation;
mod durable_delivery;
mod exactly_once;
mod family_scripts;
mod family_scripts_examples;
mod family_scripts_running;
mod family_scripts_telegram;
mod http_api;
mod intents;
mod intents_config;
mod intents_escalation;
mod intents_escalation_matrix;
mod intents_policy;
mod intents_real_llm;
mod intents_restart;
mod intents_retry;
mod intents_routing;
mod intents_stopped;
mod intents_telegram;
mod llm_providers;
mod matrix_channel;
mod matrix_media;
mod mcp_pipeline;
mod mcp_tools;
mod one_hearth;
mod pipeline;
mod plugin_examples;
mod plugin_kinds;
mod plugins;
mod real_llm;
mod restart;
mod retention;
mod storage_ports;
mod synapse_support;
mod telegram_buttons;
mod telegram_channel;
mod telegram_fake_server;
mod tools_stack;
mod vision;
