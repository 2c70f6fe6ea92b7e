//! Tools built into hearth, and the provider that offers them.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::{ProfileGetTool, ProfileUpdateTool, ToolContext, ToolError, ToolsProvider};
use crate::llm::ToolSpec;
use crate::ports::UserProfiles;

/// Every built-in tool name config may enable; validation refuses any other.
/// `delegate_to_service` is built per profile by the delegation actor's tool,
/// `route_to_plugin` by the plugins (`plugins::RouteToPluginTool`), the family-script
/// tools by `scripts::ScriptsToolset` (`scripts::SCRIPT_TOOL_NAMES`), and
/// `check_order_status` by an intents profile whose intents file has a `data_source`
/// (`intents::OrderStatusTool`), the reminder tools by `reminders::RemindersToolset`
/// (`reminders::REMINDER_TOOL_NAMES`), the calendar tools by `calendar::CalendarToolset`
/// (`calendar::CALENDAR_TOOL_NAMES`), the note tools by `notes::NotesToolset`
/// (`notes::NOTE_TOOL_NAMES`), and `search_memory` by `recall::MemoryToolset`
/// (`recall::MEMORY_TOOL_NAMES`).
pub const LOCAL_TOOL_NAMES: &[&str] = &[
    "profile_get",
    "profile_update",
    "delegate_to_service",
    "route_to_plugin",
    "list_available_scripts",
    "select_script",
    "get_script_parameters",
    "set_script_parameters",
    "run_script",
    "check_order_status",
    "schedule_reminder",
    "list_reminders",
    "cancel_reminder",
    "snooze_reminder",
    "schedule_task",
    "search_calendar_events",
    "add_calendar_event",
    "modify_calendar_event",
    "delete_calendar_event",
    "add_or_update_note",
    "get_note",
    "search_notes",
    "list_notes",
    "delete_note",
    "search_memory",
];

#[async_trait]
pub trait LocalTool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    async fn call(
        &self,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError>;
}

/// All local tools by name; a profile sees them through a `FilteredToolsProvider`.
pub struct LocalToolsProvider {
    tools: BTreeMap<String, Arc<dyn LocalTool>>,
}

impl LocalToolsProvider {
    pub fn new(profiles: Arc<dyn UserProfiles>) -> Self {
        let tools: Vec<Arc<dyn LocalTool>> = vec![
            Arc::new(ProfileGetTool::new(profiles.clone())),
            Arc::new(ProfileUpdateTool::new(profiles)),
        ];
        LocalToolsProvider {
            tools: tools
                .into_iter()
                .map(|tool| (tool.spec().name, tool))
                .collect(),
        }
    }
}

#[async_trait]
impl ToolsProvider for LocalToolsProvider {
    async fn tools(&self) -> Vec<ToolSpec> {
        self.tools.values().map(|tool| tool.spec()).collect()
    }

    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        match self.tools.get(name) {
            Some(tool) => tool.call(arguments, context).await,
            None => Err(ToolError::UnknownTool(name.to_string())),
        }
    }
}
