//! The `delegate_to_service` tool: how a profile's model hands a request to another
//! profile. One instance per profile, so its description lists exactly the profiles
//! that one may delegate to. It decides when the member must approve first:
//! `confirm` always, `unrestricted` only when the call sets `confirm_delegation`.
//!
//! When the target's turn needs the member's confirmation for one of its own tools,
//! the call returns `ToolError::Suspended` ("<target> asks: …", the target's exact
//! call, and the suspended delegation as state); `resume` hands the member's decision
//! back to the `Delegation` actor, and the target's final answer is the tool result.

use actix::Recipient;
use async_trait::async_trait;
use serde_json::json;

use super::{Delegate, DelegateRequest, Delegated, DelegationError, SuspendedDelegation};
use crate::config::DelegationLevel;
use crate::llm::ToolSpec;
use crate::ports::Decision;
use crate::tools::{ToolContext, ToolError, ToolSuspension, ToolsProvider};

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

impl DelegationTool {
    async fn send(
        &self,
        context: &ToolContext,
        request: DelegateRequest,
    ) -> Result<String, ToolError> {
        let delegated = self
            .delegation
            .send(Delegate {
                parent: context.clone(),
                request,
            })
            .await
            .map_err(|error| failed(error.to_string()))?
            .map_err(|error: DelegationError| failed(error.to_string()))?;
        match delegated {
            Delegated::Answered(reply) => Ok(reply),
            Delegated::Suspended(suspended) => Err(ToolError::Suspended(Box::new(
                suspension(&suspended).map_err(|error| failed(error.to_string()))?,
            ))),
        }
    }
}

/// What the member is asked for a delegated turn's confirmation: the target's own
/// question, the exact call it is about, and when it expires.
fn suspension(suspended: &SuspendedDelegation) -> Result<ToolSuspension, serde_json::Error> {
    let asked = &suspended.confirmation;
    Ok(ToolSuspension {
        // Said by whom: the member is asked by a profile they did not talk to.
        prompt: format!("{} asks: {}", suspended.target_service_id, asked.prompt),
        action: asked.tool_name.clone(),
        arguments: asked.arguments.clone(),
        state: serde_json::to_value(suspended)?,
        expires_at_ms: asked.expires_at_ms,
    })
}

fn failed(message: String) -> ToolError {
    ToolError::Failed {
        tool: DELEGATE_TOOL.into(),
        message,
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
        self.send(
            context,
            DelegateRequest::Start {
                target_service_id: target.to_string(),
                user_request: request.to_string(),
            },
        )
        .await
    }

    async fn resume(
        &self,
        name: &str,
        state: &serde_json::Value,
        decision: Option<Decision>,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        if name != DELEGATE_TOOL {
            return Err(ToolError::NotResumable(name.to_string()));
        }
        let suspended: SuspendedDelegation = serde_json::from_value(state.clone())
            .map_err(|error| failed(format!("the suspended delegation is unreadable: {error}")))?;
        self.send(
            context,
            DelegateRequest::Resume {
                suspended: Box::new(suspended),
                decision,
            },
        )
        .await
    }

    async fn confirmation_prompt(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        _context: &ToolContext,
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
            let target_name = match target.description.trim() {
                "" => target.id.clone(),
                description => format!("{} ({description})", target.id),
            };
            format!("Hand this request to {target_name}?\n• {request}")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::{Inbound, PendingConfirmation};

    #[test]
    fn a_suspended_delegation_asks_in_the_targets_name_and_round_trips() {
        let arguments = json!({"key": "address", "value": "9 Lime Street"});
        let suspended = SuspendedDelegation {
            target_service_id: "secure_ops".into(),
            chain: vec!["default_assistant".into(), "secure_ops".into()],
            inbound: Inbound {
                id: "sub-1".into(),
                conversation: "delegation:http:alice/secure_ops/1".parse().unwrap(),
                member_id: "alice".parse().unwrap(),
                text: "save my address".into(),
                platform_event_id: None,
                received_at_ms: 1,
                extras: Default::default(),
            },
            confirmation: PendingConfirmation {
                id: "c-1".parse().unwrap(),
                inbox_id: "sub-1".into(),
                member_id: "alice".parse().unwrap(),
                conversation: "delegation:http:alice/secure_ops/1".parse().unwrap(),
                profile_id: "secure_ops".into(),
                tool_name: "profile_update".into(),
                arguments: arguments.clone(),
                prompt: "Run profile_update?".into(),
                turn_state: json!({"pending_calls": []}),
                expires_at_ms: 42,
                created_at_ms: 2,
                approvers: Vec::new(),
            },
        };
        let asked = suspension(&suspended).unwrap();
        assert_eq!(asked.prompt, "secure_ops asks: Run profile_update?");
        assert_eq!(
            (asked.action.as_str(), &asked.arguments, asked.expires_at_ms),
            ("profile_update", &arguments, 42)
        );
        // Stored as it always was: each conversation as its channel and conversation id.
        assert_eq!(asked.state["inbound"]["channel"], "delegation");
        assert_eq!(
            asked.state["confirmation"]["conversation_id"],
            "http:alice/secure_ops/1"
        );
        let back: SuspendedDelegation = serde_json::from_value(asked.state).unwrap();
        assert_eq!(back, suspended);
    }
}
