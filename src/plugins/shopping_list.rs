//! The family shopping list, hearth's built-in (`inline`) plugin: `add`, `remove`, `list`
//! and `clear` on named lists shared by the whole family, kept in the database
//! (`ShoppingLists`). Its manifest is `plugins/shopping_list/plugin.yaml`; which list to
//! use comes from the parameters, so the resolver fills it from `config.yml`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::invoke::{InlinePlugin, PluginAnswer, PluginCallError, PluginCallRequest};
use crate::ports::{ShoppingLists, StorageError, now_ms};

pub const SHOPPING_LIST_PLUGIN: &str = "shopping_list";
/// The list used when neither the call nor `config.yml` names one.
const DEFAULT_LIST: &str = "groceries";

pub struct ShoppingListPlugin {
    lists: Arc<dyn ShoppingLists>,
}

impl ShoppingListPlugin {
    pub fn new(lists: Arc<dyn ShoppingLists>) -> Self {
        ShoppingListPlugin { lists }
    }
}

fn text(request: &PluginCallRequest, name: &str) -> Option<String> {
    match request.parameters.get(name)? {
        Value::String(text) if !text.trim().is_empty() => Some(text.trim().to_string()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

fn failed(error: StorageError) -> PluginCallError {
    PluginCallError::Reported {
        plugin: SHOPPING_LIST_PLUGIN.into(),
        message: error.to_string(),
    }
}

#[async_trait]
impl InlinePlugin for ShoppingListPlugin {
    async fn call(&self, request: &PluginCallRequest) -> Result<PluginAnswer, PluginCallError> {
        let list = text(request, "list").unwrap_or_else(|| DEFAULT_LIST.to_string());
        let item = text(request, "item");
        let answer = match (request.capability_id.as_str(), item) {
            ("add", Some(item)) => {
                let quantity = request
                    .parameters
                    .get("quantity")
                    .and_then(Value::as_u64)
                    .and_then(|quantity| u32::try_from(quantity).ok())
                    .unwrap_or(1)
                    .max(1);
                let added = self
                    .lists
                    .add(&list, &item, quantity, &request.user.id, now_ms())
                    .await
                    .map_err(failed)?;
                if added.quantity == quantity {
                    format!(
                        "Added {} to the {list} list.",
                        counted(&added.name, quantity)
                    )
                } else {
                    format!(
                        "{} was already on the {list} list; it now says {}.",
                        added.name, added.quantity
                    )
                }
            }
            ("remove", Some(item)) => {
                if self.lists.remove(&list, &item).await.map_err(failed)? {
                    format!("Removed {item} from the {list} list.")
                } else {
                    format!("{item} was not on the {list} list.")
                }
            }
            ("list", _) => {
                let items = self.lists.list(&list).await.map_err(failed)?;
                if items.is_empty() {
                    format!("The {list} list is empty.")
                } else {
                    let lines: Vec<String> = items
                        .iter()
                        .map(|item| format!("- {}", counted(&item.name, item.quantity)))
                        .collect();
                    format!("The {list} list:\n{}", lines.join("\n"))
                }
            }
            ("clear", _) => {
                let removed = self.lists.clear(&list).await.map_err(failed)?;
                format!("Cleared the {list} list ({removed} items removed).")
            }
            (capability @ ("add" | "remove"), None) => {
                return Ok(PluginAnswer::AskUser {
                    missing: vec!["item".into()],
                    text: format!("Which item should I {capability}?"),
                });
            }
            (other, _) => {
                return Err(PluginCallError::Reported {
                    plugin: SHOPPING_LIST_PLUGIN.into(),
                    message: format!("it has no capability {other:?}"),
                });
            }
        };
        Ok(PluginAnswer::Text(answer))
    }
}

fn counted(name: &str, quantity: u32) -> String {
    if quantity == 1 {
        name.to_string()
    } else {
        format!("{quantity} × {name}")
    }
}
