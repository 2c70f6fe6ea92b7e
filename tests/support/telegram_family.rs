//! The family most Telegram tests use: alice (1001) and bob (1002) on the fake Bot API
//! with the test token, hearth started on it in process (`start_on_telegram`) or its config
//! written typed for the real binary (`telegram_family`, `write_telegram_config`), and
//! waiting for what the bot says.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::Duration;

use hearth::config::ServiceProfileConfig;
use tempfile::TempDir;

use super::hearth_app::{Hearth, test_env};
use super::llm_server::ScriptedLlmServer;
use super::telegram::{StoredMessage, TelegramServer, TgUser};
use super::test_config::{ProfileParts, TestConfig, profile};

/// How long a test waits for the bot to say something.
const WAIT: Duration = Duration::from_secs(10);

pub const TOKEN: &str = "123456:TEST-token";

pub fn alice() -> TgUser {
    TgUser::new(1001, "Alice")
}

pub fn bob() -> TgUser {
    TgUser::new(1002, "Bob")
}

/// A profile whose `profile_update` needs the member's approval, on `/secure`.
pub fn secure_profile() -> ServiceProfileConfig {
    profile("secure")
        .description("Changes what hearth knows about you.")
        .command("/secure")
        .local_tools(&["profile_get", "profile_update"])
        .confirm(&["profile_update"])
}

/// hearth on Telegram (the fake at `telegram`), alice 1001 and bob 1002 in the family,
/// with `profiles`; in `folder` when given (a restart), else a new one.
pub async fn start_on_telegram(
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
    profiles: &[ServiceProfileConfig],
    folder: Option<TempDir>,
    overrides: &[(&str, &str)],
) -> Hearth {
    let folder = folder.unwrap_or_else(|| tempfile::tempdir().expect("temporary folder"));
    let path = write_telegram_config(folder.path(), llm, telegram, profiles);
    start_written(folder, &path, overrides).await
}

/// hearth in `folder` from the config at `path` (one `telegram_family` wrote), with the
/// Telegram token and `overrides`.
pub async fn start_written(
    folder: TempDir,
    path: &std::path::Path,
    overrides: &[(&str, &str)],
) -> Hearth {
    let mut env = vec![("TEST_TELEGRAM_TOKEN", TOKEN)];
    env.extend_from_slice(overrides);
    Hearth::start_from(folder, path, &env).await
}

/// The test config for `folder` with Telegram on `telegram` (token `TEST_TELEGRAM_TOKEN`),
/// alice (1001) and bob (1002) in the family.
pub fn telegram_family(
    folder: &std::path::Path,
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
) -> TestConfig {
    TestConfig::new(folder, &llm.base_url())
        .on_telegram("alice", 1001)
        .on_telegram("bob", 1002)
        .telegram(&telegram.api_url(), folder)
}

/// `telegram_family` with `profiles`, written in `folder`.
pub fn write_telegram_config(
    folder: &std::path::Path,
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
    profiles: &[ServiceProfileConfig],
) -> std::path::PathBuf {
    telegram_family(folder, llm, telegram)
        .profiles(profiles)
        .write(folder)
}

/// The bot's messages in `chat` whose text contains `needle`, waiting up to `WAIT` for one.
pub async fn bot_says(telegram: &TelegramServer, chat: i64, needle: &str) -> i64 {
    telegram
        .wait_for_message(
            chat,
            |message| message.from_bot && message.text.as_deref().unwrap_or("").contains(needle),
            WAIT,
        )
        .await
        .unwrap_or_else(|| {
            panic!(
                "the bot never said {needle:?} in chat {chat}; it said {:?}",
                telegram
                    .bot_messages_in(chat)
                    .iter()
                    .map(|message| message.text.clone())
                    .collect::<Vec<_>>()
            )
        })
        .message_id
}

/// The test environment with the Telegram token and `extra` overrides (the real binary's).
pub fn telegram_env(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut pairs = vec![("TEST_TELEGRAM_TOKEN", TOKEN)];
    pairs.extend_from_slice(extra);
    test_env(&pairs)
}

/// The confirmation message the bot shows in `chat`, once it is there.
pub async fn prompt_in(telegram: &TelegramServer, chat: i64) -> StoredMessage {
    telegram
        .wait_for_message(chat, |message| !message.button_data().is_empty(), WAIT)
        .await
        .expect("a confirmation with buttons")
}

/// Press button `index` (0 = ✅, 1 = ❌) of `prompt` as `who`; the text of the answer
/// to the press, and whether it is shown as an alert.
pub async fn press(
    telegram: &TelegramServer,
    who: &TgUser,
    prompt: &StoredMessage,
    index: usize,
) -> (String, bool) {
    let data = &prompt.button_data()[index];
    let pushed = telegram.push_callback(who, prompt.chat_id, prompt.message_id, data);
    let id = pushed.callback_query_id.unwrap();
    let call = telegram
        .wait_for_call(
            "answerCallbackQuery",
            |call| call.str("callback_query_id") == Some(id.as_str()),
            WAIT,
        )
        .await
        .expect("the press is answered");
    (
        call.str("text").unwrap_or_default().to_string(),
        call.params["show_alert"] == true,
    )
}

/// The invite code in `text` (`ABCD-EFGH`), if any.
pub fn code_in(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|word| word.len() == 9 && word.as_bytes()[4] == b'-')
        .map(str::to_string)
}

/// The code in the bot's last message in `chat` containing `needle`.
pub async fn code_said(telegram: &TelegramServer, chat: i64, needle: &str) -> String {
    bot_says(telegram, chat, needle).await;
    let text = telegram
        .bot_messages_in(chat)
        .into_iter()
        .rev()
        .find_map(|message| message.text.filter(|text| text.contains(needle)))
        .unwrap_or_default();
    code_in(&text).unwrap_or_else(|| panic!("no code in {text:?}"))
}
