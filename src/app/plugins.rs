//! Starting the plugins: the catalog from `plugins_dir` (a broken file stops start-up with
//! every problem named), the external plugins registered in earlier runs, the built-in
//! shopping list on the stores, and the runtime every profile's `route_to_plugin` tool shares.

use std::collections::HashMap;
use std::sync::Arc;

use actix::Recipient;

use crate::config::HearthConfig;
use crate::family::Family;
use crate::llm::GenerateChat;
use crate::plugins::{
    CatalogError, InlinePlugin, PluginCatalog, PluginInvoker, PluginRuntime, SHOPPING_LIST_PLUGIN,
    ShoppingListPlugin, restore_registered,
};
use crate::storage::Stores;

pub(super) async fn start_plugins(
    config: &HearthConfig,
    stores: &Stores,
    family: Arc<Family>,
    broker: Recipient<GenerateChat>,
) -> Result<Arc<PluginRuntime>, CatalogError> {
    let catalog = PluginCatalog::from_config_off_the_runtime(config).await?;
    restore_registered(&catalog, stores.registered_plugins.as_ref()).await;
    let mut inline: HashMap<String, Arc<dyn InlinePlugin>> = HashMap::new();
    inline.insert(
        SHOPPING_LIST_PLUGIN.into(),
        Arc::new(ShoppingListPlugin::new(stores.shopping_lists.clone())),
    );
    let invoker = PluginInvoker::new(
        reqwest::Client::new(),
        inline,
        catalog.plugins_dir().to_path_buf(),
    );
    tracing::info!(plugins = ?catalog.plugin_ids(), "plugins loaded");
    Ok(Arc::new(PluginRuntime {
        catalog,
        invoker,
        profiles: stores.profiles.clone(),
        pending: stores.pending_plugin_calls.clone(),
        family,
        broker,
        telemetry: stores.telemetry.clone(),
    }))
}
