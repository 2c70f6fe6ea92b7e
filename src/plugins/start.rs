//! Starting the plugins: the catalog from `plugins_dir` (a broken file stops start-up with
//! every problem named), the external plugins registered in earlier runs, the built-in
//! shopping list, and the runtime every profile's `route_to_plugin` tool shares.

use std::collections::HashMap;
use std::sync::Arc;

use actix::Recipient;

use super::catalog::{CatalogError, PluginCatalog};
use super::invoke::{InlinePlugin, PluginInvoker};
use super::manifest::PluginManifest;
use super::runtime::PluginRuntime;
use super::shopping_list::{SHOPPING_LIST_PLUGIN, ShoppingListPlugin};
use crate::actors::llm_broker::GenerateChat;
use crate::config::HearthConfig;
use crate::family::Family;
use crate::ports::RegisteredPlugins;
use crate::storage::Stores;

/// Put the external plugins registered in earlier runs back into `catalog`.
pub async fn restore_registered(catalog: &PluginCatalog, registered: &dyn RegisteredPlugins) {
    match registered.list().await {
        Ok(registered) => {
            for plugin in registered {
                let restored = PluginManifest::from_json_value(plugin.manifest)
                    .map_err(|error| error.to_string())
                    .and_then(|manifest| {
                        catalog
                            .register(manifest)
                            .map_err(|error| error.to_string())
                    });
                if let Err(error) = restored {
                    tracing::warn!(plugin = %plugin.plugin_id, %error, "registered plugin not restored");
                }
            }
        }
        Err(error) => {
            tracing::error!(%error, "registered plugins unreadable; they must register again")
        }
    }
}

pub async fn start_plugins(
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
