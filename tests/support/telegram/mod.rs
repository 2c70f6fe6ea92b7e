//! A fake Telegram Bot API server on 127.0.0.1, faithful enough that the real teloxide client
//! (`Bot::new(token).set_api_url(url)`) and `hearth` subprocesses work against it unchanged.
//!
//! Like `llm_server`, it runs on its own thread with its own actix system and uses nothing from
//! the test crate. Tests script it from the outside: they push inbound updates (built as real
//! update JSON), inspect every call the bot made and the chats as they stand, and inject
//! failures (`fail_next`), a hanging long poll (`stall_get_updates`) or a call held before
//! it is done or before it is answered (`hold_next`, `hold_answer_of_next`). Pushing lives in
//! `inbound.rs`, the Bot API methods in `http.rs` (routing, getUpdates), `methods.rs` and
//! `media.rs`, Telegram's HTML parser in `html.rs`.
//!
//! What it models: getUpdates' long poll and offset confirmation (and 409 when a newer poll
//! supersedes a waiting one, or a webhook is set), per-chat message ids, replies and forum
//! topics, Telegram's HTML parser (`html.rs`) and length limits, inline keyboards and their
//! edits, callback queries, files (getFile + download), commands. Known gaps: Markdown parse
//! modes are not parsed, URLs are never fetched, inline-mode messages are unsupported, and a
//! forum topic exists as soon as it is named.

// Each test uses a different part of this API.
#![allow(dead_code)]

mod html;
mod http;
mod inbound;
mod media;
mod methods;
mod state;
mod types;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::web;

use super::background_server::serve_in_background;
use serde_json::{Value, json};

use state::{HeldFate, Hold, Shared};
// Part of the API even where no test names them.
#[allow(unused_imports)]
pub use {
    inbound::InboundMessage,
    types::{Call, ChatType, Pushed, StoredMessage, TgChat, TgError, TgUser, UploadedFile},
};

/// The bot's username unless `start_as` names another.
pub const BOT_USERNAME: &str = "hearth_test_bot";

/// The running fake; stopped when dropped.
pub struct TelegramServer {
    shared: Arc<Shared>,
    port: u16,
    handle: ServerHandle,
    thread: Option<JoinHandle<()>>,
}

impl TelegramServer {
    /// Serves the bot with this token (`<bot id>:<secret>`; getMe reports that id) as
    /// `@hearth_test_bot`, from a background thread; returns once listening.
    pub fn start(token: &str) -> TelegramServer {
        TelegramServer::start_as(token, BOT_USERNAME)
    }

    pub fn start_as(token: &str, bot_username: &str) -> TelegramServer {
        let shared = Arc::new(Shared::new(token, bot_username));
        let data = web::Data::from(Arc::clone(&shared));
        // Long polls are async waits, so one worker serves a bot and its tests.
        let server = serve_in_background("fake-telegram", 1, move |routes| {
            routes
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(64 * 1024 * 1024))
                .route("/bot{token}/{method}", web::route().to(http::api))
                .route("/file/bot{token}/{path:.*}", web::get().to(http::file))
                .default_service(web::to(http::not_found));
        });
        TelegramServer {
            shared,
            port: server.port,
            handle: server.handle,
            thread: Some(server.thread),
        }
    }

    /// The base URL for teloxide's `set_api_url` and hearth's `api_url`.
    pub fn api_url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn token(&self) -> String {
        self.shared.token.clone()
    }

    pub fn bot_id(&self) -> i64 {
        self.shared.state().bot.id
    }

    pub fn bot_username(&self) -> String {
        self.shared.state().bot.username.clone()
    }

    // ---- inspection ------------------------------------------------------------------------

    /// Every call the bot made, in arrival order (failed and unknown ones included).
    pub fn calls(&self) -> Vec<Call> {
        self.shared.state().calls.clone()
    }

    /// The calls of one method (case-insensitive, as Telegram's method names are).
    pub fn calls_of(&self, method: &str) -> Vec<Call> {
        let state = self.shared.state();
        state
            .calls
            .iter()
            .filter(|call| call.method.eq_ignore_ascii_case(method))
            .cloned()
            .collect()
    }

    /// Wait until no call has come for half a second (at most 10 s): what a killed bot had
    /// sent just before it died may still be read and handled here after it is gone, and a
    /// test that asks what Telegram took must ask after that.
    pub async fn settle(&self) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut seen = self.shared.state().calls.len();
        while std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = self.shared.state().calls.len();
            if now == seen {
                return;
            }
            seen = now;
        }
    }

    /// The first call of `method`, made already or within `timeout`, that satisfies
    /// `predicate`. The predicate is asked again when the call's response arrives.
    pub async fn wait_for_call(
        &self,
        method: &str,
        predicate: impl Fn(&Call) -> bool,
        timeout: Duration,
    ) -> Option<Call> {
        self.wait_until(timeout, || {
            self.calls_of(method)
                .into_iter()
                .find(|call| predicate(call))
        })
        .await
    }

    /// The chat as it stands: every message (the bot's and the users'), edits applied,
    /// deleted ones gone, forum topic roots included.
    pub fn messages_in(&self, chat_id: i64) -> Vec<StoredMessage> {
        let state = self.shared.state();
        let Some(chat) = state.chats.get(&chat_id) else {
            return Vec::new();
        };
        chat.messages.values().map(|msg| chat.stored(msg)).collect()
    }

    /// What the bot has in the chat now.
    pub fn bot_messages_in(&self, chat_id: i64) -> Vec<StoredMessage> {
        let mut messages = self.messages_in(chat_id);
        messages.retain(|msg| msg.from_bot);
        messages
    }

    /// The texts the bot has in the chat now, in order.
    pub fn bot_texts_in(&self, chat_id: i64) -> Vec<String> {
        self.bot_messages_in(chat_id)
            .into_iter()
            .filter_map(|message| message.text)
            .collect()
    }

    pub fn message(&self, chat_id: i64, message_id: i64) -> Option<StoredMessage> {
        let state = self.shared.state();
        let chat = state.chats.get(&chat_id)?;
        chat.messages.get(&message_id).map(|msg| chat.stored(msg))
    }

    /// The first message of the chat, there already or within `timeout`, that satisfies
    /// `predicate` (edits count: the predicate is asked again after each).
    pub async fn wait_for_message(
        &self,
        chat_id: i64,
        predicate: impl Fn(&StoredMessage) -> bool,
        timeout: Duration,
    ) -> Option<StoredMessage> {
        self.wait_until(timeout, || {
            self.messages_in(chat_id)
                .into_iter()
                .find(|msg| predicate(msg))
        })
        .await
    }

    async fn wait_until<T>(&self, timeout: Duration, look: impl Fn() -> Option<T>) -> Option<T> {
        // Subscribed before looking, so a change between the look and the wait is not missed.
        let mut changes = self.shared.changes.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(found) = look() {
                return Some(found);
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                _ => return None,
            }
        }
    }

    /// The command list set for the default scope and no language, as (command, description).
    pub fn my_commands(&self) -> Vec<(String, String)> {
        let key = methods::commands_key(&json!({}));
        let state = self.shared.state();
        let commands = state.commands.get(&key).and_then(Value::as_array);
        commands
            .into_iter()
            .flatten()
            .map(|command| {
                let field = |key: &str| command[key].as_str().unwrap_or_default().to_string();
                (field("command"), field("description"))
            })
            .collect()
    }

    /// The bytes behind a file_id: a pushed photo or document, or an upload by the bot.
    pub fn file_bytes(&self, file_id: &str) -> Option<Vec<u8>> {
        let state = self.shared.state();
        state.files.get(file_id).map(|file| file.bytes.clone())
    }

    pub fn callback_answered(&self, callback_query_id: &str) -> bool {
        let state = self.shared.state();
        state.callback_queries.get(callback_query_id) == Some(&true)
    }

    pub fn webhook_url(&self) -> Option<String> {
        let state = self.shared.state();
        state.webhook.as_ref().map(|hook| hook.url.clone())
    }

    // ---- updates and polling ---------------------------------------------------------------

    /// getUpdates requests received, stalled and failed ones included.
    pub fn get_updates_count(&self) -> usize {
        self.shared.state().get_updates_count
    }

    /// Long polls cut short by a newer one while they waited: more than one poller at once.
    pub fn superseded_polls(&self) -> usize {
        self.shared.state().superseded_polls
    }

    /// Whether the bot confirmed the update: it called getUpdates with an offset beyond it.
    pub fn is_confirmed(&self, update_id: i64) -> bool {
        update_id < self.shared.state().confirmed_below
    }

    /// Ids of the updates still queued (delivered or not, but unconfirmed).
    pub fn pending_updates(&self) -> Vec<i64> {
        let state = self.shared.state();
        state.updates.iter().map(|(id, _)| *id).collect()
    }

    // ---- fault injection -------------------------------------------------------------------

    /// The next `n` calls of `method` fail with `error` (before anything else is checked;
    /// a failed getUpdates confirms nothing).
    pub fn fail_next(&self, method: &str, n: usize, error: TgError) {
        let mut state = self.shared.state();
        let queue = state.faults.entry(method.to_ascii_lowercase()).or_default();
        queue.extend(std::iter::repeat_n(error, n));
    }

    /// Telegram delivers update `update_id` again, as after a bot lost its offset: the same
    /// message under a new update id. Returns the new id.
    pub fn redeliver(&self, update_id: i64) -> i64 {
        let id = {
            let mut state = self.shared.state();
            let update = state
                .queued
                .get(&update_id)
                .cloned()
                .unwrap_or_else(|| panic!("fake telegram: no update {update_id}"));
            let id = state.next_update_id;
            state.next_update_id += 1;
            let mut again = update;
            again["update_id"] = id.into();
            state.queued.insert(id, again.clone());
            state.updates.push_back((id, again));
            id
        };
        self.updates_pushed();
        id
    }

    /// Every call about chat `chat_id` (its `chat_id` parameter) fails with `error`, as if
    /// Telegram could not take anything for that chat, until `clear_faults`.
    pub fn fail_in_chat(&self, chat_id: i64, error: TgError) {
        self.shared.state().chat_faults.insert(chat_id, error);
    }

    /// The next call of `method` is received (and recorded) but neither done nor answered
    /// until the returned `HeldCall` is released or dropped (or lost: never done).
    pub fn hold_next(&self, method: &str) -> HeldCall {
        self.hold(method, false)
    }

    /// The next call of `method` is done at once (a message is in its chat) but answered
    /// only once the returned `HeldCall` is released or dropped: as if Telegram took it
    /// and the answer was still on its way back.
    pub fn hold_answer_of_next(&self, method: &str) -> HeldCall {
        self.hold(method, true)
    }

    fn hold(&self, method: &str, done_first: bool) -> HeldCall {
        let (fate, waiting) = tokio::sync::watch::channel(HeldFate::Waiting);
        let mut state = self.shared.state();
        state
            .holds
            .entry(method.to_ascii_lowercase())
            .or_default()
            .push_back(Hold {
                done_first,
                fate: waiting,
            });
        HeldCall { fate }
    }

    /// No call fails any more (faults queued by `fail_next` and `fail_in_chat` are dropped).
    pub fn clear_faults(&self) {
        let mut state = self.shared.state();
        state.faults.clear();
        state.chat_faults.clear();
    }

    /// The next getUpdates is held for `duration` without an answer, as if lost on the way;
    /// afterwards it runs normally (or answers 409 if a newer poll came meanwhile).
    pub fn stall_get_updates(&self, duration: Duration) {
        self.shared.state().stalls.push_back(duration);
    }

    /// Strict (the default): in HTML, an `&` that starts no entity is refused. Lenient: it is
    /// shown literally, exactly as Telegram does.
    pub fn set_strict_ampersand(&self, strict: bool) {
        self.shared.state().strict_ampersand = strict;
    }
}

/// A call the fake holds unanswered (`TelegramServer::hold_next`,
/// `TelegramServer::hold_answer_of_next`).
pub struct HeldCall {
    fate: tokio::sync::watch::Sender<HeldFate>,
}

impl HeldCall {
    /// Answer the call now (doing it first, unless it was done already).
    pub fn release(&self) {
        self.settle(HeldFate::Released);
    }

    /// Answer the call with a 502 now, and never do it if it was not done already: the
    /// request was lost with its connection (its sender killed) before Telegram took it.
    pub fn lose(&self) {
        self.settle(HeldFate::Lost);
    }

    /// Only the first word counts.
    fn settle(&self, fate: HeldFate) {
        self.fate.send_if_modified(|now| {
            let first = *now == HeldFate::Waiting;
            if first {
                *now = fate;
            }
            first
        });
    }
}

impl Drop for HeldCall {
    fn drop(&mut self) {
        self.release();
    }
}

impl Drop for TelegramServer {
    fn drop(&mut self) {
        // Release long polls and stalls first so the worker can stop without waiting on them.
        self.shared.stopped.send_replace(true);
        // The stop command is sent eagerly; the returned future only reports completion.
        drop(self.handle.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
