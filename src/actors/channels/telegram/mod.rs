//! Telegram (teloxide): the channel core's adapter for the Bot API. It only parses,
//! renders and sends; the channel actor, the inbound sequence and the outbox are the
//! core's (`ChannelActor<TelegramAdapter>`).
//!
//! - Updates arrive by long polling (`polling.rs`) or by webhook (`webhook.rs`); each is
//!   handed to the channel as `EventReceived`, which answers once it is handled for good,
//!   and only then is the update confirmed to Telegram (the stored offset), so a restart
//!   neither loses nor repeats one.
//! - `inbound.rs` reads an update: a message's sender (Telegram user id), chat (and forum
//!   topic), text or caption, the replied-to message as its quote, photos and documents
//!   downloaded within a size limit; a button press as an answer.
//! - Conversations are keyed by chat (and forum topic) (`chat.rs`); what belongs to one
//!   person (confirmations, questions) is bound to chat and member, so in a group nobody
//!   answers somebody else's prompt.
//! - Replies (`outbound.rs`) are the model's markdown as Telegram HTML, split under the
//!   4096-character limit, threaded to the message they answer, resent as plain text if
//!   Telegram refuses the entities. "typing…" shows while a turn of the chat runs.
//! - Confirmations (`buttons.rs`) are messages with ✅/❌ buttons whose callback data is
//!   an opaque id; a press is answered with a short notice (an alert when refused);
//!   closing removes the buttons.
//! - `/reminders` (`list_buttons.rs`) is the member's list with a "❌ Cancel #N" button
//!   for each entry; a press is answered with what happened, and the list is edited to
//!   show it, that button gone.
//! - `api.rs`: a Bot API call's failure as the core sees it, and retries of quick calls.
//! - `check.rs`: the token tried once with `getMe` (`hearth doctor`).

mod api;
mod buttons;
mod chat;
mod check;
pub(crate) mod inbound;
mod list_buttons;
mod outbound;
mod polling;
mod webhook;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix::Recipient;
use async_trait::async_trait;
use futures::future::BoxFuture;
use teloxide::Bot;
use teloxide::payloads::SendChatActionSetters;
use teloxide::requests::Requester;
use teloxide::types::{CallbackQuery, ChatAction, Message, Update};

pub use check::{TelegramCheckError, introduce_once};
pub(crate) use webhook::TelegramWebhook;

use super::ChannelError;
use super::core::{
    AnswerOutcome, ChannelActor, ChannelDeps, EventReceived, Incoming, PlatformAdapter,
    ProfileCommands,
};
use crate::config::{FamilyMember, TelegramMode};
use crate::family::Family;
use crate::ids::ConversationKey;
use crate::metrics::Metrics;
use crate::ports::{Attachment, ChannelState, PlatformUser, QuotedMessage};
use crate::readiness::Readiness;
use chat::ChatTarget;

/// The channel name in `Inbound::channel` and readiness.
pub const TELEGRAM_CHANNEL: &str = "telegram";

/// The Telegram channel: the channel core's actor over the Bot API.
pub(crate) type TelegramChannel = ChannelActor<TelegramAdapter>;

/// What the channel needs from config, with secrets resolved.
#[derive(Clone)]
pub struct TelegramSettings {
    pub token: String,
    pub api_url: String,
    pub mode: TelegramMode,
    pub poll_timeout: Duration,
    pub webhook_url: Option<String>,
    pub webhook_secret: Option<String>,
    pub max_attachment_bytes: u64,
    pub attachments_dir: PathBuf,
    /// For `/help` and Telegram's command menu.
    pub commands: ProfileCommands,
}

impl std::fmt::Debug for TelegramSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramSettings")
            .field("api_url", &self.api_url)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TelegramStartError {
    #[error("channels.telegram.api_url: {url:?} is not a valid url: {reason}")]
    BadApiUrl { url: String, reason: String },
    #[error("cannot build the http client for telegram: {0}")]
    HttpClient(String),
}

/// The Bot API as the channel core's platform.
pub(crate) struct TelegramAdapter {
    bot: Bot,
    settings: TelegramSettings,
    family: Arc<Family>,
    state: Arc<dyn ChannelState>,
    readiness: Arc<Readiness>,
    metrics: Arc<Metrics>,
    /// The bot's @username, learned from `getMe`: `/cmd@username` is for us.
    username: OnceLock<String>,
    /// What a fired reminder's Snooze button says it puts the reminder off by.
    snooze_minutes: u64,
    /// Whether `/reminders` is the channel's own (reminders reach it): in the menu.
    lists_reminders: bool,
}

impl TelegramAdapter {
    pub(crate) fn new(
        settings: TelegramSettings,
        deps: &ChannelDeps,
    ) -> Result<Self, TelegramStartError> {
        // A long poll holds its request open for `poll_timeout`: the client must wait longer.
        let bot = bot(
            &settings.api_url,
            &settings.token,
            settings.poll_timeout + Duration::from_secs(15),
        )?;
        deps.readiness
            .set(TELEGRAM_CHANNEL, false, "connecting to the bot api");
        Ok(TelegramAdapter {
            bot,
            settings,
            family: deps.family.clone(),
            state: deps.state.clone(),
            readiness: deps.readiness.clone(),
            metrics: deps.metrics.clone(),
            username: OnceLock::new(),
            snooze_minutes: deps
                .reminders
                .as_ref()
                .map_or(10, |reminders| reminders.snooze_minutes),
            lists_reminders: deps.reminders.is_some(),
        })
    }
}

/// The Bot API client for `token` at `api_url`, each request bounded by `timeout`.
fn bot(api_url: &str, token: &str, timeout: Duration) -> Result<Bot, TelegramStartError> {
    let url = reqwest::Url::parse(api_url).map_err(|error| TelegramStartError::BadApiUrl {
        url: api_url.to_owned(),
        reason: error.to_string(),
    })?;
    let client = teloxide::net::default_reqwest_settings()
        .timeout(timeout)
        .build()
        .map_err(|error| TelegramStartError::HttpClient(error.to_string()))?;
    Ok(Bot::with_client(token.to_owned(), client).set_api_url(url))
}

#[async_trait]
impl PlatformAdapter for TelegramAdapter {
    type Event = Update;
    type MessageSource = Message;
    type AnswerSource = CallbackQuery;

    /// Telegram shows "typing…" for 5 s.
    const TYPING_EVERY: Duration = Duration::from_secs(4);
    /// A sticker, a location, a video.
    const NOTHING_TO_READ: &'static str =
        "I can read text, photos, documents and voice notes; that message had none.";
    const ALTERNATE_PREFIX: Option<char> = None;
    /// Telegram lets a bot write only to those who wrote to it first.
    const PRIVATE_CHAT_HINT: &'static str =
        "open a private chat with me (tap my name, then Start) and say hello";

    fn member(&self, family: &Family, sender: &str) -> Option<FamilyMember> {
        family.by_telegram_id(sender.parse().ok()?)
    }

    fn platform_user(&self, sender: &str) -> Option<PlatformUser> {
        sender.parse().ok().map(PlatformUser::Telegram)
    }

    /// A private chat's id is its user's id.
    fn own_chat_of(&self, sender: &str, conversation: &ConversationKey) -> bool {
        conversation.conversation_id() == sender
    }

    fn bot_username(&self) -> Option<String> {
        self.username.get().cloned()
    }

    fn profile_commands(&self) -> &ProfileCommands {
        &self.settings.commands
    }

    async fn read(&self, update: Update) -> Result<Incoming<Message, CallbackQuery>, ChannelError> {
        Ok(inbound::read(self, update).await)
    }

    async fn quote(&self, message: &Message) -> Option<QuotedMessage> {
        message
            .reply_to_message()
            .map(|quoted| inbound::quote(self, quoted))
    }

    async fn attachments(&self, message: &Message, inbox_id: &str) -> Vec<Attachment> {
        inbound::attachments(self, inbox_id, message).await
    }

    fn message_handled(&self, _message: &Message) {}

    async fn answer_handled(&self, press: &CallbackQuery, outcome: AnswerOutcome) {
        buttons::acknowledge_press(self, press, outcome).await;
    }

    async fn tell_answerer(&self, press: &CallbackQuery, text: &str, refused: bool) -> bool {
        list_buttons::tell_presser(self, press, text, refused).await;
        true
    }

    fn typing_place(&self, conversation: &ConversationKey) -> Option<String> {
        ChatTarget::of_conversation(conversation).map(|target| target.conversation_id())
    }

    /// Telegram's notice ends by itself: nothing is sent to stop it.
    fn show_typing(self: &Arc<Self>, place: &str, typing: bool) {
        let Some(target) = ChatTarget::parse(place).filter(|_| typing) else {
            return;
        };
        let adapter = self.clone();
        tokio::spawn(async move {
            let mut request = adapter
                .bot
                .send_chat_action(teloxide::types::ChatId(target.chat_id), ChatAction::Typing);
            if let Some(thread) = target.thread() {
                request = request.message_thread_id(thread);
            }
            if let Err(error) = request.await {
                tracing::debug!(chat = target.chat_id, %error, "typing not shown");
            }
        });
    }

    fn receive(
        self: Arc<Self>,
        events: Recipient<EventReceived<Update>>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(async move {
            polling::introduce_bot(&self).await;
            match self.settings.mode {
                TelegramMode::Polling => polling::poll_updates(self, events).await,
                TelegramMode::Webhook => webhook::register(&self).await,
            }
        })
    }
}
