//! The Anthropic Messages API wire format: turning a `ChatRequest` into `POST {base_url}/v1/messages`
//! (top-level system prompt, strictly alternating roles, `tool_use`/`tool_result` blocks) and the
//! answer back into a `ChatResponse`, whole or streamed (the streamed events are put back
//! together in `anthropic_stream.rs`). Nothing outside these two files knows these JSON shapes.

use std::borrow::Cow;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::anthropic_stream::AnthropicEvents;
use super::streaming::post_stream;
use super::{
    ChatRequest, ChatResponse, LlmError, LlmProvider, ProviderSettings, ResponseFormat, Role,
    TextListener, ToolCall, Usage, join_url, post_json,
};

/// The API version this file's JSON shapes follow.
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The API refuses a request without `max_tokens`; this is used when nobody set one.
const DEFAULT_MAX_TOKENS: u32 = 1024;

/// An `LlmProvider` speaking the Anthropic Messages API.
pub struct AnthropicProvider {
    settings: ProviderSettings,
    url: String,
    client: reqwest::Client,
}

impl AnthropicProvider {
    /// The client is shared so every provider reuses one connection pool.
    pub fn new(settings: ProviderSettings, client: reqwest::Client) -> Self {
        let url = join_url(&settings.base_url, "v1/messages");
        AnthropicProvider {
            settings,
            url,
            client,
        }
    }

    /// The JSON body for `request`.
    fn body<'a>(&'a self, request: &'a ChatRequest) -> WireRequest<'a> {
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|message| message.role == Role::System && !message.content.is_empty())
            .map(|message| message.content.as_str())
            .collect();
        let mut tools: Vec<WireTool> = request
            .tools
            .iter()
            .map(|tool| WireTool {
                name: &tool.name,
                description: &tool.description,
                input_schema: &tool.parameters,
            })
            .collect();
        // No native JSON-schema output here: a tool whose input is the answer, forced, does it.
        let tool_choice = request.response_format.as_ref().map(|format| {
            tools.push(WireTool {
                name: &format.name,
                description: "Give your answer as this tool's input.",
                input_schema: &format.schema,
            });
            WireToolChoice {
                kind: "tool",
                name: &format.name,
            }
        });
        WireRequest {
            model: &self.settings.model,
            max_tokens: request
                .max_tokens
                .or(self.settings.max_tokens)
                .unwrap_or(DEFAULT_MAX_TOKENS),
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages: alternate(request),
            tools,
            tool_choice,
            temperature: request.temperature,
            stream: false,
        }
    }

    fn http(&self) -> reqwest::RequestBuilder {
        let http = self
            .client
            .post(&self.url)
            .header("anthropic-version", ANTHROPIC_VERSION);
        match &self.settings.api_key {
            Some(key) => http.header("x-api-key", key),
            None => http,
        }
    }
}

#[async_trait]
impl LlmProvider for AnthropicProvider {
    fn wire(&self) -> &'static str {
        "anthropic"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let answer: WireResponse =
            post_json(self.http(), &self.body(request), self.settings.timeout).await?;
        Ok(answer.into_response(&self.settings.model, request.response_format.as_ref()))
    }

    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        listener: &TextListener,
    ) -> Result<ChatResponse, LlmError> {
        let mut body = self.body(request);
        body.stream = true;
        let mut events = AnthropicEvents::default();
        post_stream(self.http(), &body, self.settings.timeout, |event| {
            listener.text(&events.push(&event.data)?);
            Ok(())
        })
        .await?;
        events.finish(&self.settings.model, request.response_format.as_ref())
    }
}

/// The non-system messages as the API wants them: tool results become `user` turns and
/// consecutive turns of one role are merged, because the API requires strict alternation.
fn alternate(request: &ChatRequest) -> Vec<WireMessage<'_>> {
    let mut turns: Vec<WireMessage> = Vec::new();
    for message in &request.messages {
        let (role, mut blocks) = match message.role {
            Role::System => continue,
            Role::User => {
                let mut blocks = text_block(&message.content);
                blocks.extend(message.images.iter().map(|image| Block::Image {
                    source: ImageSource {
                        kind: "base64",
                        media_type: &image.mime_type,
                        data: &image.data_base64,
                    },
                }));
                ("user", blocks)
            }
            Role::Assistant => {
                let mut blocks = text_block(&message.content);
                blocks.extend(message.tool_calls.iter().map(|call| Block::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: object_input(&call.arguments),
                }));
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![Block::ToolResult {
                    tool_use_id: message.tool_call_id.as_deref().unwrap_or_default(),
                    content: &message.content,
                }],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match turns.last_mut() {
            Some(last) if last.role == role => {
                last.content.append(&mut blocks);
                // The API wants a turn's tool results before any text in it.
                last.content
                    .sort_by_key(|block| !matches!(block, Block::ToolResult { .. }));
            }
            _ => turns.push(WireMessage {
                role,
                content: blocks,
            }),
        }
    }
    turns
}

/// The API rejects empty text blocks, so an empty message contributes none.
fn text_block(text: &str) -> Vec<Block<'_>> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![Block::Text { text }]
    }
}

/// `tool_use.input` must be an object; anything else (never produced by our providers, but
/// possible from stored history) is sent as an empty one rather than failing the call.
fn object_input(arguments: &Value) -> Cow<'_, Value> {
    if arguments.is_object() {
        Cow::Borrowed(arguments)
    } else {
        Cow::Owned(Value::Object(Default::default()))
    }
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<WireToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Cow<'a, Value>,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
    Image {
        source: ImageSource<'a>,
    },
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

#[derive(Serialize)]
struct WireToolChoice<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
}

#[derive(Deserialize)]
pub(super) struct WireResponse {
    #[serde(default)]
    pub(super) model: Option<String>,
    #[serde(default)]
    pub(super) content: Vec<WireBlockIn>,
    #[serde(default)]
    pub(super) usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum WireBlockIn {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// Thinking and future block types carry nothing the tool loop uses.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    pub(super) input_tokens: u64,
    #[serde(default)]
    pub(super) output_tokens: u64,
}

impl WireResponse {
    pub(super) fn into_response(
        self,
        asked_model: &str,
        format: Option<&ResponseFormat>,
    ) -> ChatResponse {
        let mut texts = Vec::new();
        let mut tool_calls = Vec::new();
        let mut formatted = None;
        for block in self.content {
            match block {
                WireBlockIn::Text { text } => texts.push(text),
                WireBlockIn::ToolUse { name, input, .. }
                    if format.is_some_and(|format| format.name == name) =>
                {
                    formatted = Some(input.to_string());
                }
                WireBlockIn::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: input,
                }),
                WireBlockIn::Other => {}
            }
        }
        let usage = self.usage.map_or_else(Usage::default, |usage| Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
        });
        let model = self
            .model
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| asked_model.to_string());
        match formatted {
            // The forced tool's input *is* the structured answer, not a call to run.
            Some(content) => ChatResponse {
                content,
                tool_calls: Vec::new(),
                usage,
                model,
            },
            None => ChatResponse {
                content: texts.join("\n"),
                tool_calls,
                usage,
                model,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::ChatMessage;

    fn provider() -> AnthropicProvider {
        AnthropicProvider::new(
            ProviderSettings {
                base_url: "http://localhost".to_string(),
                model: "claude".to_string(),
                api_key: None,
                timeout: std::time::Duration::from_secs(1),
                max_tokens: None,
            },
            reqwest::Client::new(),
        )
    }

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.to_string(),
            name: "f".to_string(),
            arguments: json!({"a": 1}),
        }
    }

    #[test]
    fn roles_alternate_and_tool_results_merge() {
        let mut assistant = ChatMessage::assistant("looking");
        assistant.tool_calls = vec![call("t1"), call("t2")];
        let request = ChatRequest {
            messages: vec![
                ChatMessage::system("be kind"),
                ChatMessage::user("a"),
                ChatMessage::user("b"),
                ChatMessage::system("be brief"),
                assistant,
                ChatMessage::tool_result("t1", "one"),
                ChatMessage::tool_result("t2", "two"),
                ChatMessage::user("thanks"),
            ],
            ..Default::default()
        };
        let provider = provider();
        let body = serde_json::to_value(provider.body(&request)).unwrap();
        assert_eq!(body["system"], "be kind\n\nbe brief");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[0]["content"].as_array().unwrap().len(), 2);
        assert_eq!(messages[1]["content"][1]["type"], "tool_use");
        assert_eq!(messages[1]["content"][1]["input"], json!({"a": 1}));
        assert_eq!(messages[2]["role"], "user");
        assert_eq!(messages[2]["content"][0]["tool_use_id"], "t1");
        assert_eq!(messages[2]["content"][1]["tool_use_id"], "t2");
        assert_eq!(messages[2]["content"][2]["text"], "thanks");
    }

    #[test]
    fn tool_results_come_before_text_in_a_merged_turn() {
        let mut assistant = ChatMessage::assistant("");
        assistant.tool_calls = vec![call("t1")];
        let request = ChatRequest {
            messages: vec![
                ChatMessage::user("q"),
                assistant,
                ChatMessage::user("also this"),
                ChatMessage::tool_result("t1", "done"),
            ],
            ..Default::default()
        };
        let provider = provider();
        let body = serde_json::to_value(provider.body(&request)).unwrap();
        let last = &body["messages"][2]["content"];
        assert_eq!(last[0]["type"], "tool_result");
        assert_eq!(last[1]["type"], "text");
        // An assistant turn with only tool calls has no empty text block.
        assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
    }

    #[test]
    fn images_follow_the_text_as_base64_blocks() {
        let mut photo = ChatMessage::user("what is this?");
        photo
            .images
            .push(crate::llm::ImageContent::from_bytes("image/png", b"Man"));
        let request = ChatRequest {
            messages: vec![photo],
            ..Default::default()
        };
        let provider = provider();
        let body = serde_json::to_value(provider.body(&request)).unwrap();
        assert_eq!(
            body["messages"][0]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "TWFu"}}
            ])
        );
    }

    #[test]
    fn response_format_forces_a_tool_and_returns_its_input() {
        let format = ResponseFormat {
            name: "answer".to_string(),
            schema: json!({"type": "object"}),
        };
        let request = ChatRequest {
            messages: vec![ChatMessage::user("q")],
            response_format: Some(format.clone()),
            ..Default::default()
        };
        let provider = provider();
        let body = serde_json::to_value(provider.body(&request)).unwrap();
        assert_eq!(
            body["tool_choice"],
            json!({"type": "tool", "name": "answer"})
        );
        assert_eq!(body["tools"][0]["name"], "answer");

        let wire: WireResponse = serde_json::from_value(json!({
            "content": [{"type": "tool_use", "id": "x", "name": "answer", "input": {"ok": true}}],
            "usage": {"input_tokens": 3, "output_tokens": 4}
        }))
        .unwrap();
        let response = wire.into_response("claude", Some(&format));
        assert_eq!(response.content, "{\"ok\":true}");
        assert!(response.tool_calls.is_empty());
        assert_eq!(response.usage.output_tokens, 4);
        assert_eq!(response.model, "claude");
    }

    #[test]
    fn unknown_blocks_are_ignored() {
        let wire: WireResponse = serde_json::from_value(json!({
            "model": "c",
            "content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "hi"}]
        }))
        .unwrap();
        let response = wire.into_response("claude", None);
        assert_eq!(response.content, "hi");
        assert_eq!(response.model, "c");
        assert_eq!(response.usage, Usage::default());
    }
}
