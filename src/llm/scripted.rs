//! The in-memory `LlmProvider` for unit tests of other modules: answers from a script of
//! replies, tool calls and errors, records every request, and echoes when the script runs out.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use super::{ChatRequest, ChatResponse, LlmError, LlmProvider, Role, ToolCall, Usage};

enum Step {
    Reply(String),
    ToolCalls(Vec<ToolCall>),
    Error(LlmError),
}

#[derive(Default)]
struct State {
    script: VecDeque<Step>,
    requests: Vec<ChatRequest>,
}

/// A scripted provider; steps are consumed in push order, one per `chat` call.
#[derive(Default)]
pub struct ScriptedProvider {
    state: Mutex<State>,
}

impl ScriptedProvider {
    pub fn new() -> Self {
        Self::default()
    }

    /// The next call answers with this text.
    pub fn push_reply(&self, text: impl Into<String>) {
        self.lock().script.push_back(Step::Reply(text.into()));
    }

    /// The next call answers with these tool calls and no text.
    pub fn push_tool_calls(&self, calls: Vec<ToolCall>) {
        self.lock().script.push_back(Step::ToolCalls(calls));
    }

    /// The next call fails with this error.
    pub fn push_error(&self, error: LlmError) {
        self.lock().script.push_back(Step::Error(error));
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock must not hide its failure behind a poison error.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[async_trait]
impl LlmProvider for ScriptedProvider {
    fn wire(&self) -> &'static str {
        "scripted"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let step = {
            let mut state = self.lock();
            state.requests.push(request.clone());
            state.script.pop_front()
        };
        let (content, tool_calls) = match step {
            Some(Step::Reply(text)) => (text, Vec::new()),
            Some(Step::ToolCalls(calls)) => (String::new(), calls),
            Some(Step::Error(error)) => return Err(error),
            None => {
                let last_user = request
                    .messages
                    .iter()
                    .rev()
                    .find(|message| message.role == Role::User)
                    .map_or("", |message| message.content.as_str());
                (format!("echo: {last_user}"), Vec::new())
            }
        };
        Ok(ChatResponse {
            usage: Usage {
                input_tokens: word_count(request.messages.iter().map(|m| m.content.as_str())),
                output_tokens: word_count(std::iter::once(content.as_str())),
            },
            content,
            tool_calls,
            model: "scripted".to_string(),
        })
    }
}

/// A stand-in token count, so cost and usage accounting see non-zero, predictable numbers.
fn word_count<'a>(texts: impl Iterator<Item = &'a str>) -> u64 {
    texts
        .map(|text| text.split_whitespace().count() as u64)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatMessage;

    fn ask(text: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![ChatMessage::system("sys"), ChatMessage::user(text)],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn follows_the_script_then_echoes() {
        let provider = ScriptedProvider::new();
        provider.push_reply("first");
        provider.push_tool_calls(vec![ToolCall {
            id: "c".to_string(),
            name: "f".to_string(),
            arguments: serde_json::json!({}),
        }]);
        provider.push_error(LlmError::Timeout(std::time::Duration::from_secs(1)));

        assert_eq!(provider.chat(&ask("a")).await.unwrap().content, "first");
        assert_eq!(provider.chat(&ask("b")).await.unwrap().tool_calls.len(), 1);
        assert!(matches!(
            provider.chat(&ask("c")).await,
            Err(LlmError::Timeout(_))
        ));
        let echoed = provider.chat(&ask("hello there")).await.unwrap();
        assert_eq!(echoed.content, "echo: hello there");
        assert_eq!(echoed.usage.input_tokens, 3);
        assert_eq!(provider.requests().len(), 4);
        assert_eq!(provider.wire(), "scripted");
    }
}
