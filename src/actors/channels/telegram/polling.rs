//! Long polling: `getUpdates` in a loop that survives everything.
//!
//! The updates of one poll are handed over together (the chats at once, each chat in
//! order), and the offset after them is stored (`ChannelState`) once all are handled for
//! good, so a restart starts where the last run stopped: nothing lost, and an update
//! handled but not yet confirmed is recognised by its message's platform id (the inbox
//! accepts it once). Network errors and Telegram's 5xx back off (0.5 s doubling to 60 s),
//! 429 waits as long as Telegram says, and a watchdog abandons a poll that outlives its
//! timeout and starts a new one. Readiness says how polling is going.

use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use teloxide::payloads::GetUpdatesSetters;
use teloxide::requests::Requester;
use teloxide::types::{AllowedUpdate, BotCommand, Update};

use super::api::{is_transient, wait_after};
use super::{TELEGRAM_CHANNEL, TelegramAdapter};
use crate::actors::channels::core::EventReceived;
use crate::backoff::{Backoff, Doubling};
use crate::metrics::StageTimer;

const OFFSET_KEY: &str = "update_offset";
/// Waiting for Telegram to answer at all (`getMe`): 1 s doubling to 60 s.
const RETRIES: Doubling = Doubling::new(Duration::from_secs(1), Duration::from_secs(60));
/// A failed poll, or an update the channel could not store yet: 0.5 s doubling to 60 s (a
/// refused token waits the whole 60 s at once).
const POLL_RETRIES: Doubling = Doubling::new(Duration::from_millis(500), Duration::from_secs(60));
/// How much longer than its own timeout a poll may take before the watchdog gives up on
/// it: a third of the timeout, at least 2 s (10 s for the default 30 s poll).
fn watchdog_grace(poll_timeout: Duration) -> Duration {
    (poll_timeout / 3).max(Duration::from_secs(2))
}

/// `getMe` (the bot's @username, for `/cmd@username`) and the command menu, retried
/// until Telegram answers: hearth is not ready on Telegram before.
pub(super) async fn introduce_bot(adapter: &TelegramAdapter) {
    let mut failures = Backoff::new(RETRIES);
    let me = loop {
        match adapter.bot.get_me().await {
            Ok(me) => break me,
            Err(error) => {
                let delay = failures.failed();
                let detail = format!("cannot reach the bot api: {error}");
                adapter.readiness.set(TELEGRAM_CHANNEL, false, &detail);
                tracing::warn!(%error, retry_s = delay.as_secs(), "telegram getMe failed");
                tokio::time::sleep(delay).await;
            }
        }
    };
    let username = me.username().to_string();
    tracing::info!(bot = %username, "telegram bot introduced");
    let _ = adapter.username.set(username);
    let mut commands: Vec<BotCommand> = adapter
        .settings
        .commands
        .commands
        .iter()
        .filter(|(command, _)| menu_command_is_valid(command))
        .map(|(command, description)| BotCommand::new(command, menu_description(description)))
        .collect();
    if adapter.lists_reminders {
        commands.push(BotCommand::new(
            "reminders",
            "Your reminders, to cancel one",
        ));
    }
    commands.push(BotCommand::new(
        "cancel",
        "Cancel what waits for your answer",
    ));
    commands.push(BotCommand::new("help", "What I can do"));
    if let Err(error) = adapter.bot.set_my_commands(commands).await {
        tracing::warn!(%error, "telegram command menu not set");
    }
}

/// Telegram's rule for menu commands: 1–32 of a–z, 0–9 and `_`.
fn menu_command_is_valid(command: &str) -> bool {
    let valid = (1..=32).contains(&command.len())
        && command
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !valid {
        tracing::warn!(
            command,
            "slash command left out of telegram's menu: telegram allows only 1-32 of a-z, 0-9 and _"
        );
    }
    valid
}

/// Telegram wants 1–256 characters.
fn menu_description(description: &str) -> String {
    let description = description.trim();
    if description.is_empty() {
        return "A specialised assistant".to_string();
    }
    description.chars().take(256).collect()
}

/// The channel that takes the updates.
type Channel = Recipient<EventReceived<Update>>;

/// Poll until the channel stops.
pub(super) async fn poll_updates(adapter: Arc<TelegramAdapter>, channel: Channel) {
    // Telegram refuses getUpdates while a webhook is set (a previous run in webhook mode).
    if let Err(error) = adapter.bot.delete_webhook().await {
        tracing::warn!(%error, "telegram webhook not removed; polling may be refused");
    }
    let mut offset = match adapter.state.get_state(TELEGRAM_CHANNEL, OFFSET_KEY).await {
        Ok(stored) => stored
            .and_then(|value| value.parse::<i64>().ok())
            .unwrap_or(0),
        Err(error) => {
            tracing::error!(%error, "stored telegram offset unreadable; starting from telegram's");
            0
        }
    };
    let timeout = adapter.settings.poll_timeout;
    let watchdog = timeout + watchdog_grace(timeout);
    let mut failures = Backoff::new(POLL_RETRIES);
    loop {
        let request = adapter
            .bot
            .get_updates()
            .offset(i32::try_from(offset).unwrap_or(i32::MAX))
            .timeout(u32::try_from(timeout.as_secs()).unwrap_or(30))
            .allowed_updates([AllowedUpdate::Message, AllowedUpdate::CallbackQuery]);
        let updates = match tokio::time::timeout(watchdog, request).await {
            Ok(Ok(updates)) => updates,
            Ok(Err(error)) => {
                let wait = if is_transient(&error) {
                    wait_after(&error, &mut failures)
                } else {
                    // A refused token or a conflict does not heal by itself quickly.
                    failures.failed();
                    POLL_RETRIES.max
                };
                adapter.metrics.error("telegram_poll");
                let detail = format!(
                    "getUpdates failed: {error}; trying again in {}s",
                    wait.as_secs()
                );
                // Flood control is Telegram being careful, not hearth being cut off.
                let ready = matches!(error, teloxide::RequestError::RetryAfter(_));
                adapter.readiness.set(TELEGRAM_CHANNEL, ready, &detail);
                tracing::warn!(%error, wait_s = wait.as_secs(), "telegram poll failed");
                tokio::time::sleep(wait).await;
                continue;
            }
            Err(_) => {
                adapter
                    .metrics
                    .increment("hearth_telegram_poll_restarts_total", &[]);
                tracing::warn!(
                    waited_s = watchdog.as_secs(),
                    "telegram poll stalled; starting a new one"
                );
                adapter.readiness.set(
                    TELEGRAM_CHANNEL,
                    false,
                    "the last poll stalled; polling again",
                );
                continue;
            }
        };
        failures.reset();
        adapter.readiness.set(TELEGRAM_CHANNEL, true, "polling");
        let Some(next) = updates
            .iter()
            .map(|update| i64::from(update.id.0) + 1)
            .max()
        else {
            continue;
        };
        let handed = StageTimer::start("telegram_hand_over");
        if !hand_over_batch(&channel, updates).await {
            return;
        }
        drop(handed);
        offset = offset.max(next);
        let _stored = StageTimer::start("telegram_offset_write");
        if let Err(error) = adapter
            .state
            .put_state(TELEGRAM_CHANNEL, OFFSET_KEY, &offset.to_string())
            .await
        {
            // Telegram still moves on; a restart before the next write sees the batch
            // again, and the inbox recognises each message already accepted.
            tracing::warn!(%error, offset, "telegram offset not stored");
        }
    }
}

/// Give a whole `getUpdates` batch to the channel: the chats of the batch at once, each
/// chat's updates in their order. `false` once the channel has stopped.
///
/// Handing updates over one by one, each followed by its own offset write, made a batch
/// cost the sum of its updates' storage round trips: on a busy machine ~50 ms each, so a
/// poll answered with 19 waiting updates took a second before the next poll, and a
/// reply arriving meanwhile waited for it. Now the batch costs about one round trip
/// (the writer commits the chats' acceptances together) and one offset write.
async fn hand_over_batch(channel: &Channel, updates: Vec<Update>) -> bool {
    let chats = updates_by_chat(updates);
    let handed = futures::future::join_all(chats.into_iter().map(|updates| async move {
        for update in updates {
            if !hand_over(channel, update).await {
                return false;
            }
        }
        true
    }))
    .await;
    handed.into_iter().all(|handed| handed)
}

/// The batch split by chat, in order within each chat (a message and the press after it
/// must be handled in that order); an update without a chat is alone.
fn updates_by_chat(updates: Vec<teloxide::types::Update>) -> Vec<Vec<teloxide::types::Update>> {
    let mut chats: Vec<(Option<i64>, Vec<teloxide::types::Update>)> = Vec::new();
    for update in updates {
        let chat = update.chat().map(|chat| chat.id.0);
        match chats
            .iter_mut()
            .find(|(known, _)| chat.is_some() && *known == chat)
        {
            Some((_, updates)) => updates.push(update),
            None => chats.push((chat, vec![update])),
        }
    }
    chats.into_iter().map(|(_, updates)| updates).collect()
}

/// Give `update` to the channel until it is handled for good; `false` once the channel
/// has stopped.
async fn hand_over(channel: &Channel, update: Update) -> bool {
    let mut failures = Backoff::new(POLL_RETRIES);
    loop {
        match channel.send(EventReceived(update.clone())).await {
            Ok(Ok(())) => return true,
            Ok(Err(_)) => {
                // Storage trouble: the same update again in a moment, nothing skipped.
                tokio::time::sleep(failures.failed()).await;
            }
            Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_commands_telegram_accepts_go_in_the_menu() {
        assert!(menu_command_is_valid("shopping_list2"));
        assert!(!menu_command_is_valid("Shopping"));
        assert!(!menu_command_is_valid("a-b"));
        assert!(!menu_command_is_valid(&"x".repeat(33)));
        assert_eq!(menu_description("  "), "A specialised assistant");
        assert_eq!(menu_description(&"d".repeat(300)).len(), 256);
    }

    fn text_update(update_id: u32, chat: i64, message_id: i32) -> teloxide::types::Update {
        let update = serde_json::json!({
            "update_id": update_id,
            "message": {
                "message_id": message_id,
                "date": 1_700_000_000,
                "chat": { "id": chat, "type": "private", "first_name": "A" },
                "from": { "id": chat, "is_bot": false, "first_name": "A" },
                "text": format!("m{message_id}"),
            }
        });
        // From text, as it comes off the wire: teloxide reads an update from a borrowed one.
        serde_json::from_str(&update.to_string()).expect("a telegram update")
    }

    #[test]
    fn a_batch_splits_by_chat_and_keeps_each_chats_order() {
        let batch = vec![
            text_update(1, 10, 1),
            text_update(2, 20, 1),
            text_update(3, 10, 2),
            text_update(4, 30, 1),
            text_update(5, 20, 2),
            text_update(6, 10, 3),
        ];
        let ids: Vec<Vec<u32>> = updates_by_chat(batch)
            .iter()
            .map(|chat| chat.iter().map(|update| update.id.0).collect())
            .collect();
        assert_eq!(ids, vec![vec![1, 3, 6], vec![2, 5], vec![4]]);
    }
}
