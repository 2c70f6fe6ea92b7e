//! LLM wire-neutral types and the `LlmProvider` port.
//!
//! Everything outside `llm/` speaks these types; only the provider modules
//! (`openai`, `anthropic`) know a vendor's JSON. The `LlmBroker` actor is the
//! only caller of a provider outside tests; everyone else asks it for a completion with
//! `GenerateChat` (`generate.rs`), a transcript with `Transcribe` (`transcription.rs`) and
//! vectors with `Embed` (`embedding.rs`).

pub mod anthropic;
mod anthropic_stream;
mod embedding;
mod generate;
pub mod openai;
pub mod openai_embedding;
pub mod openai_transcription;
pub mod scripted;
pub mod streaming;
mod transcription;

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub(crate) use embedding::checked_dimension;
pub use embedding::{
    Embed, EmbedPurpose, Embedder, EmbeddingBatch, Embeddings, HASHED_DIMENSIONS, HashedEmbedder,
    MAX_TEXTS_PER_CALL, hashed_embedding,
};
pub use generate::{CallOrigin, GenerateChat};
pub use streaming::{StreamEvent, TextListener};
pub use transcription::{AudioFile, Transcribe, Transcriber, Transcript};

/// Who said a message in a chat exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "system" => Some(Role::System),
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            "tool" => Some(Role::Tool),
            _ => None,
        }
    }
}

/// A tool call the model asked for. `arguments` is the parsed JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: serde_json::Value,
}

/// An image shown to the model with a user message: the file's bytes, base64-encoded.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageContent {
    /// `image/jpeg`, `image/png`, `image/gif` or `image/webp`: what both wire formats accept.
    pub mime_type: String,
    pub data_base64: String,
}

impl ImageContent {
    pub fn from_bytes(mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        ImageContent {
            mime_type: mime_type.into(),
            data_base64: base64_encode(bytes),
        }
    }

    /// The image as a `data:` URL, written straight into the serializer (it can be megabytes).
    pub fn data_url(&self) -> impl fmt::Display + '_ {
        DataUrl(self)
    }
}

// By hand, so a logged request shows the image's size instead of megabytes of base64.
impl fmt::Debug for ImageContent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("ImageContent")
            .field("mime_type", &self.mime_type)
            .field("base64_chars", &self.data_base64.len())
            .finish()
    }
}

struct DataUrl<'a>(&'a ImageContent);

impl fmt::Display for DataUrl<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "data:{};base64,{}",
            self.0.mime_type, self.0.data_base64
        )
    }
}

/// Said to a model that cannot see images in place of the images a message came with
/// (a fallback model without `vision`), so it does not believe it was shown them.
pub const IMAGES_NOT_SHOWN: &str = "(The images mentioned above are not shown: this assistant \
     cannot see images right now. Say so if their contents matter.)";

/// One message of a chat exchange.
///
/// `tool_calls` is only set on assistant messages; `tool_call_id` only on
/// tool messages (the result of the call with that id); `images` only on user
/// messages of the current turn (history keeps the text alone).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageContent>,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }
    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: Role::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(tool_call_id.into()),
            images: Vec::new(),
        }
    }
    fn plain(role: Role, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
        }
    }
}

/// A tool the model may call: name, description and a JSON schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
}

/// Ask the model to answer with JSON matching `schema`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseFormat {
    pub name: String,
    pub schema: serde_json::Value,
}

/// One chat completion request, as the broker hands it to a provider.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    pub response_format: Option<ResponseFormat>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

impl ChatRequest {
    /// The request for a model that cannot see: each message's images are replaced by
    /// `IMAGES_NOT_SHOWN` after its text. Borrowed unchanged when there are no images.
    pub fn without_images(&self) -> Cow<'_, ChatRequest> {
        if self
            .messages
            .iter()
            .all(|message| message.images.is_empty())
        {
            return Cow::Borrowed(self);
        }
        let mut request = self.clone();
        for message in &mut request.messages {
            if !message.images.is_empty() {
                message.images.clear();
                if !message.content.is_empty() {
                    message.content.push('\n');
                }
                message.content.push_str(IMAGES_NOT_SHOWN);
            }
        }
        Cow::Owned(request)
    }
}

/// Token usage reported by the backend.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The model's answer: text, tool calls, or both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    /// The model name the backend says answered (may differ from the one asked).
    pub model: String,
}

/// How to reach one named model, whatever its wire format.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    /// The API root: `https://api.openai.com/v1` for OpenAI-compatible servers,
    /// `https://api.anthropic.com` (without `/v1`) for Anthropic; a trailing slash is tolerated.
    pub base_url: String,
    pub model: String,
    /// OpenAI: `Authorization: Bearer`; Anthropic: `x-api-key`. Local servers usually need none.
    pub api_key: Option<String>,
    /// The whole call, from connecting to the last byte of the answer.
    pub timeout: Duration,
    /// Used when the request sets no `max_tokens` of its own (Anthropic: 1024 when unset here too).
    pub max_tokens: Option<u32>,
}

/// Why a provider call failed. `is_transient` decides whether the broker retries.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("llm backend answered http {status}: {body}")]
    Status {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    #[error("llm request timed out after {0:?}")]
    Timeout(Duration),
    #[error("llm backend unreachable: {0}")]
    Connect(String),
    #[error("llm backend answered something unreadable: {0}")]
    Decode(String),
    #[error("no llm named {0:?} in config key `llms`")]
    UnknownModel(String),
    #[error("no entry of config key `llms` has `kind: transcription`")]
    NoTranscription,
    #[error("config key `memory.embedding_model` names no embedding model")]
    NoEmbedding,
    /// The audio to transcribe could not be read from disk: trying again changes nothing.
    #[error("audio file unreadable: {0}")]
    AudioFile(String),
}

impl LlmError {
    /// 429, 5xx, time-outs and connection failures are worth another try.
    pub fn is_transient(&self) -> bool {
        match self {
            LlmError::Status { status, .. } => *status == 429 || *status >= 500,
            LlmError::Timeout(_) | LlmError::Connect(_) => true,
            LlmError::Decode(_)
            | LlmError::UnknownModel(_)
            | LlmError::NoTranscription
            | LlmError::NoEmbedding
            | LlmError::AudioFile(_) => false,
        }
    }

    /// The server's `Retry-After`, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short label for metrics and telemetry.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::Status { status, .. } if *status == 429 => "rate_limited",
            LlmError::Status { .. } => "http_error",
            LlmError::Timeout(_) => "timeout",
            LlmError::Connect(_) => "connect",
            LlmError::Decode(_) => "decode",
            LlmError::UnknownModel(_) => "unknown_model",
            LlmError::NoTranscription => "no_transcription",
            LlmError::NoEmbedding => "no_embedding",
            LlmError::AudioFile(_) => "audio_file",
        }
    }
}

/// The port every LLM backend implements. One value serves one named model.
#[async_trait]
pub trait LlmProvider: Send + Sync {
    /// Short name of the wire format, for logs (`openai`, `anthropic`, `scripted`).
    fn wire(&self) -> &'static str;
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// The same answer as `chat`, its text told to `listener` while the model writes it.
    /// A wire format that cannot stream answers whole and tells nothing.
    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        listener: &TextListener,
    ) -> Result<ChatResponse, LlmError> {
        let _ = listener;
        self.chat(request).await
    }
}

/// Parse an HTTP `Retry-After` header given in seconds (the HTTP-date form is rare for APIs).
pub fn parse_retry_after(value: Option<&str>) -> Option<Duration> {
    let seconds: f64 = value?.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// The most of an error body kept in `LlmError::Status`: enough to read the vendor's message,
/// not so much that a proxy's HTML error page floods the logs.
pub(crate) const ERROR_BODY_LIMIT: usize = 500;

/// POST `body` as JSON with a per-call `timeout` and decode a 2xx answer as `T`.
///
/// Shared by the HTTP providers so every wire format maps transport failures, HTTP statuses
/// and unreadable answers to the same `LlmError` variants (the broker's retry policy relies on it).
pub(crate) async fn post_json<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    body: &impl Serialize,
    timeout: Duration,
) -> Result<T, LlmError> {
    send_for_json(request.json(body), timeout).await
}

/// Send `request`, its body already set (JSON, or a multipart form for transcriptions),
/// with a per-call `timeout` and decode a 2xx answer as `T`: every wire format's one
/// mapping of failures to `LlmError`.
pub(crate) async fn send_for_json<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<T, LlmError> {
    send_for_json_within(request, timeout, usize::MAX).await
}

/// `send_for_json`, an answer longer than `max_bytes` refused as it arrives
/// (`LlmError::Decode`), before it is all held: for answers whose size the asker can bound.
pub(crate) async fn send_for_json_within<T: serde::de::DeserializeOwned>(
    request: reqwest::RequestBuilder,
    timeout: Duration,
    max_bytes: usize,
) -> Result<T, LlmError> {
    let mut response = request
        .timeout(timeout)
        .send()
        .await
        .map_err(|err| transport_error(&err, timeout))?;
    if !response.status().is_success() {
        return Err(refused(response, timeout).await);
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| body_error(&err, timeout))?
    {
        if chunk.len() > max_bytes - bytes.len() {
            return Err(LlmError::Decode(format!(
                "the answer is longer than {max_bytes} bytes"
            )));
        }
        bytes.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&bytes).map_err(|err| {
        let text = String::from_utf8_lossy(&bytes);
        LlmError::Decode(format!(
            "{err} in {:?}",
            truncate_chars(&text, ERROR_BODY_LIMIT)
        ))
    })
}

/// `error` without `key` in it. OpenAI's refusal quotes the key it refused ("Incorrect API
/// key provided: sk-..."): the error keeps the rest of the body, never the key.
pub(crate) fn without_key(error: LlmError, key: Option<&str>) -> LlmError {
    match (error, key) {
        (
            LlmError::Status {
                status,
                retry_after,
                body,
            },
            Some(key),
        ) if !key.is_empty() => LlmError::Status {
            status,
            retry_after,
            body: body.replace(key, "***"),
        },
        (error, _) => error,
    }
}

/// A non-2xx answer as `LlmError::Status`, with its `Retry-After` and the start of its
/// body; a body that cannot be read is a transport failure. Shared by whole and streamed
/// answers, so the broker's retry policy sees both alike.
pub(crate) async fn refused(response: reqwest::Response, timeout: Duration) -> LlmError {
    let status = response.status();
    let retry_after = parse_retry_after(
        response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok()),
    );
    match response.bytes().await {
        Ok(bytes) => LlmError::Status {
            status: status.as_u16(),
            retry_after,
            body: truncate_chars(&String::from_utf8_lossy(&bytes), ERROR_BODY_LIMIT),
        },
        Err(err) => transport_error(&err, timeout),
    }
}

/// Classify a reqwest failure; the source chain is kept because reqwest's own message
/// ("error sending request") hides the useful part ("connection refused").
fn transport_error(err: &reqwest::Error, timeout: Duration) -> LlmError {
    if err.is_timeout() {
        return LlmError::Timeout(timeout);
    }
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    if err.is_decode() {
        LlmError::Decode(message)
    } else {
        // Connect failures and connections dropped mid-answer alike: both are worth a retry.
        LlmError::Connect(message)
    }
}

/// A failure while reading an answer's body. reqwest calls a body cut short a decode
/// error, but it is a connection dropped mid-answer: worth a retry, unlike an unreadable one.
fn body_error(err: &reqwest::Error, timeout: Duration) -> LlmError {
    match transport_error(err, timeout) {
        LlmError::Decode(message) => LlmError::Connect(message),
        other => other,
    }
}

/// The first `limit` characters of `text` (never splitting a character), marked when cut.
pub(crate) fn truncate_chars(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// Standard base64 (RFC 4648, padded), as data URLs and both wire formats want it.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let group = chunk.iter().enumerate().fold(0u32, |group, (index, byte)| {
            group | u32::from(*byte) << (16 - 8 * index)
        });
        // A chunk of n bytes gives n + 1 characters; `=` pads to four.
        for index in 0..4 {
            if index <= chunk.len() {
                let sextet = (group >> (18 - 6 * index)) & 0x3f;
                out.push(char::from(ALPHABET[sextet as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Join `base` and `path` with exactly one slash, whatever the configured base ends with.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base64_encode(plain.as_bytes()), encoded, "{plain:?}");
        }
        assert_eq!(base64_encode(&[0xff, 0xfe, 0x00]), "//4A");
    }

    #[test]
    fn images_are_replaced_by_a_note_for_a_model_that_cannot_see() {
        let plain = ChatRequest {
            messages: vec![ChatMessage::user("hi")],
            ..Default::default()
        };
        assert!(matches!(plain.without_images(), Cow::Borrowed(_)));

        let mut photo = ChatMessage::user("what is this?");
        photo
            .images
            .push(ImageContent::from_bytes("image/png", b"png"));
        let request = ChatRequest {
            messages: vec![ChatMessage::system("sys"), photo],
            ..Default::default()
        };
        let stripped = request.without_images();
        assert!(stripped.messages.iter().all(|m| m.images.is_empty()));
        assert_eq!(stripped.messages[0].content, "sys");
        assert_eq!(
            stripped.messages[1].content,
            format!("what is this?\n{IMAGES_NOT_SHOWN}")
        );
        assert_eq!(
            request.messages[1].images[0].data_url().to_string(),
            "data:image/png;base64,cG5n"
        );
    }

    #[test]
    fn stored_messages_without_images_read_and_write_as_before() {
        let stored = serde_json::json!({"role": "user", "content": "hi"});
        let message: ChatMessage = serde_json::from_value(stored.clone()).unwrap();
        assert!(message.images.is_empty());
        assert_eq!(serde_json::to_value(&message).unwrap(), stored);
    }
}
