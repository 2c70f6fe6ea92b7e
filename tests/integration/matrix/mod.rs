//! The Matrix channel against a real Synapse.

mod matrix_channel;
mod matrix_media;
mod matrix_strangers;
mod synapse_support;
