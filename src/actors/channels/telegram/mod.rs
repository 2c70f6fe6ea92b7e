//! `TelegramChannel`: family members talk to hearth in Telegram chats (teloxide).
//!
//! - Updates arrive by long polling (`polling.rs`) or by webhook (`webhook.rs`); each is
//!   handed to this actor as `UpdateReceived`, which answers once the message is stored
//!   in the inbox, and only then is the update confirmed to Telegram (the stored offset),
//!   so a restart neither loses nor repeats one.
//! - Messages from family members (by Telegram user id) become `Inbound` messages
//!   (`inbound.rs`): text or caption, the replied-to message as context, photos and
//!   documents downloaded within a size limit. Strangers get no answer.
//! - Conversations are keyed by chat (and forum topic); what belongs to one person
//!   (confirmations, questions) is bound to chat and member, so in a group nobody
//!   answers somebody else's prompt.
//! - Replies (`outbound.rs`) are the model's markdown as Telegram HTML, split under the
//!   4096-character limit, threaded to the message they answer, resent as plain text if
//!   Telegram refuses the entities; one outbox per chat keeps them in order. "typing…"
//!   shows while a turn of the chat runs.
//! - Confirmations (`buttons.rs`) are messages with ✅/❌ buttons whose callback data is
//!   an opaque id; only the member asked can answer, once; expiry removes the buttons.

mod buttons;
mod inbound;
mod messages;
mod outbound;
mod polling;
mod webhook;

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{Actor, ActorContext, Addr, AsyncContext, Context, Handler, ResponseActFuture};
use teloxide::Bot;
use teloxide::payloads::SendChatActionSetters;
use teloxide::requests::Requester;
use teloxide::types::{ChatAction, UpdateKind};

pub use messages::{StopTelegram, UpdateReceived};
pub use webhook::TelegramWebhook;

use super::core::typing::TypingTurns;
use super::core::{ChannelDeps, Deliveries, resume_deliveries, send};
use super::{ChannelError, DeliverReply};
use crate::actors::request_queue::RequestQueue;
use crate::config::TelegramMode;
use crate::family::Family;
use crate::metrics::Metrics;
use crate::ports::{ChannelState, Inbox};
use crate::readiness::Readiness;
use outbound::{ChatTarget, TelegramPlatform};

/// The channel name in `Inbound::channel` and readiness.
pub const TELEGRAM_CHANNEL: &str = "telegram";

/// How often "typing…" is sent again while a turn runs (Telegram shows it for 5 s).
const TYPING_EVERY: Duration = Duration::from_secs(4);

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
    /// Each profile's slash commands (without the slash) and what the profile is for,
    /// for `/help` and Telegram's command menu.
    pub commands: Vec<(String, String)>,
    /// What the default profile is for, for `/help`.
    pub default_description: String,
}

impl std::fmt::Debug for TelegramSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelegramSettings")
            .field("api_url", &self.api_url)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

/// What every task of the channel shares.
pub(super) struct Shared {
    bot: Bot,
    settings: TelegramSettings,
    family: Arc<Family>,
    queue: Addr<RequestQueue>,
    /// Read only: whether a redelivered event was accepted before.
    inbox: Arc<dyn Inbox>,
    state: Arc<dyn ChannelState>,
    readiness: Arc<Readiness>,
    metrics: Arc<Metrics>,
    /// The bot's @username, learned from `getMe`: `/cmd@username` is for us.
    username: OnceLock<String>,
}

pub struct TelegramChannel {
    shared: Arc<Shared>,
    /// The outbox's messages for Telegram, in order per conversation; conversations do not
    /// wait on each other.
    deliveries: Deliveries<TelegramPlatform>,
    /// Turns running per conversation, and the timer sending "typing…" for them.
    typing: TypingTurns<ChatTarget>,
}

#[derive(Debug, thiserror::Error)]
pub enum TelegramStartError {
    #[error("channels.telegram.api_url: {url:?} is not a valid url: {reason}")]
    BadApiUrl { url: String, reason: String },
    #[error("cannot build the http client for telegram: {0}")]
    HttpClient(String),
}

impl TelegramChannel {
    pub fn new(settings: TelegramSettings, deps: ChannelDeps) -> Result<Self, TelegramStartError> {
        let ChannelDeps {
            family,
            queue,
            inbox,
            state,
            outbox,
            readiness,
            metrics,
            delivery,
        } = deps;
        let api_url = reqwest::Url::parse(&settings.api_url).map_err(|error| {
            TelegramStartError::BadApiUrl {
                url: settings.api_url.clone(),
                reason: error.to_string(),
            }
        })?;
        // A long poll holds its request open for `poll_timeout`: the client must wait longer.
        let client = teloxide::net::default_reqwest_settings()
            .timeout(settings.poll_timeout + Duration::from_secs(15))
            .build()
            .map_err(|error| TelegramStartError::HttpClient(error.to_string()))?;
        let bot = Bot::with_client(settings.token.clone(), client).set_api_url(api_url);
        readiness.set(TELEGRAM_CHANNEL, false, "connecting to the bot api");
        let shared = Arc::new(Shared {
            bot,
            settings,
            family,
            queue,
            inbox,
            state,
            readiness,
            metrics: metrics.clone(),
            username: OnceLock::new(),
        });
        let platform = TelegramPlatform {
            shared: shared.clone(),
        };
        Ok(TelegramChannel {
            shared,
            deliveries: Deliveries::new(platform, outbox, metrics, delivery),
            typing: TypingTurns::default(),
        })
    }

    /// A turn of `target`'s conversation started (or goes on): show "typing…".
    fn typing_started(&mut self, target: ChatTarget, ctx: &mut Context<Self>) {
        let shared = self.shared.clone();
        self.typing.started(
            target,
            ctx,
            TYPING_EVERY,
            move || send_typing(shared.clone(), target),
            |channel: &mut Self| &mut channel.typing,
        );
    }

    /// A turn of `target` answered or stopped to wait for the member.
    fn typing_stopped(&mut self, target: ChatTarget, ctx: &mut Context<Self>) {
        self.typing.stopped(&target, ctx);
    }

    /// Carry out what handling an update asked for.
    fn follow_up(&mut self, actions: Vec<inbound::FollowUp>, ctx: &mut Context<Self>) {
        for action in actions {
            match action {
                inbound::FollowUp::TurnStarted(target) => self.typing_started(target, ctx),
                inbound::FollowUp::Send(message) => send(
                    self,
                    ctx,
                    |channel: &mut Self| &mut channel.deliveries,
                    message,
                ),
            }
        }
    }
}

fn send_typing(shared: Arc<Shared>, target: ChatTarget) {
    tokio::spawn(async move {
        let mut request = shared
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

impl Actor for TelegramChannel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        let shared = self.shared.clone();
        let channel = ctx.address();
        let setup = async move {
            polling::introduce_bot(&shared).await;
            match shared.settings.mode {
                TelegramMode::Polling => polling::poll_updates(shared, channel).await,
                TelegramMode::Webhook => webhook::register(&shared).await,
            }
        };
        ctx.spawn(setup.into_actor(self));
        resume_deliveries(self, ctx, |channel: &mut Self| &mut channel.deliveries);
    }
}

impl Handler<UpdateReceived> for TelegramChannel {
    type Result = ResponseActFuture<Self, Result<(), ChannelError>>;

    fn handle(&mut self, message: UpdateReceived, _ctx: &mut Self::Context) -> Self::Result {
        let shared = self.shared.clone();
        let update_id = message.update.id.0;
        self.shared.metrics.increment(
            "hearth_telegram_updates_total",
            &[("kind", update_kind(&message.update.kind))],
        );
        let work = async move {
            match message.update.kind {
                UpdateKind::Message(message) => inbound::handle_message(&shared, message).await,
                UpdateKind::CallbackQuery(query) => buttons::handle_press(&shared, query).await,
                // Only messages and button presses are asked for (`allowed_updates`).
                _ => Ok(Vec::new()),
            }
        };
        Box::pin(work.into_actor(self).map(move |handled, act, ctx| {
            let actions = handled.inspect_err(|error| {
                tracing::warn!(update_id, %error, "telegram update not handled; it will come again");
            })?;
            act.follow_up(actions, ctx);
            Ok(())
        }))
    }
}

impl Handler<StopTelegram> for TelegramChannel {
    type Result = ();

    fn handle(&mut self, _message: StopTelegram, ctx: &mut Self::Context) {
        // The poll loop and the typing timers live in this context and end with it;
        // the outboxes end once their senders are dropped with the actor.
        self.shared
            .readiness
            .set(TELEGRAM_CHANNEL, false, "stopped");
        ctx.stop();
    }
}

fn update_kind(kind: &UpdateKind) -> &'static str {
    match kind {
        UpdateKind::Message(_) => "message",
        UpdateKind::CallbackQuery(_) => "button",
        _ => "other",
    }
}

impl Handler<DeliverReply> for TelegramChannel {
    type Result = ();

    fn handle(&mut self, reply: DeliverReply, ctx: &mut Self::Context) {
        if let Some(target) = ChatTarget::parse(&reply.conversation_id)
            && reply.kind.ends_a_turn()
        {
            self.typing_stopped(target, ctx);
        }
        let message = reply.outgoing(TELEGRAM_CHANNEL);
        self.deliveries.deliver(reply.outbox_id, message);
    }
}
