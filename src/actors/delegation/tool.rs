//! The `delegate_to_service` tool: how a profile's model hands a request to another
//! profile. One instance per profile, so its description lists exactly the profiles
//! that one may delegate to. It decides when the member must approve first:
//! `confirm` always, `unrestricted` only when the call sets `confirm_delegation`.

use actix::Recipient;
use async_trait::async_trait;
use serde_json::json;

use super::{Delegate, DelegationError};
use crate::config::DelegationLevel;
use crate::llm::ToolSpec;
use crate::tools::{ToolContext, ToolError, ToolsProvider};

pub const DELEGATE_TOOL: &str = "delegate_to_service";

#[derive(Debug, Clone)]
pub struct DelegationTargetInfo {
    pub id: String,
    pub description: String,
    pub level: DelegationLevel,
}

pub struct DelegationTool {
    /// Profiles this one may delegate to: every other profile not blocked.
    targets: Vec<DelegationTargetInfo>,
    delegation: Recipient<Delegate>,
}

impl DelegationTool {
    pub fn new(
        own_profile_id: &str,
        all_profiles: &[DelegationTargetInfo],
        delegation: Recipient<Delegate>,
    ) -> Self {
        DelegationTool {
            targets: all_profiles
                .iter()
                .filter(|target| target.id != own_profile_id)
                .filter(|target| target.level != DelegationLevel::Blocked)
                .cloned()
                .collect(),
            delegation,
        }
    }

    fn target(&self, arguments: &serde_json::Value) -> Option<&DelegationTargetInfo> {
        let id = arguments.get("target_service_id")?.as_str()?;
        self.targets.iter().find(|target| target.id == id)
    }
}

fn invalid(message: &str) -> ToolError {
    ToolError::InvalidArguments {
        tool: DELEGATE_TOOL.into(),
        message: message.into(),
    }
}

#[async_trait]
impl ToolsProvider for DelegationTool {
    async fn tools(&self) -> Vec<ToolSpec> {
        if self.targets.is_empty() {
            return Vec::new();
        }
        let listed: Vec<String> = self
            .targets
            .iter()
            .map(|target| format!("- {}: {}", target.id, target.description))
            .collect();
        let ids: Vec<&str> = self
            .targets
            .iter()
            .map(|target| target.id.as_str())
            .collect();
        vec![ToolSpec {
            name: DELEGATE_TOOL.into(),
            description: format!(
                "Hand a request to a specialised assistant profile and get its answer. \
                 Profiles you may delegate to:\n{}",
                listed.join("\n")
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "target_service_id": {"type": "string", "enum": ids,
                        "description": "the profile to hand the request to"},
                    "user_request": {"type": "string",
                        "description": "the request, complete and self-contained"},
                    "confirm_delegation": {"type": "boolean",
                        "description": "ask the family member before delegating"}
                },
                "required": ["target_service_id", "user_request"],
                "additionalProperties": false
            }),
        }]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        if name != DELEGATE_TOOL {
            return Err(ToolError::UnknownTool(name.to_string()));
        }
        let target = arguments
            .get("target_service_id")
            .and_then(|value| value.as_str())
            .ok_or_else(|| invalid("missing string argument `target_service_id`"))?;
        let request = arguments
            .get("user_request")
            .and_then(|value| value.as_str())
            .filter(|text| !text.trim().is_empty())
            .ok_or_else(|| invalid("missing non-empty string argument `user_request`"))?;
        let delegated = self
            .delegation
            .send(Delegate {
                target_service_id: target.to_string(),
                user_request: request.to_string(),
                parent: context.clone(),
            })
            .await
            .map_err(|error| ToolError::Failed {
                tool: DELEGATE_TOOL.into(),
                message: error.to_string(),
            })?;
        delegated.map_err(|error: DelegationError| ToolError::Failed {
            tool: DELEGATE_TOOL.into(),
            message: error.to_string(),
        })
    }

    async fn confirmation_prompt(
        &self,
        name: &str,
        arguments: &serde_json::Value,
    ) -> Option<String> {
        if name != DELEGATE_TOOL {
            return None;
        }
        let target = self.target(arguments)?;
        let asked = arguments
            .get("confirm_delegation")
            .and_then(|value| value.as_bool())
            .unwrap_or(false);
        let ask = match target.level {
            DelegationLevel::Confirm => true,
            DelegationLevel::Unrestricted => asked,
            DelegationLevel::Blocked => false,
        };
        ask.then(|| {
            let request = arguments
                .get("user_request")
                .and_then(|value| value.as_str())
                .unwrap_or_default();
            format!(
                "Hand this request to {} ({})?\n• {}",
                target.id, target.description, request
            )
        })
    }
}
