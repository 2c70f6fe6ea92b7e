//! Calling a plugin the way its manifest says: `http` (hearth POSTs the call as JSON),
//! `command` (a local program gets the call as JSON on stdin and answers JSON on stdout)
//! or `inline` (built into hearth). Every call has the manifest's timeout, and whatever
//! goes wrong becomes a `PluginCallError` that says which plugin and what happened, in
//! words a family member can be told.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::manifest::{PluginKind, PluginManifest};

/// The most of a plugin's answer hearth reads: enough for any reply, bounded memory.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// One call, as a plugin receives it (DESIGN.md "Plugins").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginCallRequest {
    pub plugin_id: String,
    pub capability_id: String,
    pub parameters: Map<String, Value>,
    pub user: PluginUser,
    /// The conversation's key (`telegram:-100123`), as plugins have always been sent it.
    pub conversation_id: crate::ids::ConversationKey,
    /// The same for every attempt of one tool call of one turn (a turn replayed after hearth
    /// stopped never calls again, but a plugin can de-duplicate too); absent outside a turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginUser {
    pub id: crate::ids::MemberId,
    pub name: String,
}

/// What a plugin answered.
#[derive(Debug, Clone, PartialEq)]
pub enum PluginAnswer {
    Text(String),
    /// The plugin needs more from the member before it can act.
    AskUser {
        missing: Vec<String>,
        text: String,
    },
}

/// The JSON a plugin answers with.
#[derive(Debug, Deserialize)]
struct AnswerDocument {
    text: Option<String>,
    #[serde(default)]
    ask_user: bool,
    #[serde(default)]
    missing_parameters: Vec<String>,
    error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PluginCallError {
    #[error("the {plugin} plugin did not answer within {seconds} s")]
    Timeout { plugin: String, seconds: u64 },
    #[error("the {plugin} plugin cannot be reached: {reason}")]
    Unreachable { plugin: String, reason: String },
    #[error("the {plugin} plugin failed (http {status}): {body}")]
    HttpStatus {
        plugin: String,
        status: u16,
        body: String,
    },
    #[error("the {plugin} plugin's command failed: {reason}")]
    Command { plugin: String, reason: String },
    #[error("the {plugin} plugin answered something hearth cannot read: {reason}")]
    BadAnswer { plugin: String, reason: String },
    #[error("the {plugin} plugin reported an error: {message}")]
    Reported { plugin: String, message: String },
    #[error("the {plugin} plugin is inline but not built into this hearth")]
    NoInlinePlugin { plugin: String },
    #[error("the {plugin} plugin's answer is larger than the {limit} bytes hearth reads")]
    TooLarge { plugin: String, limit: usize },
}

/// A plugin built into hearth.
#[async_trait]
pub trait InlinePlugin: Send + Sync {
    async fn call(&self, request: &PluginCallRequest) -> Result<PluginAnswer, PluginCallError>;
}

pub struct PluginInvoker {
    http: reqwest::Client,
    inline: HashMap<String, Arc<dyn InlinePlugin>>,
    /// Where `command` plugins run: their own folder under `plugins_dir`.
    plugins_dir: PathBuf,
}

impl PluginInvoker {
    pub fn new(
        http: reqwest::Client,
        inline: HashMap<String, Arc<dyn InlinePlugin>>,
        plugins_dir: PathBuf,
    ) -> Self {
        PluginInvoker {
            http,
            inline,
            plugins_dir,
        }
    }

    pub async fn invoke(
        &self,
        manifest: &PluginManifest,
        request: &PluginCallRequest,
    ) -> Result<PluginAnswer, PluginCallError> {
        let plugin = manifest.id.clone();
        let seconds = manifest.timeout_seconds.max(1);
        let work = async {
            match &manifest.kind {
                PluginKind::Inline => match self.inline.get(&manifest.id) {
                    Some(inline) => inline.call(request).await,
                    None => Err(PluginCallError::NoInlinePlugin {
                        plugin: plugin.clone(),
                    }),
                },
                PluginKind::Http { url } => self.call_http(&plugin, url, request).await,
                PluginKind::Command { command } => {
                    self.call_command(&plugin, command, request).await
                }
            }
        };
        // A command's child is killed when this future is dropped (`kill_on_drop`).
        tokio::time::timeout(Duration::from_secs(seconds), work)
            .await
            .unwrap_or(Err(PluginCallError::Timeout { plugin, seconds }))
    }

    async fn call_http(
        &self,
        plugin: &str,
        url: &str,
        request: &PluginCallRequest,
    ) -> Result<PluginAnswer, PluginCallError> {
        let response = self
            .http
            .post(url)
            .json(request)
            .send()
            .await
            .map_err(|error| PluginCallError::Unreachable {
                plugin: plugin.to_string(),
                reason: error.without_url().to_string(),
            })?;
        let status = response.status().as_u16();
        let body = read_capped(plugin, response).await?;
        let (body, answer) = read_answer_bounded(plugin, body).await;
        if !(200..300).contains(&status) {
            // An answer in the plugin protocol (`{"error": ...}`) says more than a status.
            if let Ok(Err(reported)) = answer {
                return Err(reported);
            }
            return Err(PluginCallError::HttpStatus {
                plugin: plugin.to_string(),
                status,
                body: String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
            });
        }
        answer?
    }

    async fn call_command(
        &self,
        plugin: &str,
        command: &[String],
        request: &PluginCallRequest,
    ) -> Result<PluginAnswer, PluginCallError> {
        let failed = |reason: String| PluginCallError::Command {
            plugin: plugin.to_string(),
            reason,
        };
        let (program, args) = command
            .split_first()
            .ok_or_else(|| failed("the command is empty".into()))?;
        let folder = self.plugins_dir.join(plugin);
        let mut child = tokio::process::Command::new(program)
            .args(args)
            .current_dir(if folder.is_dir() { folder } else { ".".into() })
            // Only what a program needs to run: hearth's environment holds its secrets.
            .env_clear()
            .envs(
                ["PATH", "HOME", "LANG", "LC_ALL", "TZ"]
                    .into_iter()
                    .filter_map(|name| std::env::var(name).ok().map(|value| (name, value))),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|error| failed(format!("cannot start {program:?}: {error}")))?;
        let input = serde_json::to_vec(request).map_err(|error| failed(error.to_string()))?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| failed("no stdin".into()))?;
        stdin
            .write_all(&input)
            .await
            .map_err(|error| failed(format!("cannot write the call: {error}")))?;
        drop(stdin);
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| failed("no stdout".into()))?;
        let stderr = child.stderr.take();
        // Both at once: a program filling one pipe while hearth waits on the other would
        // never finish. Past the cap, reading stops and the program is killed.
        let (output, errors) = tokio::join!(
            async {
                let mut output = Vec::new();
                stdout
                    .take(MAX_ANSWER_BYTES as u64 + 1)
                    .read_to_end(&mut output)
                    .await
                    .map(|_| output)
            },
            async {
                let mut errors = Vec::new();
                if let Some(stderr) = stderr {
                    // Only the start is shown; the rest is read and dropped.
                    let mut stderr = stderr;
                    let _ = (&mut stderr).take(4096).read_to_end(&mut errors).await;
                    let _ = tokio::io::copy(&mut stderr, &mut tokio::io::sink()).await;
                }
                errors
            }
        );
        let output = output.map_err(|error| failed(format!("cannot read the answer: {error}")))?;
        if output.len() > MAX_ANSWER_BYTES {
            let _ = child.kill().await;
            return Err(PluginCallError::TooLarge {
                plugin: plugin.to_string(),
                limit: MAX_ANSWER_BYTES,
            });
        }
        let status = child
            .wait()
            .await
            .map_err(|error| failed(error.to_string()))?;
        if !status.success() {
            let errors = String::from_utf8_lossy(&errors);
            return Err(failed(format!(
                "it exited with {status}: {}",
                errors.trim()
            )));
        }
        read_answer_bounded(plugin, output).await.1?
    }
}

/// An answer longer than this is parsed on the blocking pool: parsing grows with the
/// answer (up to `MAX_ANSWER_BYTES`); a shorter one parses in about the time the hop to
/// the pool and back takes (tens of microseconds).
const PARSED_INLINE_BYTES: usize = 16 * 1024;

type AnswerRead = Result<Result<PluginAnswer, PluginCallError>, PluginCallError>;

/// `read_answer` of `body`, off the actors' thread when it is long; the body given back.
async fn read_answer_bounded(plugin: &str, body: Vec<u8>) -> (Vec<u8>, AnswerRead) {
    if body.len() <= PARSED_INLINE_BYTES {
        let read = read_answer(plugin, &body);
        return (body, read);
    }
    let name = plugin.to_string();
    let parsing = tokio::task::spawn_blocking(move || {
        let read = read_answer(&name, &body);
        (body, read)
    });
    parsing.await.unwrap_or_else(|_| {
        let failed = PluginCallError::BadAnswer {
            plugin: plugin.to_string(),
            reason: "its answer could not be read".into(),
        };
        (Vec::new(), Err(failed))
    })
}

/// An HTTP plugin's answer, read chunk by chunk and refused past `MAX_ANSWER_BYTES` (never
/// held whole when it is larger).
async fn read_capped(
    plugin: &str,
    mut response: reqwest::Response,
) -> Result<Vec<u8>, PluginCallError> {
    let mut body = Vec::new();
    loop {
        let chunk = response
            .chunk()
            .await
            .map_err(|error| PluginCallError::Unreachable {
                plugin: plugin.to_string(),
                reason: error.without_url().to_string(),
            })?;
        let Some(chunk) = chunk else {
            return Ok(body);
        };
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(PluginCallError::TooLarge {
                plugin: plugin.to_string(),
                limit: MAX_ANSWER_BYTES,
            });
        }
        body.extend_from_slice(&chunk);
    }
}

/// A plugin's JSON answer: `Ok(Ok(answer))`, `Ok(Err(reported error))`, or `Err` when it
/// is not an answer at all.
fn read_answer(
    plugin: &str,
    body: &[u8],
) -> Result<Result<PluginAnswer, PluginCallError>, PluginCallError> {
    let document: AnswerDocument =
        serde_json::from_slice(body).map_err(|error| PluginCallError::BadAnswer {
            plugin: plugin.to_string(),
            reason: format!("expected {{\"text\": ...}}: {error}"),
        })?;
    if let Some(message) = document.error {
        return Ok(Err(PluginCallError::Reported {
            plugin: plugin.to_string(),
            message,
        }));
    }
    let text = document.text.unwrap_or_default();
    if document.ask_user || !document.missing_parameters.is_empty() {
        return Ok(Ok(PluginAnswer::AskUser {
            missing: document.missing_parameters,
            text,
        }));
    }
    if text.trim().is_empty() {
        return Err(PluginCallError::BadAnswer {
            plugin: plugin.to_string(),
            reason: "the answer has no text".into(),
        });
    }
    Ok(Ok(PluginAnswer::Text(text)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_in_the_plugin_protocol_are_read() {
        assert_eq!(
            read_answer("buy", br#"{"text": "Ordered."}"#),
            Ok(Ok(PluginAnswer::Text("Ordered.".into())))
        );
        assert_eq!(
            read_answer(
                "buy",
                br#"{"ask_user": true, "missing_parameters": ["phone"], "text": "Your phone?"}"#
            ),
            Ok(Ok(PluginAnswer::AskUser {
                missing: vec!["phone".into()],
                text: "Your phone?".into()
            }))
        );
        assert_eq!(
            read_answer("buy", br#"{"error": "out of milk"}"#),
            Ok(Err(PluginCallError::Reported {
                plugin: "buy".into(),
                message: "out of milk".into()
            }))
        );
        assert!(read_answer("buy", b"<html>").is_err());
        assert!(read_answer("buy", br#"{"text": "  "}"#).is_err());
    }

    #[tokio::test]
    async fn a_long_answer_parsed_on_the_blocking_pool_is_read_whole_and_a_cut_one_refused() {
        let words = "milk ".repeat(PARSED_INLINE_BYTES / 4);
        let long = serde_json::to_vec(&serde_json::json!({ "text": words })).unwrap();
        assert!(long.len() > PARSED_INLINE_BYTES);
        let (body, read) = read_answer_bounded("buy", long.clone()).await;
        assert_eq!(body, long, "the body comes back");
        assert_eq!(read, Ok(Ok(PluginAnswer::Text(words))));
        let mut broken = long;
        broken.truncate(PARSED_INLINE_BYTES + 10);
        assert!(read_answer_bounded("buy", broken).await.1.is_err());
    }
}
