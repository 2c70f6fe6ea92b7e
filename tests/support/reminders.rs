//! The reminders profile as Telegram tests add it, a reminder scripted for the model, and
//! what a fired reminder looks like in a chat.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use std::time::Duration;

use hearth::config::ServiceProfileConfig;

use super::llm_server::{ScriptedLlmServer, Step};
use super::telegram::{StoredMessage, TelegramServer};
use super::test_config::{ProfileParts, names, profile};

/// How long a test waits for a reminder to fire.
pub const WAIT: Duration = Duration::from_secs(15);

/// Every reminder tool, as `enable_local_tools` lists them.
pub const REMIND_TOOLS: &str =
    "schedule_reminder, list_reminders, cancel_reminder, snooze_reminder, schedule_task";

/// A profile with every reminder tool, on `/remind`.
pub fn remind_profile() -> ServiceProfileConfig {
    profile("remind")
        .description("Reminders and scheduled tasks.")
        .command("/remind")
        .local_tools(&names(REMIND_TOOLS))
}

/// The model asks for a reminder with these arguments, then says `reply`.
pub fn script_reminder(llm: &ScriptedLlmServer, arguments: serde_json::Value, reply: &str) {
    llm.push_many([
        Step::ToolCalls(vec![("schedule_reminder".into(), arguments)]),
        Step::Reply(reply.into()),
    ]);
}

/// The reminder saying `text` shown in `chat` with its buttons, once there.
pub async fn fired_in(telegram: &TelegramServer, chat: i64, text: &str) -> StoredMessage {
    telegram
        .wait_for_message(
            chat,
            |message| {
                message.from_bot
                    && !message.button_data().is_empty()
                    && message.text.as_deref().unwrap_or("").contains(text)
            },
            WAIT,
        )
        .await
        .unwrap_or_else(|| panic!("no reminder {text:?} in chat {chat}"))
}

/// How many of the bot's messages in `chat` say `text`.
pub fn times_said(telegram: &TelegramServer, chat: i64, text: &str) -> usize {
    telegram
        .bot_messages_in(chat)
        .iter()
        .filter(|message| message.text.as_deref().unwrap_or("").contains(text))
        .count()
}
