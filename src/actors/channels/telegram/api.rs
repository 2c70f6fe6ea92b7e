//! Calling the Bot API: a failed call as the channel core sees it (a pause Telegram asks
//! for included), whether a failure may pass, the `sendMessage` request every message
//! starts from, and quick calls (acknowledging a button press) made again a few times.

use std::future::IntoFuture;
use std::time::Duration;

use teloxide::payloads::SendMessageSetters;
use teloxide::requests::Requester;
use teloxide::types::{ChatId, MessageId, ReplyParameters};
use teloxide::{ApiError, RequestError};

use super::TelegramAdapter;
use super::chat::ChatTarget;
use crate::actors::channels::core::DeliveryError;

/// Attempts of a quick Bot API call (acknowledging a button press) before hearth gives up
/// on it; what the member must see goes through the outbox, which keeps trying.
pub(super) const QUICK_ATTEMPTS: u32 = 6;
/// The longest hearth waits between two attempts of a quick call, also when Telegram asks
/// for longer.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A failed Bot API call, as the channel core sees it (which caps the pause Telegram asks
/// for).
pub(super) fn delivery_error(error: RequestError) -> DeliveryError {
    match &error {
        RequestError::RetryAfter(seconds) => DeliveryError::Transient {
            reason: error.to_string(),
            retry_after: Some(seconds.duration()),
        },
        _ if is_transient(&error) => DeliveryError::Transient {
            reason: error.to_string(),
            retry_after: None,
        },
        _ => DeliveryError::Permanent(error.to_string()),
    }
}

/// A `sendMessage` request in the conversation of `target`.
pub(super) fn message(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    text: &str,
    reply_to: Option<MessageId>,
) -> teloxide::requests::JsonRequest<teloxide::payloads::SendMessage> {
    let mut request = adapter.bot.send_message(ChatId(target.chat_id), text);
    if let Some(thread) = target.thread() {
        request = request.message_thread_id(thread);
    }
    if let Some(message_id) = reply_to {
        // The member may have deleted their message meanwhile: answer anyway.
        request = request
            .reply_parameters(ReplyParameters::new(message_id).allow_sending_without_reply());
    }
    request
}

/// Whether an error may pass if the call is made again later.
pub(super) fn is_transient(error: &RequestError) -> bool {
    match error {
        RequestError::RetryAfter(_)
        | RequestError::Network(_)
        | RequestError::InvalidJson { .. } => true,
        // Bad gateways and the like come back as unknown API errors.
        RequestError::Api(ApiError::Unknown(_)) => true,
        _ => false,
    }
}

/// How long to wait before attempt `attempt + 1` after `error`: what Telegram asked for,
/// else 0.5 s doubling to `MAX_BACKOFF`.
pub(super) fn backoff(error: &RequestError, attempt: u32) -> Duration {
    match error {
        RequestError::RetryAfter(seconds) => seconds.duration(),
        _ => Duration::from_millis(500u64.saturating_mul(1 << attempt.min(10))).min(MAX_BACKOFF),
    }
}

/// Make a quick Bot API call, again after flood control's wait or a transient failure
/// (waiting at most `MAX_BACKOFF`), up to `attempts` times.
pub(super) async fn with_retries<T, R, F>(
    what: &str,
    attempts: u32,
    mut request: F,
) -> Result<T, RequestError>
where
    F: FnMut() -> R,
    R: IntoFuture<Output = Result<T, RequestError>>,
{
    let mut attempt = 0;
    loop {
        match request().into_future().await {
            Ok(value) => return Ok(value),
            Err(error) if is_transient(&error) && attempt + 1 < attempts => {
                let wait = backoff(&error, attempt).min(MAX_BACKOFF);
                tracing::info!(call = what, %error, wait_ms = wait.as_millis() as u64, "telegram call failed; trying again");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}
