//! What a chat platform must do for the channel core: deliver one part of an outgoing
//! message (a reply, a prompt with its buttons or reactions, the edit that closes a prompt)
//! and say whether a failure may pass if tried again. Everything else (the outbox, order,
//! retries, giving up) is the core's. A platform that receives its events over HTTP
//! (Telegram's webhook) hands the routes it serves to the HTTP API (`PlatformRoutes`).

use std::sync::Arc;
use std::time::Duration;

use actix_web::web;
use async_trait::async_trait;

use crate::ports::OutboxEntry;

/// Routes a chat platform serves on the HTTP API's listener (Telegram's webhook), added to
/// every worker's app.
pub type PlatformRoutes = Arc<dyn Fn(&mut web::ServiceConfig) + Send + Sync>;

/// Why a part was not delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DeliveryError {
    /// It may pass later (network, 5xx, flood control): try again, after `retry_after`
    /// when the platform said how long.
    Transient {
        reason: String,
        retry_after: Option<Duration>,
    },
    /// It will not pass (the chat is gone, the bot was blocked): give up now.
    Permanent(String),
}

impl std::fmt::Display for DeliveryError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeliveryError::Transient { reason, .. } | DeliveryError::Permanent(reason) => {
                formatter.write_str(reason)
            }
        }
    }
}

#[async_trait]
pub(crate) trait Platform: Send + Sync + 'static {
    /// A part as this platform sends it (a rendered message, a reaction, an edit).
    type Part: Send + Sync + 'static;

    /// The channel name (`Inbound::channel`) whose outbox rows this platform delivers.
    fn channel(&self) -> &'static str;

    /// The parts `entry` is delivered in, in order; at least one. Every rendering of the
    /// text happens here, never in `deliver`: the core runs this on the blocking pool for
    /// a long text, whose rendering grows with its length.
    fn parts(&self, entry: &OutboxEntry) -> Vec<Self::Part>;

    /// Deliver part `index` of `entry`; the platform's id of what it sent, if it has one.
    /// `transaction_id` is the same for every attempt of this part, across restarts: a
    /// platform that de-duplicates by it (Matrix) never shows a resent part twice.
    async fn deliver(
        &self,
        entry: &OutboxEntry,
        index: usize,
        part: &Self::Part,
        transaction_id: &str,
    ) -> Result<Option<String>, DeliveryError>;
}
