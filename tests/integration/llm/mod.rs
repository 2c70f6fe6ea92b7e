//! The models: providers, streaming, embeddings, hearth's own local model, a real model,
//! images.

mod embeddings;
mod llm_providers;
mod llm_streaming;
mod local_model;
mod real_llm;
mod vision;
