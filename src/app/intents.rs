//! The intents engine of each `engine: intents` profile: its registry read and checked, its
//! data source opened, and the engine built over the profile's tools stack.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::StartError;
use crate::config::{Engine, FamilyRole, LoadedConfig, ResolvedProfile};
use crate::ids::MemberId;
use crate::intents::{
    CHECK_ORDER_STATUS, DataSource, DataSourceKind, IntentsDeps, IntentsEngine, IntentsRegistry,
    JsonDataSource, ORDERS, OrderStatusTool, RecordsDataSource,
};
use crate::storage::Stores;
use crate::tools::ToolsProvider;

/// An intents profile's registry and the tools only it has.
pub(super) struct IntentsProfile {
    pub registry: Arc<IntentsRegistry>,
    pub own_tools: Option<Arc<dyn ToolsProvider>>,
}

/// The registry of `profile` if it runs the intents engine; a bad file stops start-up.
pub(super) async fn load_intents(
    profile: &ResolvedProfile,
    stores: &Stores,
) -> Result<Option<IntentsProfile>, StartError> {
    if profile.processing.engine != Engine::Intents {
        return Ok(None);
    }
    let registry = IntentsRegistry::load(Path::new(&profile.processing.intents_file)).await?;
    let offered = profile
        .tools
        .enable_local_tools
        .iter()
        .any(|tool| tool == CHECK_ORDER_STATUS);
    let source: Option<Arc<dyn DataSource>> = match registry.order_source(offered) {
        None => None,
        Some(config) if config.kind == DataSourceKind::Sql => {
            Some(Arc::new(RecordsDataSource(stores.intent_records.clone())))
        }
        Some(config) => {
            let path = config.path.clone().unwrap_or_default();
            let loaded = JsonDataSource::load(ORDERS, Path::new(&path)).await;
            Some(Arc::new(
                loaded.map_err(|error| registry.data_source_problem(&error))?,
            ))
        }
    };
    tracing::info!(
        profile = %profile.id,
        file = %registry.file.display(),
        intents = registry.intents.len(),
        "intents loaded"
    );
    Ok(Some(IntentsProfile {
        registry: Arc::new(registry),
        own_tools: source
            .map(|source| Arc::new(OrderStatusTool::new(source)) as Arc<dyn ToolsProvider>),
    }))
}

/// The engine of an intents profile over its tools stack, once every intent's tool is
/// known to be in it.
pub(super) async fn intents_engine(
    profile: &ResolvedProfile,
    intents: IntentsProfile,
    tools: Arc<dyn ToolsProvider>,
    deps: IntentsDeps,
) -> Result<Arc<IntentsEngine>, StartError> {
    let known: Vec<String> = tools
        .tools()
        .await
        .into_iter()
        .map(|spec| spec.name)
        .collect();
    intents.registry.check_tools(&known, &profile.id)?;
    Ok(Arc::new(IntentsEngine::new(
        profile.clone(),
        intents.registry,
        tools,
        deps,
    )))
}

/// `family[].role` by member id.
pub(super) fn roles(loaded: &LoadedConfig) -> Arc<BTreeMap<MemberId, FamilyRole>> {
    Arc::new(
        loaded
            .config
            .family
            .iter()
            .map(|member| (member.id.clone(), member.role))
            .collect(),
    )
}
