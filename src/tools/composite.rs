//! Several providers offered as one; a call (and the resumption of a suspended call)
//! goes to the first provider offering that name.

use std::sync::Arc;

use async_trait::async_trait;

use super::{ToolContext, ToolError, ToolsProvider};
use crate::config::ApprovalSubject;
use crate::llm::ToolSpec;
use crate::ports::Decision;

pub struct CompositeToolsProvider {
    providers: Vec<Arc<dyn ToolsProvider>>,
}

impl CompositeToolsProvider {
    pub fn new(providers: Vec<Arc<dyn ToolsProvider>>) -> Self {
        CompositeToolsProvider { providers }
    }
}

#[async_trait]
impl ToolsProvider for CompositeToolsProvider {
    async fn tools(&self) -> Vec<ToolSpec> {
        let mut all = Vec::new();
        for provider in &self.providers {
            for tool in provider.tools().await {
                // The first provider wins a name clash, the same one `call` reaches.
                if !all.iter().any(|known: &ToolSpec| known.name == tool.name) {
                    all.push(tool);
                }
            }
        }
        all
    }

    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        for provider in &self.providers {
            // Tool lists can change at run time (MCP), so look the name up per call.
            if provider.tools().await.iter().any(|tool| tool.name == name) {
                return provider.call(name, arguments, context).await;
            }
        }
        Err(ToolError::UnknownTool(name.to_string()))
    }

    async fn resume(
        &self,
        name: &str,
        state: &serde_json::Value,
        decision: Option<Decision>,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        // The same provider `call` reached: the suspended work is its own.
        for provider in &self.providers {
            if provider.tools().await.iter().any(|tool| tool.name == name) {
                return provider.resume(name, state, decision, context).await;
            }
        }
        Err(ToolError::UnknownTool(name.to_string()))
    }

    async fn confirmation_prompt(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Option<String> {
        for provider in &self.providers {
            if provider.tools().await.iter().any(|tool| tool.name == name) {
                return provider.confirmation_prompt(name, arguments, context).await;
            }
        }
        None
    }

    async fn approval_subject(&self, name: &str, arguments: &serde_json::Value) -> ApprovalSubject {
        for provider in &self.providers {
            if provider.tools().await.iter().any(|tool| tool.name == name) {
                return provider.approval_subject(name, arguments).await;
            }
        }
        // An MCP server that is not listed yet still owns its names: it says so itself.
        for provider in &self.providers {
            if let subject @ ApprovalSubject::Mcp { .. } =
                provider.approval_subject(name, arguments).await
            {
                return subject;
            }
        }
        ApprovalSubject::Unknown(name.to_string())
    }

    async fn render_call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Option<String> {
        for provider in &self.providers {
            if let Some(rendered) = provider.render_call(name, arguments, context).await {
                return Some(rendered);
            }
        }
        None
    }

    async fn turn_note(&self, context: &ToolContext) -> Option<String> {
        let mut notes = Vec::new();
        for provider in &self.providers {
            notes.extend(provider.turn_note(context).await);
        }
        (!notes.is_empty()).then(|| notes.join("\n\n"))
    }

    async fn message_note(&self, context: &ToolContext, text: &str) -> Option<String> {
        let mut notes = Vec::new();
        for provider in &self.providers {
            notes.extend(provider.message_note(context, text).await);
        }
        (!notes.is_empty()).then(|| notes.join("\n\n"))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::tools::{ConfirmingToolsProvider, FilteredToolsProvider};

    /// Offers `name` and resumes with the decision and state it was given.
    struct Resumable(&'static str);

    #[async_trait]
    impl ToolsProvider for Resumable {
        async fn tools(&self) -> Vec<ToolSpec> {
            vec![ToolSpec {
                name: self.0.into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object"}),
            }]
        }

        async fn call(
            &self,
            name: &str,
            _arguments: &serde_json::Value,
            _context: &ToolContext,
        ) -> Result<String, ToolError> {
            Ok(format!("{name} ran"))
        }

        async fn resume(
            &self,
            name: &str,
            state: &serde_json::Value,
            decision: Option<Decision>,
            _context: &ToolContext,
        ) -> Result<String, ToolError> {
            Ok(format!("{name} resumed {state} {decision:?}"))
        }
    }

    fn context() -> ToolContext {
        ToolContext {
            member_id: "alice".parse().unwrap(),
            conversation_key: "http:alice".parse().unwrap(),
            profile_id: "default_assistant".into(),
            question_timeout: std::time::Duration::from_secs(300),
            idempotency_key: None,
        }
    }

    #[tokio::test]
    async fn resume_reaches_the_provider_offering_the_tool_through_the_stack() {
        let stack = ConfirmingToolsProvider::new(
            Arc::new(CompositeToolsProvider::new(vec![
                Arc::new(FilteredToolsProvider::new(
                    Arc::new(Resumable("hidden")),
                    Vec::<String>::new(),
                )),
                Arc::new(Resumable("delegate")),
            ])),
            ["delegate".to_string()],
        );
        let state = serde_json::json!({"step": 2});
        let resumed = stack
            .resume("delegate", &state, Some(Decision::Denied), &context())
            .await
            .unwrap();
        assert_eq!(resumed, r#"delegate resumed {"step":2} Some(Denied)"#);
        // A tool the profile is not allowed never continues, nor does an unknown one.
        for name in ["hidden", "nothing"] {
            let refused = stack.resume(name, &state, None, &context()).await;
            assert!(matches!(refused, Err(ToolError::UnknownTool(named)) if named == name));
        }
    }

    #[tokio::test]
    async fn a_provider_without_suspended_work_refuses_to_resume() {
        let local = FilteredToolsProvider::new(
            Arc::new(crate::tools::LocalToolsProvider::new(Arc::new(
                crate::storage::in_memory::InMemoryStore::default(),
            ))),
            ["profile_get".to_string()],
        );
        let refused = local
            .resume("profile_get", &serde_json::Value::Null, None, &context())
            .await;
        assert!(matches!(refused, Err(ToolError::NotResumable(name)) if name == "profile_get"));
    }
}
