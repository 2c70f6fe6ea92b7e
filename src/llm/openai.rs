//! The OpenAI-compatible chat-completions wire format (OpenAI, OpenRouter, Ollama, llama.cpp,
//! vLLM, LiteLLM): turning a `ChatRequest` into `POST {base_url}/chat/completions` and the
//! answer back into a `ChatResponse`. Nothing outside this file knows these JSON shapes.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::streaming::{OpenAiChunks, post_stream};
use super::{
    ChatMessage, ChatRequest, ChatResponse, ImageContent, LlmError, LlmProvider, ProviderSettings,
    Role, TextListener, ToolCall, Usage, join_url, post_json,
};

/// An `LlmProvider` speaking the OpenAI chat-completions API.
pub struct OpenAiProvider {
    settings: ProviderSettings,
    url: String,
    client: reqwest::Client,
}

impl OpenAiProvider {
    /// The client is shared so every provider reuses one connection pool.
    pub fn new(settings: ProviderSettings, client: reqwest::Client) -> Self {
        let url = join_url(&settings.base_url, "chat/completions");
        OpenAiProvider {
            settings,
            url,
            client,
        }
    }

    /// The JSON body for `request`.
    fn body<'a>(&'a self, request: &'a ChatRequest) -> WireRequest<'a> {
        WireRequest {
            model: &self.settings.model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            tools: request.tools.iter().map(WireTool::from).collect(),
            response_format: request
                .response_format
                .as_ref()
                .map(|format| WireResponseFormat {
                    kind: "json_schema",
                    json_schema: WireJsonSchema {
                        name: &format.name,
                        schema: &format.schema,
                        strict: true,
                    },
                }),
            max_tokens: request.max_tokens.or(self.settings.max_tokens),
            temperature: request.temperature,
            stream: false,
            stream_options: None,
        }
    }

    fn http(&self) -> reqwest::RequestBuilder {
        let http = self.client.post(&self.url);
        match &self.settings.api_key {
            Some(key) => http.bearer_auth(key),
            None => http,
        }
    }
}

#[async_trait]
impl LlmProvider for OpenAiProvider {
    fn wire(&self) -> &'static str {
        "openai"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let answer: WireResponse =
            post_json(self.http(), &self.body(request), self.settings.timeout).await?;
        answer.into_response(&self.settings.model)
    }

    async fn chat_streaming(
        &self,
        request: &ChatRequest,
        listener: &TextListener,
    ) -> Result<ChatResponse, LlmError> {
        let mut body = self.body(request);
        body.stream = true;
        // Usage comes in a last chunk only when asked for; cost and metrics need it.
        body.stream_options = Some(WireStreamOptions {
            include_usage: true,
        });
        let mut chunks = OpenAiChunks::default();
        post_stream(self.http(), &body, self.settings.timeout, |event| {
            listener.text(&chunks.push(&event.data)?);
            Ok(())
        })
        .await?;
        chunks.finish(&self.settings.model)
    }
}

#[derive(Serialize)]
struct WireStreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    // Some compatible servers reject an empty `tools` array, so it is left out instead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<WireResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<WireStreamOptions>,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` on an assistant message that only carries tool calls, as OpenAI documents.
    content: Option<WireContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> From<&'a ChatMessage> for WireMessage<'a> {
    fn from(message: &'a ChatMessage) -> Self {
        let only_tool_calls = message.role == Role::Assistant
            && message.content.is_empty()
            && !message.tool_calls.is_empty();
        let content = if message.images.is_empty() {
            WireContent::Text(&message.content)
        } else {
            // Images need the array form; a message without them keeps the plain string,
            // which every compatible server understands.
            let text = (!message.content.is_empty()).then_some(WirePart::Text {
                text: &message.content,
            });
            let images = message.images.iter().map(|image| WirePart::ImageUrl {
                image_url: WireImageUrl {
                    url: WireDataUrl(image),
                },
            });
            WireContent::Parts(text.into_iter().chain(images).collect())
        };
        WireMessage {
            role: message.role.as_str(),
            content: (!only_tool_calls).then_some(content),
            tool_calls: message
                .tool_calls
                .iter()
                .map(|call| WireToolCallOut {
                    id: &call.id,
                    kind: "function",
                    function: WireFunctionOut {
                        name: &call.name,
                        // The wire carries arguments as a JSON string, not an object.
                        arguments: call.arguments.to_string(),
                    },
                })
                .collect(),
            tool_call_id: message.tool_call_id.as_deref(),
        }
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(&'a str),
    Parts(Vec<WirePart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart<'a> {
    Text { text: &'a str },
    ImageUrl { image_url: WireImageUrl<'a> },
}

#[derive(Serialize)]
struct WireImageUrl<'a> {
    url: WireDataUrl<'a>,
}

/// `data:<mime>;base64,<data>`, written without first copying megabytes into a String.
struct WireDataUrl<'a>(&'a ImageContent);

impl Serialize for WireDataUrl<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0.data_url())
    }
}

#[derive(Serialize)]
struct WireToolCallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionOut<'a>,
}

#[derive(Serialize)]
struct WireFunctionOut<'a> {
    name: &'a str,
    arguments: String,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionSpec<'a>,
}

impl<'a> From<&'a super::ToolSpec> for WireTool<'a> {
    fn from(tool: &'a super::ToolSpec) -> Self {
        WireTool {
            kind: "function",
            function: WireFunctionSpec {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        }
    }
}

#[derive(Serialize)]
struct WireFunctionSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

#[derive(Serialize)]
struct WireResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: WireJsonSchema<'a>,
}

#[derive(Serialize)]
struct WireJsonSchema<'a> {
    name: &'a str,
    schema: &'a Value,
    strict: bool,
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireAnswer,
}

#[derive(Deserialize)]
struct WireAnswer {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallIn>>,
}

#[derive(Deserialize)]
struct WireToolCallIn {
    #[serde(default)]
    id: Option<String>,
    function: WireFunctionIn,
}

#[derive(Deserialize)]
struct WireFunctionIn {
    name: String,
    /// Normally a JSON string; some compatible servers send the object itself.
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl WireResponse {
    fn into_response(self, asked_model: &str) -> Result<ChatResponse, LlmError> {
        let choice = self
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| LlmError::Decode("answer has no choices".to_string()))?;
        let tool_calls = choice
            .message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(index, call)| ToolCall {
                // Some local servers omit ids; the tool loop still needs one to pair results.
                id: call
                    .id
                    .filter(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{index}")),
                name: call.function.name,
                arguments: parse_arguments(call.function.arguments),
            })
            .collect();
        let usage = self.usage.map_or_else(Usage::default, |usage| Usage {
            input_tokens: usage.prompt_tokens,
            output_tokens: usage.completion_tokens,
        });
        Ok(ChatResponse {
            content: choice.message.content.unwrap_or_default(),
            tool_calls,
            usage,
            model: self
                .model
                .filter(|model| !model.is_empty())
                .unwrap_or_else(|| asked_model.to_string()),
        })
    }
}

/// Turn the wire's arguments into an object. A model that writes broken JSON should get to see
/// its mistake in the tool result rather than fail the whole turn, so the text is kept as `_raw`.
pub(super) fn parse_arguments(arguments: Value) -> Value {
    match arguments {
        Value::String(text) if text.trim().is_empty() => Value::Object(Default::default()),
        Value::String(text) => match serde_json::from_str(&text) {
            Ok(object @ Value::Object(_)) => object,
            Ok(Value::Null) => Value::Object(Default::default()),
            // Broken JSON, or JSON that is not an object: tools take objects only.
            _ => serde_json::json!({ "_raw": text }),
        },
        Value::Null => Value::Object(Default::default()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::{ResponseFormat, ToolSpec};

    fn provider() -> OpenAiProvider {
        OpenAiProvider::new(
            ProviderSettings {
                base_url: "http://localhost/v1/".to_string(),
                model: "m".to_string(),
                api_key: None,
                timeout: std::time::Duration::from_secs(1),
                max_tokens: Some(100),
            },
            reqwest::Client::new(),
        )
    }

    #[test]
    fn url_joins_without_double_slash() {
        assert_eq!(provider().url, "http://localhost/v1/chat/completions");
    }

    #[test]
    fn body_carries_tools_tool_calls_and_format() {
        let provider = provider();
        let mut assistant = ChatMessage::assistant("");
        assistant.tool_calls.push(ToolCall {
            id: "c1".to_string(),
            name: "f".to_string(),
            arguments: json!({"a": 1}),
        });
        let request = ChatRequest {
            messages: vec![
                ChatMessage::user("hi"),
                assistant,
                ChatMessage::tool_result("c1", "ok"),
            ],
            tools: vec![ToolSpec {
                name: "f".to_string(),
                description: "d".to_string(),
                parameters: json!({"type": "object"}),
            }],
            response_format: Some(ResponseFormat {
                name: "r".to_string(),
                schema: json!({"type": "object"}),
            }),
            max_tokens: None,
            temperature: Some(0.5),
        };
        let body = serde_json::to_value(provider.body(&request)).unwrap();
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["messages"][1]["content"], Value::Null);
        assert_eq!(
            body["messages"][1]["tool_calls"][0]["function"]["arguments"],
            "{\"a\":1}"
        );
        assert_eq!(body["messages"][2]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["response_format"]["json_schema"]["strict"], true);
    }

    #[test]
    fn body_omits_empty_tools() {
        let provider = provider();
        let request = ChatRequest {
            messages: vec![ChatMessage::user("hi")],
            ..Default::default()
        };
        let body = serde_json::to_value(provider.body(&request)).unwrap();
        assert!(body.get("tools").is_none());
        assert!(body.get("response_format").is_none());
        assert!(body.get("temperature").is_none());
    }

    #[test]
    fn images_make_the_content_an_array_of_parts() {
        let provider = provider();
        let mut photo = ChatMessage::user("what is this?");
        photo
            .images
            .push(ImageContent::from_bytes("image/jpeg", b"Man"));
        let request = ChatRequest {
            messages: vec![ChatMessage::system("sys"), photo],
            ..Default::default()
        };
        let body = serde_json::to_value(provider.body(&request)).unwrap();
        assert_eq!(body["messages"][0]["content"], "sys");
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,TWFu"}}
            ])
        );
    }

    #[test]
    fn arguments_are_lenient() {
        assert_eq!(parse_arguments(json!("{\"x\":2}")), json!({"x": 2}));
        assert_eq!(parse_arguments(json!("{oops")), json!({"_raw": "{oops"}));
        assert_eq!(parse_arguments(json!("[1]")), json!({"_raw": "[1]"}));
        assert_eq!(parse_arguments(json!("")), json!({}));
        assert_eq!(parse_arguments(json!({"y": 3})), json!({"y": 3}));
    }

    #[test]
    fn response_without_usage_or_content_decodes() {
        let wire: WireResponse = serde_json::from_value(json!({
            "choices": [{"message": {"role": "assistant", "content": null,
                "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}}]
        }))
        .unwrap();
        let response = wire.into_response("asked").unwrap();
        assert_eq!(response.content, "");
        assert_eq!(response.usage, Usage::default());
        assert_eq!(response.model, "asked");
        assert_eq!(response.tool_calls[0].id, "call_0");
    }

    #[test]
    fn response_without_choices_is_a_decode_error() {
        let wire: WireResponse = serde_json::from_value(json!({"choices": []})).unwrap();
        assert!(matches!(wire.into_response("m"), Err(LlmError::Decode(_))));
    }
}
