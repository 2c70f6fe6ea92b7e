//! The Anthropic Messages API's streamed answer put back together: its events
//! (`message_start`, `content_block_start`/`_delta`/`_stop`, `message_delta`,
//! `message_stop`, `ping`, `error`) become the same `WireResponse` a whole answer decodes
//! to, so both are turned into a `ChatResponse` by one function. The events arrive through
//! the shared `SseReader` (`streaming.rs`); nothing here reads bytes.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::anthropic::{WireBlockIn, WireResponse, WireUsage};
use super::streaming::stream_error;
use super::{ChatResponse, ERROR_BODY_LIMIT, LlmError, ResponseFormat, truncate_chars};

/// The events of one streamed answer, accumulated in order.
#[derive(Debug, Default)]
pub struct AnthropicEvents {
    model: Option<String>,
    /// By the block's `index`: the position it has in the whole answer's `content`.
    blocks: BTreeMap<u64, PartialBlock>,
    input_tokens: u64,
    output_tokens: u64,
    stopped: bool,
}

#[derive(Debug)]
enum PartialBlock {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        /// `input` as it started (the API sends `{}`) until the first `input_json_delta`.
        input: Value,
        json: String,
    },
    /// Thinking and block types to come: carried along, never part of the answer.
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: u64,
        content_block: StartBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {},
    MessageDelta {
        #[serde(default)]
        usage: Option<DeltaUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: StreamedError,
    },
    /// The API may add event types; they are to be ignored, not to fail the answer.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct StartMessage {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    /// Thinking, signatures and citations carry nothing the tool loop uses.
    #[serde(other)]
    Other,
}

/// `message_delta`'s usage is cumulative: its counts replace the ones from `message_start`.
#[derive(Deserialize)]
struct DeltaUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct StreamedError {
    #[serde(default, rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

impl AnthropicEvents {
    /// Take one event's data; answers the text it adds, for the listener.
    pub fn push(&mut self, data: &str) -> Result<String, LlmError> {
        let event: Event = serde_json::from_str(data).map_err(|err| {
            LlmError::Decode(format!(
                "{err} in streamed event {:?}",
                truncate_chars(data, ERROR_BODY_LIMIT)
            ))
        })?;
        match event {
            Event::MessageStart { message } => {
                self.model = message.model.filter(|model| !model.is_empty());
                if let Some(usage) = message.usage {
                    self.input_tokens = usage.input_tokens;
                    self.output_tokens = usage.output_tokens;
                }
                Ok(String::new())
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.start(index, content_block),
            Event::ContentBlockDelta { index, delta } => self.delta(index, delta),
            Event::MessageDelta { usage } => {
                if let Some(usage) = usage {
                    self.input_tokens = usage.input_tokens.unwrap_or(self.input_tokens);
                    self.output_tokens = usage.output_tokens.unwrap_or(self.output_tokens);
                }
                Ok(String::new())
            }
            Event::MessageStop => {
                self.stopped = true;
                Ok(String::new())
            }
            Event::Error { error } => Err(stream_error(&error.kind, &error.message)),
            Event::ContentBlockStop {} | Event::Ping | Event::Other => Ok(String::new()),
        }
    }

    fn start(&mut self, index: u64, block: StartBlock) -> Result<String, LlmError> {
        if self.blocks.contains_key(&index) {
            return Err(LlmError::Decode(format!(
                "streamed content block {index} started twice"
            )));
        }
        // A whole answer's text blocks are joined by a line break; the preview says it too.
        let follows_text = self
            .blocks
            .values()
            .any(|block| matches!(block, PartialBlock::Text(_)));
        let (block, heard) = match block {
            StartBlock::Text { text } => {
                let heard = if follows_text {
                    format!("\n{text}")
                } else {
                    text.clone()
                };
                (PartialBlock::Text(text), heard)
            }
            StartBlock::ToolUse { id, name, input } => (
                PartialBlock::ToolUse {
                    id,
                    name,
                    input,
                    json: String::new(),
                },
                String::new(),
            ),
            StartBlock::Other => (PartialBlock::Other, String::new()),
        };
        self.blocks.insert(index, block);
        Ok(heard)
    }

    fn delta(&mut self, index: u64, delta: Delta) -> Result<String, LlmError> {
        let block = self.blocks.get_mut(&index).ok_or_else(|| {
            LlmError::Decode(format!(
                "streamed delta for content block {index}, which never started"
            ))
        })?;
        match (block, delta) {
            (PartialBlock::Text(text), Delta::Text { text: more }) => {
                text.push_str(&more);
                Ok(more)
            }
            (PartialBlock::ToolUse { json, .. }, Delta::InputJson { partial_json }) => {
                json.push_str(&partial_json);
                Ok(String::new())
            }
            (_, Delta::Other) | (PartialBlock::Other, _) => Ok(String::new()),
            (_, _) => Err(LlmError::Decode(format!(
                "streamed delta for content block {index} does not fit its type"
            ))),
        }
    }

    /// The whole answer, once the stream ended; one cut short is a dropped connection.
    pub fn finish(
        self,
        asked_model: &str,
        format: Option<&ResponseFormat>,
    ) -> Result<ChatResponse, LlmError> {
        if !self.stopped {
            return Err(LlmError::Connect(
                "the streamed answer ended before message_stop".to_owned(),
            ));
        }
        let mut content = Vec::with_capacity(self.blocks.len());
        for block in self.blocks.into_values() {
            content.push(match block {
                PartialBlock::Text(text) => WireBlockIn::Text { text },
                PartialBlock::ToolUse {
                    id,
                    name,
                    input,
                    json,
                } => {
                    let input = if json.trim().is_empty() {
                        input
                    } else {
                        serde_json::from_str(&json).map_err(|err| {
                            LlmError::Decode(format!(
                                "{err} in the streamed input of tool call {name:?}: {:?}",
                                truncate_chars(&json, ERROR_BODY_LIMIT)
                            ))
                        })?
                    };
                    WireBlockIn::ToolUse { id, name, input }
                }
                PartialBlock::Other => WireBlockIn::Other,
            });
        }
        let whole = WireResponse {
            model: self.model,
            content,
            usage: Some(WireUsage {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
            }),
        };
        Ok(whole.into_response(asked_model, format))
    }
}

#[cfg(test)]
#[path = "anthropic_stream_tests.rs"]
mod tests;
