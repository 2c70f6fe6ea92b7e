//! The one integration-test binary: every black-box test of hearth, over real sockets.

#[path = "../support/mod.rs"]
mod support;

mod calendar;
mod commands;
mod config;
mod delivery;
mod family;
mod http;
mod intents;
mod llm;
mod matrix;
mod memory;
mod notes;
mod paused;
mod postgres;
mod reminders;
mod storage_ports;
mod telegram;
mod tools;
mod voice;
mod web;
