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
use crate::backoff::{Backoff, Doubling};

/// Attempts of a quick Bot API call (acknowledging a button press) before hearth gives up
/// on it; what the member must see goes through the outbox, which keeps trying.
pub(super) const QUICK_ATTEMPTS: u32 = 6;
/// The waits between two attempts of a quick call: 0.5 s doubling to 30 s, also when
/// Telegram asks for longer.
const QUICK_RETRIES: Doubling = Doubling::new(Duration::from_millis(500), Duration::from_secs(30));

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
        // Bad gateways and the like come back as unknown API errors; so do refusals
        // teloxide does not spell as Telegram does (an old button press's "query ID is
        // invalid"), and a refusal does not pass by asking again.
        RequestError::Api(ApiError::Unknown(description)) => !is_refusal(description),
        _ => false,
    }
}

/// Whether Telegram's error description is a 4xx refusal: the request itself is wrong.
fn is_refusal(description: &str) -> bool {
    ["Bad Request", "Unauthorized", "Forbidden", "Not Found"]
        .iter()
        .any(|refusal| description.starts_with(refusal))
}

/// One more failure of `failures`, with `error`: how long to wait, what Telegram asked
/// for when it did, else the schedule's next wait; both within the schedule's cap.
pub(super) fn wait_after(error: &RequestError, failures: &mut Backoff) -> Duration {
    let next = failures.failed();
    match error {
        RequestError::RetryAfter(seconds) => failures.schedule().capped(seconds.duration()),
        _ => next,
    }
}

/// Make a quick Bot API call, again after flood control's wait or a transient failure
/// (waiting along `QUICK_RETRIES`), up to `attempts` times.
pub(super) async fn with_retries<T, R, F>(
    what: &str,
    attempts: u32,
    mut request: F,
) -> Result<T, RequestError>
where
    F: FnMut() -> R,
    R: IntoFuture<Output = Result<T, RequestError>>,
{
    let mut failures = Backoff::new(QUICK_RETRIES);
    loop {
        match request().into_future().await {
            Ok(value) => return Ok(value),
            Err(error) if is_transient(&error) && failures.failures() + 1 < attempts => {
                let wait = wait_after(&error, &mut failures);
                tracing::info!(call = what, %error, wait_ms = wait.as_millis() as u64, "telegram call failed; trying again");
                tokio::time::sleep(wait).await;
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use teloxide::types::Seconds;
    use tokio::time::Instant;

    use super::*;

    /// Calls `with_retries` whose attempts fail with `failures` in turn, then succeed; how
    /// many attempts were made, what came of it and how long it took on the paused clock.
    async fn attempts_of(
        attempts: u32,
        failures: Vec<RequestError>,
    ) -> (u32, Result<(), RequestError>, Duration) {
        let made = Cell::new(0u32);
        let failures = std::cell::RefCell::new(failures.into_iter());
        let started = Instant::now();
        let result = with_retries("test", attempts, || {
            made.set(made.get() + 1);
            let outcome = failures.borrow_mut().next().map_or(Ok(()), Err);
            std::future::ready(outcome)
        })
        .await;
        (made.get(), result, started.elapsed())
    }

    fn bad_gateway() -> RequestError {
        RequestError::Api(ApiError::Unknown("Bad Gateway".into()))
    }

    #[tokio::test(start_paused = true)]
    async fn a_quick_call_waits_longer_after_each_failure_and_gives_up_after_its_attempts() {
        let (made, result, took) = attempts_of(6, vec![bad_gateway(), bad_gateway()]).await;
        assert_eq!((made, result.is_ok()), (3, true));
        assert_eq!(took, Duration::from_millis(500 + 1000));
        let (made, result, took) = attempts_of(4, (0..10).map(|_| bad_gateway()).collect()).await;
        assert_eq!((made, result.is_err()), (4, true));
        assert_eq!(took, Duration::from_millis(500 + 1000 + 2000));
        // A failure that does not pass by waiting is not tried again, also one teloxide
        // does not know by name (an old button press answered again).
        let old_press =
            "Bad Request: query is too old and response timeout expired or query ID is invalid";
        for refused in [
            RequestError::Api(ApiError::BotBlocked),
            RequestError::Api(ApiError::Unknown(old_press.into())),
        ] {
            let (made, result, took) = attempts_of(6, vec![refused]).await;
            assert_eq!((made, result.is_err(), took), (1, true, Duration::ZERO));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn flood_control_s_wait_is_honoured_up_to_the_cap() {
        let asked = |seconds| RequestError::RetryAfter(Seconds::from_seconds(seconds));
        let (made, result, took) = attempts_of(6, vec![asked(3), asked(3600)]).await;
        assert_eq!((made, result.is_ok()), (3, true));
        assert_eq!(took, Duration::from_secs(3 + 30));
    }
}
