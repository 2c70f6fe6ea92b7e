//! The service profiles: one `ProcessingService` per profile, each over its own tools
//! stack (and an `engine: intents` profile's intents engine), and `Delegation`, through
//! which one profile reaches another.

use std::collections::HashMap;
use std::sync::Arc;

use actix::{Actor, Addr, AsyncContext, Context};

use super::StartError;
use super::addresses::EarlyAddresses;
use super::family::FamilyParts;
use super::foundation::Foundation;
use super::intents;
use super::tools::{self, ToolParts, ToolSources, profile_tools};
use crate::actors::delegation::{Delegation, DelegationTarget, DelegationTargetInfo};
use crate::actors::llm_broker::LlmBroker;
use crate::actors::processing::{ProcessingDeps, ProcessingService};
use crate::calendar::ProfileCalendars;
use crate::config::LoadedConfig;
use crate::intents::{IntentsDeps, IntentsRegistry};
use crate::reminders::RemindersParts;

/// The profiles' services, running, and what the web page takes from the default profile.
pub(super) struct StartedProfiles {
    /// Each profile's `ProcessingService`, by profile id.
    pub services: HashMap<String, Addr<ProcessingService>>,
    /// The default profile's calendars, for the web page's Calendar.
    pub default_calendars: Option<Arc<ProfileCalendars>>,
    /// The default profile's intents, when it runs the intents engine.
    pub default_intents: Option<Arc<IntentsRegistry>>,
}

/// One `ProcessingService` per profile, started: its tools stack built from the sources
/// (its calendars, reminders, notes, scripts, plugins, MCP servers and delegation), its
/// intents engine for an `engine: intents` profile. After the broker and the tools'
/// sources, which every service uses, and before `Delegation` and the queue, which hand
/// turns to them.
pub(super) async fn start_profiles(
    loaded: &LoadedConfig,
    base: &Foundation,
    family: &FamilyParts,
    broker: &Addr<LlmBroker>,
    addresses: &EarlyAddresses,
    sources: &ToolSources,
    reminders: &RemindersParts,
) -> Result<StartedProfiles, StartError> {
    let config = &loaded.config;
    let stores = &base.stores;
    let deps = ProcessingDeps {
        broker: broker.clone().recipient(),
        memory: stores.memory.clone(),
        profiles: stores.profiles.clone(),
        family: family.family.clone(),
        vision_llms: ProcessingDeps::vision_llms(&config.llms),
        plugins: None,
        journal: stores.turn_journal.clone(),
    };
    let delegation_targets: Vec<DelegationTargetInfo> = loaded
        .profiles
        .iter()
        .map(|profile| DelegationTargetInfo {
            id: profile.id.clone(),
            description: profile.description.clone(),
            level: profile.processing.delegation_security_level,
        })
        .collect();
    let calendars = tools::profile_calendars(loaded, &base.readiness);
    let default_calendars = calendars.get(&loaded.default_profile_id).cloned();
    let parts = ToolParts {
        local_tools: sources.local_tools.clone(),
        calendars,
        plugins: sources.plugins.clone(),
        #[cfg(feature = "mcp")]
        mcp: sources.mcp.clone(),
        delegation_targets,
        delegation: addresses.delegation.address().recipient(),
        scripts: sources.scripts.clone(),
        reminders: reminders.clone(),
        notes: stores.notes.clone(),
        family: family.family.clone(),
        // Memory is searched wherever a profile's `recall` lets it.
        memory: Some(tools::memory_search(loaded, base, broker)),
    };
    let intents_deps = IntentsDeps {
        broker: broker.clone().recipient(),
        memory: stores.memory.clone(),
        plans: stores.plans.clone(),
        journal: stores.turn_journal.clone(),
        telemetry: stores.telemetry.clone(),
        metrics: base.metrics.clone(),
        roles: intents::roles(loaded),
        tell: addresses.queue.address().recipient(),
    };
    let mut services = HashMap::new();
    let mut default_intents = None;
    for profile in &loaded.profiles {
        let intents_profile = intents::load_intents(profile, stores).await?;
        if profile.id == loaded.default_profile_id {
            default_intents = intents_profile
                .as_ref()
                .map(|intents| intents.registry.clone());
        }
        let own_tools = intents_profile
            .as_ref()
            .and_then(|intents| intents.own_tools.clone());
        let (tools, routes_to_plugins) = profile_tools(profile, &parts, own_tools);
        // Only a profile that routes to plugins completes a pending plugin call with the
        // member's next message.
        let deps = ProcessingDeps {
            plugins: routes_to_plugins.then(|| sources.plugins.clone()),
            ..deps.clone()
        };
        let mut service = ProcessingService::new(profile.clone(), tools.clone(), deps);
        if let Some(intents_profile) = intents_profile {
            service = service.with_intents(
                intents::intents_engine(profile, intents_profile, tools, intents_deps.clone())
                    .await?,
            );
        }
        services.insert(profile.id.clone(), service.start());
    }
    Ok(StartedProfiles {
        services,
        default_calendars,
        default_intents,
    })
}

/// `Delegation`, started in the context whose address every profile's delegation tool
/// already holds, once the services it runs target turns on exist; a target keeps its
/// profile's `delegation_security_level`.
pub(super) fn start_delegation(
    loaded: &LoadedConfig,
    context: Context<Delegation>,
    services: &HashMap<String, Addr<ProcessingService>>,
    base: &Foundation,
) {
    let targets = loaded
        .profiles
        .iter()
        .map(|profile| {
            (
                profile.id.clone(),
                DelegationTarget {
                    level: profile.processing.delegation_security_level,
                    service: services[&profile.id].clone(),
                },
            )
        })
        .collect();
    context.run(Delegation::new(targets, base.stores.memory.clone()));
}
