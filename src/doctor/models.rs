//! Each model of `llms` that a profile uses (as its model or its fallback) asked one tiny
//! question through the provider hearth calls it with; a model no profile uses is skipped.
//! The transcription entry is sent a tenth of a second of silence (`transcription.rs`), the
//! embedding model memory uses one short text (`embedding.rs`).

mod embedding;
mod transcription;

use std::collections::BTreeSet;
use std::time::Instant;

use super::{CHECK_TIMEOUT, Check, within};
use crate::actors::llm_broker::ModelEntry;
use crate::config::{LlmKind, LlmModelConfig, LoadedConfig};
use crate::llm::{ChatMessage, ChatRequest, LlmError};
use crate::redaction::redact_url_password;

/// Enough for any model to say "ok", little enough to cost nothing.
const ANSWER_TOKENS: u32 = 16;

pub(super) async fn check(loaded: &LoadedConfig) -> Vec<Check> {
    let used: BTreeSet<&str> = loaded
        .profiles
        .iter()
        .flat_map(|profile| {
            std::iter::once(profile.processing.llm_model.as_str())
                .chain(profile.processing.llm_fallback_model.as_deref())
        })
        .collect();
    let models = match crate::app::build_models(loaded, None) {
        Ok(models) => models,
        Err(error) => return vec![Check::failed("models", error.to_string())],
    };
    let checks = loaded.config.llms.iter().map(|(name, config)| {
        let subject = format!("model {name:?}");
        let entry = models.get(name);
        let used = used.contains(name.as_str());
        async move {
            match config.kind {
                LlmKind::Chat => {}
                LlmKind::Transcription => {
                    return transcription::check(loaded, &subject, name, config).await;
                }
                LlmKind::Embedding => {
                    return embedding::check(loaded, &subject, name, config).await;
                }
            }
            match entry {
                // Started by `run` itself: here only whether it is installed.
                Some(_) if used && name == crate::config::LOCAL_MODEL_LLM => {
                    local_model_installed(loaded, &subject).await
                }
                Some(entry) if used => {
                    let look_at = format!(
                        "llms.{name}.base_url and that the server at {} runs",
                        redact_url_password(&config.base_url)
                    );
                    within(
                        CHECK_TIMEOUT,
                        &subject,
                        &look_at,
                        ask(&subject, name, config, entry),
                    )
                    .await
                }
                _ => Check::skipped(subject, "skipped (no profile uses it)"),
            }
        }
    });
    futures::future::join_all(checks).await
}

/// One tiny chat completion.
async fn ask(subject: &str, name: &str, config: &LlmModelConfig, entry: &ModelEntry) -> Check {
    let request = ChatRequest {
        messages: vec![ChatMessage::user("Say ok.")],
        max_tokens: Some(ANSWER_TOKENS),
        ..ChatRequest::default()
    };
    let started = Instant::now();
    match entry.provider.chat(&request).await {
        Ok(_) => Check::ok(
            subject,
            format!(
                "{} answered in {} ms ({} at {})",
                entry.model,
                started.elapsed().as_millis(),
                entry.provider.wire(),
                redact_url_password(&config.base_url)
            ),
        ),
        Err(error) => Check::failed(subject, what_to_fix(name, config, &error)),
    }
}

/// The failure in words, with the key to change.
pub(super) fn what_to_fix(name: &str, config: &LlmModelConfig, error: &LlmError) -> String {
    let url = redact_url_password(&config.base_url);
    match error {
        // The body of a refusal may quote the key it refused: it is left out.
        LlmError::Status { status, .. } if *status == 401 || *status == 403 => {
            match &config.api_key_env {
                Some(variable) => format!(
                    "the key in {variable} was refused ({status}); put a valid key in \
                     {variable}, or name the right variable in llms.{name}.api_key_env"
                ),
                None => format!(
                    "{url} asks for a key ({status}); name the variable that holds it in \
                     llms.{name}.api_key_env"
                ),
            }
        }
        LlmError::Status { status: 404, .. } => format!(
            "{error}; check llms.{name}.base_url ({url}) and llms.{name}.model ({:?})",
            config.model
        ),
        LlmError::Status { .. } => format!("{error}; check llms.{name}"),
        LlmError::Timeout(_) | LlmError::Connect(_) => {
            format!("{error}; check llms.{name}.base_url ({url}) and that the server runs")
        }
        LlmError::Decode(_) => format!(
            "{error}; check that llms.{name}.provider is the api the server at {url} speaks"
        ),
        LlmError::UnknownModel(_)
        | LlmError::NoTranscription
        | LlmError::NoEmbedding
        | LlmError::AudioFile(_) => error.to_string(),
    }
}

/// Whether the small local model `run` would start is installed.
async fn local_model_installed(loaded: &LoadedConfig, subject: &str) -> Check {
    let Some(local) = &loaded.local_model else {
        return Check::skipped(subject, "skipped (not used)");
    };
    let install = crate::local_model::LocalModelInstall::new(&local.install_dir);
    let launcher = install.launcher();
    if tokio::fs::metadata(&launcher)
        .await
        .is_ok_and(|found| found.is_file())
    {
        Check::ok(
            subject,
            format!(
                "the small local model is installed ({})",
                launcher.display()
            ),
        )
    } else {
        Check::failed(
            subject,
            format!(
                "the small local model is not installed ({} is missing): run `bash {}`",
                launcher.display(),
                crate::local_model::INSTALL_SCRIPT
            ),
        )
    }
}
