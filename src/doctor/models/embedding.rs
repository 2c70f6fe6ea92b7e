//! The embedding model `memory.embedding_model` names, tried once: one short text sent
//! through the embedder hearth runs with. A vector back shows the server answers, takes the
//! key and serves the model; its length is said. An embedding entry memory does not name
//! is skipped.

use std::time::Instant;

use super::super::{CHECK_TIMEOUT, Check, within};
use super::what_to_fix;
use crate::config::{LlmModelConfig, LoadedConfig};
use crate::redaction::redact_url_password;

pub(super) async fn check(
    loaded: &LoadedConfig,
    subject: &str,
    name: &str,
    config: &LlmModelConfig,
) -> Check {
    let entry = match crate::app::build_embedding(loaded) {
        Ok(Some(entry)) if entry.llm_name == name => entry,
        Ok(_) => return Check::skipped(subject, "skipped (memory.embedding_model names another)"),
        Err(error) => return Check::failed(subject, error.to_string()),
    };
    let look_at = format!(
        "llms.{name}.base_url and that the server at {} runs",
        redact_url_password(&config.base_url)
    );
    let started = Instant::now();
    let asked = async {
        let answer = entry.embedder.embed(&["ok".to_owned()]).await;
        let took = started.elapsed().as_millis();
        match answer {
            Ok(batch) => Check::ok(
                subject,
                format!(
                    "{} answered a vector of {} numbers in {took} ms ({} at {})",
                    entry.model,
                    batch.vectors.first().map_or(0, Vec::len),
                    entry.embedder.wire(),
                    redact_url_password(&config.base_url)
                ),
            ),
            Err(error) => Check::failed(subject, what_to_fix(name, config, &error)),
        }
    };
    within(CHECK_TIMEOUT, subject, &look_at, asked).await
}
