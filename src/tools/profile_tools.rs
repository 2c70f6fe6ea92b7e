//! `profile_get` and `profile_update`: the asking family member reads and edits
//! their own profile. There is no argument naming another member, by design.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::json;

use super::{LocalTool, ToolContext, ToolError};
use crate::llm::ToolSpec;
use crate::ports::UserProfiles;

const MAX_KEY_CHARS: usize = 64;
const MAX_VALUE_CHARS: usize = 1000;

pub struct ProfileGetTool {
    profiles: Arc<dyn UserProfiles>,
}

impl ProfileGetTool {
    pub fn new(profiles: Arc<dyn UserProfiles>) -> Self {
        ProfileGetTool { profiles }
    }
}

#[async_trait]
impl LocalTool for ProfileGetTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "profile_get".into(),
            description: "Read what is stored about the family member you are talking to \
                          (name, address, phone, preferences...)."
                .into(),
            parameters: json!({"type": "object", "properties": {}, "additionalProperties": false}),
        }
    }

    async fn call(
        &self,
        _arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let facts = self
            .profiles
            .get(&context.member_id)
            .await
            .map_err(|error| ToolError::Failed {
                tool: "profile_get".into(),
                message: error.to_string(),
            })?;
        Ok(serde_json::to_string(&facts).unwrap_or_else(|_| "{}".into()))
    }
}

pub struct ProfileUpdateTool {
    profiles: Arc<dyn UserProfiles>,
}

impl ProfileUpdateTool {
    pub fn new(profiles: Arc<dyn UserProfiles>) -> Self {
        ProfileUpdateTool { profiles }
    }
}

fn invalid(message: String) -> ToolError {
    ToolError::InvalidArguments {
        tool: "profile_update".into(),
        message,
    }
}

#[async_trait]
impl LocalTool for ProfileUpdateTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "profile_update".into(),
            description: "Remember or forget one fact about the family member you are talking \
                          to. Use a short snake_case key (name, address, phone, favourite_food). \
                          An empty value forgets the key."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": "snake_case key, e.g. address"},
                    "value": {"type": "string", "description": "the value; empty to forget"}
                },
                "required": ["key", "value"],
                "additionalProperties": false
            }),
        }
    }

    async fn call(
        &self,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        let key = arguments
            .get("key")
            .and_then(|key| key.as_str())
            .ok_or_else(|| invalid("missing string argument `key`".into()))?
            .trim();
        let key_is_valid = !key.is_empty()
            && key.chars().count() <= MAX_KEY_CHARS
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !key_is_valid {
            return Err(invalid(format!(
                "key {key:?} must be 1-{MAX_KEY_CHARS} characters of a-z, 0-9 and _"
            )));
        }
        let value = match arguments.get("value") {
            None | Some(serde_json::Value::Null) => "",
            Some(serde_json::Value::String(text)) => text.trim(),
            Some(other) => {
                return Err(invalid(format!(
                    "value {other} for {key:?} must be a string"
                )));
            }
        };
        if value.chars().count() > MAX_VALUE_CHARS {
            return Err(invalid(format!(
                "value for {key:?} is longer than {MAX_VALUE_CHARS} characters"
            )));
        }
        let stored = (!value.is_empty()).then_some(value);
        self.profiles
            .set(&context.member_id, key, stored)
            .await
            .map_err(|error| ToolError::Failed {
                tool: "profile_update".into(),
                message: error.to_string(),
            })?;
        Ok(match stored {
            Some(value) => format!("saved {key} = {value}"),
            None => format!("forgot {key}"),
        })
    }
}
