//! `check_order_status`, seed 003's example tool: an order's status from the DataSource,
//! as JSON with a `summary` a template can quote (`{result.summary}`). An unknown order is
//! the tool's error, "order O-1 not found".

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::data_source::DataSource;
use crate::llm::ToolSpec;
use crate::tools::{ToolContext, ToolError, ToolsProvider};

pub const CHECK_ORDER_STATUS: &str = "check_order_status";

/// Offers `check_order_status` over one data source.
pub struct OrderStatusTool {
    source: Arc<dyn DataSource>,
}

impl OrderStatusTool {
    pub fn new(source: Arc<dyn DataSource>) -> Self {
        OrderStatusTool { source }
    }
}

#[async_trait]
impl ToolsProvider for OrderStatusTool {
    async fn tools(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: CHECK_ORDER_STATUS.to_string(),
            description: "Look up an order's shipping and delivery status by its id (O-12345)."
                .to_string(),
            parameters: json!({
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "the order id"}},
                "required": ["order_id"]
            }),
        }]
    }

    async fn call(
        &self,
        name: &str,
        arguments: &Value,
        _context: &ToolContext,
    ) -> Result<String, ToolError> {
        if name != CHECK_ORDER_STATUS {
            return Err(ToolError::UnknownTool(name.to_string()));
        }
        let Some(order_id) = arguments["order_id"].as_str().map(str::trim) else {
            return Err(ToolError::InvalidArguments {
                tool: name.to_string(),
                message: "order_id must be a string such as \"O-12345\"".to_string(),
            });
        };
        let failed = |message: String| ToolError::Failed {
            tool: name.to_string(),
            message,
        };
        let order = self
            .source
            .get_order(order_id)
            .await
            .map_err(|error| failed(error.to_string()))?
            .ok_or_else(|| failed(format!("order {order_id} not found")))?;
        let mut result = order.as_object().cloned().unwrap_or_default();
        result.insert("summary".to_string(), Value::String(summary(&order)));
        Ok(Value::Object(result).to_string())
    }
}

/// The order's state in a few words.
fn summary(order: &Value) -> String {
    let text = |key: &str| order[key].as_str().unwrap_or("unknown").to_string();
    match order["status"].as_str().unwrap_or("unknown") {
        "shipped" => format!("shipped via {}, ETA {}", text("carrier"), text("eta")),
        "in_transit" => format!("in transit with {}, ETA {}", text("carrier"), text("eta")),
        "delivered" => format!("delivered on {}", text("delivered_on")),
        "delayed" => format!(
            "delayed ({}), new ETA {}",
            text("delay_reason"),
            text("eta")
        ),
        "refunded" => format!("refunded ({} returned)", order["amount"]),
        "not_found" => format!(
            "not found by the carrier {}: tracking {} has no scans",
            text("carrier"),
            text("tracking")
        ),
        other => other.replace('_', " "),
    }
}
