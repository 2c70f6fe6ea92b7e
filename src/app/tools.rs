//! Each profile's tools (seed 004's stack): its local tools, the plugins it routes to, its
//! MCP servers' tools and delegation, composed, then wrapped by the confirmation layer; and
//! the sources they are made from, loaded once for every profile (the MCP servers, the
//! plugins, the family scripts, what the reminder tools need).

use std::collections::HashMap;
use std::sync::Arc;

use actix::{Addr, AsyncContext, Context, Recipient};
use async_trait::async_trait;

use super::StartError;
use super::addresses::EarlyAddresses;
use super::family::FamilyParts;
use super::foundation::Foundation;
use super::plugins::start_plugins;
use crate::actors::llm_broker::LlmBroker;
use crate::actors::request_queue::RequestQueue;

use crate::actors::delegation::{DELEGATE_TOOL, Delegate, DelegationTargetInfo, DelegationTool};
use crate::calendar::{CALENDAR_TOOL_NAMES, CalendarToolset, ProfileCalendars};
use crate::config::{LoadedConfig, Recall, ResolvedProfile, Secret};
use crate::family::Family;
use crate::ids::MemberId;
use crate::llm::{Embed, EmbedPurpose, LlmError};
use crate::local_time::ZoneName;
use crate::notes::{NOTE_TOOL_NAMES, NotesToolset};
use crate::plugins::{PluginRuntime, ROUTE_TO_PLUGIN, RouteToPluginTool};
use crate::ports::Notes;
use crate::readiness::Readiness;
use crate::recall::{
    MEMORY_TOOL_NAMES, MemorySearch, MemoryToolset, QueryEmbedder, QueryVector, QueryVectorError,
};
use crate::reminders::{REMINDER_TOOL_NAMES, RemindersParts, RemindersToolset};
use crate::scripts::{RUN_SCRIPT, SCRIPT_TOOL_NAMES, ScriptsToolset};
#[cfg(feature = "mcp")]
use crate::tools::McpServers;
#[cfg(feature = "mcp")]
use crate::tools::mcp::{ChatElicitation, MAX_ELICITATION_WAIT, McpOptions};
use crate::tools::{
    CompositeToolsProvider, ConfirmingToolsProvider, FilteredToolsProvider, LocalToolsProvider,
    ToolsProvider,
};

/// What the tools of every profile are made from, loaded once.
pub(super) struct ToolSources {
    /// The MCP servers of config, connected or retried in the background.
    #[cfg(feature = "mcp")]
    pub mcp: Arc<McpServers>,
    /// The local tools (the member's facts), before each profile's filter.
    pub local_tools: Arc<dyn ToolsProvider>,
    /// The plugins' catalog and runtime, shared by every profile's `route_to_plugin`.
    pub plugins: Arc<PluginRuntime>,
    /// The family scripts, when a profile enables their tools.
    pub scripts: Option<Arc<ScriptsToolset>>,
}

/// The MCP servers, the local tools, the plugins (their catalog checked against every
/// profile's `confirm_tools`) and the family scripts. After the broker (the plugins'
/// parameter resolver asks a model) and the queue's address (an MCP server's questions are
/// asked through it), before the profiles whose tools they make.
pub(super) async fn load_tool_sources(
    loaded: &LoadedConfig,
    base: &Foundation,
    family: &FamilyParts,
    broker: &Addr<LlmBroker>,
    queue: &Context<RequestQueue>,
) -> Result<ToolSources, StartError> {
    let config = &loaded.config;
    let stores = &base.stores;
    #[cfg(feature = "mcp")]
    let mcp = start_mcp(loaded, queue).await;
    #[cfg(not(feature = "mcp"))]
    let _ = queue;
    let local_tools: Arc<dyn ToolsProvider> =
        Arc::new(LocalToolsProvider::new(stores.profiles.clone()));
    let plugins = start_plugins(
        config,
        stores,
        family.family.clone(),
        broker.clone().recipient(),
    )
    .await?;
    plugins.catalog.check_approval_names(loaded)?;
    let scripts = crate::scripts::load_if_used(loaded).await?.map(|catalog| {
        Arc::new(ScriptsToolset::new(
            catalog,
            stores.script_workflows.clone(),
            config.scripts.clone(),
        ))
    });
    Ok(ToolSources {
        #[cfg(feature = "mcp")]
        mcp,
        local_tools,
        plugins,
        scripts,
    })
}

/// The MCP servers of config, connected (or retried in the background: a server that fails
/// to start does not stop hearth, its tools answer "unavailable" meanwhile).
#[cfg(feature = "mcp")]
async fn start_mcp(
    loaded: &LoadedConfig,
    queue_context: &Context<RequestQueue>,
) -> Arc<McpServers> {
    // A server's question waits for the member as long as a confirmation of the asking
    // profile would (`ToolContext::question_timeout`), never longer than the cap.
    let options = McpOptions {
        elicitation: Some(Arc::new(ChatElicitation::new(
            queue_context.address().recipient(),
            MAX_ELICITATION_WAIT,
        ))),
        ..McpOptions::default()
    };
    Arc::new(McpServers::start(&loaded.config.mcp_servers, options).await)
}

/// What the reminder tools of every profile and the web page's reminder form are made of:
/// the schedules, the family and their own chats, the channels a reminder may be pushed to
/// (the chat platforms), and the scheduler's address, told of every change and settling.
pub(super) fn reminders_parts(
    loaded: &LoadedConfig,
    base: &Foundation,
    family: &FamilyParts,
    addresses: &EarlyAddresses,
) -> RemindersParts {
    RemindersParts {
        schedules: base.stores.schedules.clone(),
        family: family.family.clone(),
        own_chats: family.own_chats.clone(),
        settings: loaded.config.reminders.clone(),
        push_channels: addresses.channels.durable.iter().cloned().collect(),
        profiles: loaded
            .profiles
            .iter()
            .map(|profile| profile.id.clone())
            .collect(),
        changes: addresses.scheduler.address().recipient(),
        settle: addresses.scheduler.address().recipient(),
    }
}

/// What every profile's tools are made from.
pub(super) struct ToolParts {
    pub local_tools: Arc<dyn ToolsProvider>,
    /// Each profile's calendars, for the profiles that have any.
    pub calendars: HashMap<String, Arc<ProfileCalendars>>,
    pub plugins: Arc<PluginRuntime>,
    #[cfg(feature = "mcp")]
    pub mcp: Arc<McpServers>,
    pub delegation_targets: Vec<DelegationTargetInfo>,
    pub delegation: Recipient<Delegate>,
    /// The family scripts, when a profile enables their tools.
    pub scripts: Option<Arc<ScriptsToolset>>,
    /// What the reminder tools of every profile share.
    pub reminders: RemindersParts,
    /// The family's notes, and who the members are (their roles decide who deletes what).
    pub notes: Arc<dyn Notes>,
    pub family: Arc<Family>,
    /// Family memory's search; `None` while memory is off.
    pub memory: Option<Arc<MemorySearch>>,
}

/// Family memory searched as members ask: by words, and by meaning through the broker when
/// `memory.embedding_model` names a model.
pub(super) fn memory_search(
    loaded: &LoadedConfig,
    base: &Foundation,
    broker: &Addr<LlmBroker>,
) -> Arc<MemorySearch> {
    let embedder: Option<Arc<dyn QueryEmbedder>> = loaded
        .config
        .embedding_llm()
        .map(|_| Arc::new(BrokerQueryEmbedder(broker.clone())) as Arc<dyn QueryEmbedder>);
    Arc::new(MemorySearch::new(
        base.stores.family_memory.clone(),
        embedder,
    ))
}

/// A member's query turned into a vector by the broker (`Embed`, purpose `Query`).
struct BrokerQueryEmbedder(Addr<LlmBroker>);

#[async_trait]
impl QueryEmbedder for BrokerQueryEmbedder {
    async fn embed_query(
        &self,
        query: &str,
        member: &MemberId,
    ) -> Result<QueryVector, QueryVectorError> {
        let embeddings = self
            .0
            .send(Embed {
                texts: vec![query.to_owned()],
                member: Some(member.clone()),
                purpose: EmbedPurpose::Query,
            })
            .await
            .map_err(|error| QueryVectorError::Broker(error.to_string()))??;
        let vector = embeddings.vectors.into_iter().next().ok_or_else(|| {
            LlmError::Decode("the embedding answer has no vector for the query".into())
        })?;
        Ok(QueryVector {
            model: embeddings.model,
            vector,
        })
    }
}

/// A profile's tools, and whether it routes to plugins (only such a profile completes a
/// pending plugin call with the member's next message). `own_tools` are the local tools only
/// this profile has (an intents profile's `check_order_status`), offered like the others
/// where `enable_local_tools` names them.
pub(super) fn profile_tools(
    profile: &ResolvedProfile,
    parts: &ToolParts,
    own_tools: Option<Arc<dyn ToolsProvider>>,
) -> (Arc<dyn ToolsProvider>, bool) {
    let enables = |tool: &str| {
        profile
            .tools
            .enable_local_tools
            .iter()
            .any(|name| name == tool)
    };
    let mut providers: Vec<Arc<dyn ToolsProvider>> = vec![Arc::new(FilteredToolsProvider::new(
        parts.local_tools.clone(),
        profile.tools.enable_local_tools.iter().cloned(),
    ))];
    if let Some(own_tools) = own_tools {
        providers.push(Arc::new(FilteredToolsProvider::new(
            own_tools,
            profile.tools.enable_local_tools.iter().cloned(),
        )));
    }
    let routes_to_plugins = enables(ROUTE_TO_PLUGIN);
    if routes_to_plugins {
        providers.push(Arc::new(RouteToPluginTool::new(
            parts.plugins.clone(),
            profile.processing.llm_model.clone(),
        )));
    }
    // Without the `mcp` feature, validation refuses `mcp_servers`, so no profile names one.
    #[cfg(feature = "mcp")]
    if !profile.tools.enable_mcp_server_ids.is_empty() {
        providers.push(parts.mcp.provider(&profile.tools.enable_mcp_server_ids));
    }
    if enables(DELEGATE_TOOL) {
        providers.push(Arc::new(DelegationTool::new(
            &profile.id,
            &parts.delegation_targets,
            parts.delegation.clone(),
        )));
    }
    if let Some(scripts) = &parts.scripts {
        let enabled = enabled_among(profile, SCRIPT_TOOL_NAMES);
        if !enabled.is_empty() {
            providers.push(Arc::new(FilteredToolsProvider::new(
                scripts.clone(),
                enabled,
            )));
        }
    }
    let reminder_tools = enabled_among(profile, REMINDER_TOOL_NAMES);
    if !reminder_tools.is_empty() {
        let zone = ZoneName::from(profile.processing.timezone);
        providers.push(Arc::new(FilteredToolsProvider::new(
            Arc::new(RemindersToolset::new(parts.reminders.clone(), zone)),
            reminder_tools,
        )));
    }
    let calendar_tools = enabled_among(profile, CALENDAR_TOOL_NAMES);
    if let Some(calendars) = parts.calendars.get(&profile.id)
        && !calendar_tools.is_empty()
    {
        let zone = ZoneName::from(profile.processing.timezone);
        providers.push(Arc::new(FilteredToolsProvider::new(
            Arc::new(CalendarToolset::new(
                calendars.clone(),
                parts.reminders.family.clone(),
                zone,
            )),
            calendar_tools,
        )));
    }
    // The notes provider is in the stack also when only the titles go in the prompt: its
    // `turn_note` gives them, and the filter offers none of its tools the profile left out.
    let note_tools = enabled_among(profile, NOTE_TOOL_NAMES);
    if !note_tools.is_empty() || profile.processing.include_notes_in_prompt {
        providers.push(Arc::new(FilteredToolsProvider::new(
            Arc::new(NotesToolset::new(
                parts.notes.clone(),
                parts.family.clone(),
                profile.processing.include_notes_in_prompt,
            )),
            note_tools,
        )));
    }
    // Family memory: `search_memory` where `enable_local_tools` names it, and each
    // message's snippets under `recall: auto` whether it is named or not; nothing at all
    // under `recall: off`.
    let recall = profile.processing.recall;
    if let Some(search) = &parts.memory
        && recall != Recall::Off
    {
        let memory_tools = enabled_among(profile, MEMORY_TOOL_NAMES);
        if !memory_tools.is_empty() || recall == Recall::Auto {
            providers.push(Arc::new(FilteredToolsProvider::new(
                Arc::new(MemoryToolset::new(
                    search.clone(),
                    parts.family.clone(),
                    ZoneName::from(profile.processing.timezone),
                    recall == Recall::Auto,
                )),
                memory_tools,
            )));
        }
    }
    // `run_script` asks the member itself, every time, showing the final values; naming
    // it in `confirm_tools` too would ask twice.
    let tools = Arc::new(ConfirmingToolsProvider::new(
        Arc::new(CompositeToolsProvider::new(providers)),
        profile
            .tools
            .confirm_tools
            .iter()
            .filter(|entry| *entry != RUN_SCRIPT)
            .cloned(),
    ));
    (tools, routes_to_plugins)
}

/// The tools among `names` that the profile's `enable_local_tools` names.
fn enabled_among(profile: &ResolvedProfile, names: &[&str]) -> Vec<String> {
    profile
        .tools
        .enable_local_tools
        .iter()
        .filter(|tool| names.contains(&tool.as_str()))
        .cloned()
        .collect()
}

/// The calendars of every profile that has a `calendar_config`, each with its password
/// (validation made sure the variable is set) and reporting to readiness.
pub(crate) fn profile_calendars(
    loaded: &LoadedConfig,
    readiness: &Arc<Readiness>,
) -> HashMap<String, Arc<ProfileCalendars>> {
    loaded
        .profiles
        .iter()
        .filter(|profile| !profile.processing.calendar.is_empty())
        .map(|profile| {
            let calendar = &profile.processing.calendar;
            let password = calendar
                .caldav
                .as_ref()
                .and_then(|caldav| loaded.secret(&caldav.password_env))
                .map(Secret::new);
            let calendars =
                ProfileCalendars::new(&profile.id, calendar, password, readiness.clone());
            (profile.id.clone(), Arc::new(calendars))
        })
        .collect()
}
