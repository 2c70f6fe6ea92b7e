//! `MatrixChannel`: family members talk to hearth in Matrix rooms, encrypted or not
//! (matrix-sdk with its SQLite state and crypto store).
//!
//! - The session (`session.rs`): password or access-token login once, then the saved
//!   session restores the same device and its keys at every start; the store is
//!   encrypted with `store_passphrase_env`; a recovery key restores cross-signing.
//! - The sync loop (`sync.rs`) keeps its own sync position in `ChannelState` and moves
//!   it only after every event of a sync was handled for good, so a restart neither loses
//!   nor repeats a message; the first start skips the rooms' history. It backs off while
//!   the homeserver is away and readiness says so.
//! - Events reach this actor as `EventReceived`: messages of family members become
//!   `Inbound` messages (`inbound.rs`: text, replies as context, images and files,
//!   `/` and `!` commands, `/help`, `/cancel`); invites are accepted only from family
//!   members; a message that cannot be decrypted is answered with a request to verify
//!   this device, and counted.
//! - Replies (`outbound.rs`) are `m.notice` with the markdown as HTML and a plain body,
//!   threaded to the message they answer, one ordered outbox per room; typing shows while
//!   a turn runs; messages read get a read receipt.
//! - Confirmations (`confirmations.rs`) are prompts the bot seeds with ✅ and ❌
//!   reactions; the member asked answers by reacting or replying yes/no; the outcome is
//!   edited into the prompt (`m.replace`).

mod confirmations;
mod inbound;
mod messages;
mod outbound;
mod session;
mod sync;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{Actor, ActorContext, Addr, AsyncContext, Context, Handler, ResponseActFuture};
use matrix_sdk::Client;

pub use messages::{EventReceived, MatrixEvent, StopMatrix};
pub use session::MatrixStartError;

use super::outboxes::Outboxes;
use super::typing::TypingTurns;
use super::{ChannelError, DeliverReply, ReplyKind};
use crate::actors::request_queue::RequestQueue;
use crate::family::Family;
use crate::metrics::Metrics;
use crate::ports::ChannelState;
use crate::readiness::Readiness;
use outbound::{Conversation, Outgoing};

/// The channel name in `Inbound::channel` and readiness.
pub const MATRIX_CHANNEL: &str = "matrix";

/// Matrix typing notices last a few seconds: sent again while a turn runs.
const TYPING_EVERY: Duration = Duration::from_secs(3);

/// What the channel needs from config, with secrets resolved.
#[derive(Clone)]
pub struct MatrixSettings {
    pub homeserver_url: String,
    pub user_id: String,
    pub password: Option<String>,
    pub access_token: Option<String>,
    pub store_path: PathBuf,
    pub store_passphrase: String,
    pub recovery_key: Option<String>,
    pub device_name: String,
    pub max_attachment_bytes: u64,
    pub attachments_dir: PathBuf,
    /// Each profile's slash commands (without the slash) and what the profile is for.
    pub commands: Vec<(String, String)>,
    pub default_description: String,
}

impl std::fmt::Debug for MatrixSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MatrixSettings")
            .field("homeserver_url", &self.homeserver_url)
            .field("user_id", &self.user_id)
            .field("store_path", &self.store_path)
            .finish_non_exhaustive()
    }
}

/// What every task of the channel shares.
pub(super) struct Shared {
    client: Client,
    settings: MatrixSettings,
    family: Arc<Family>,
    queue: Addr<RequestQueue>,
    state: Arc<dyn ChannelState>,
    readiness: Arc<Readiness>,
    metrics: Arc<Metrics>,
}

pub struct MatrixChannel {
    shared: Arc<Shared>,
    outboxes: Outboxes<String, Outgoing>,
    typing: TypingTurns<String>,
}

impl MatrixChannel {
    /// Open the store (a wrong passphrase or an unreadable store stops start-up here);
    /// logging in and syncing happen once the actor runs, retried while the homeserver
    /// is away.
    pub async fn build(
        settings: MatrixSettings,
        family: Arc<Family>,
        queue: Addr<RequestQueue>,
        state: Arc<dyn ChannelState>,
        readiness: Arc<Readiness>,
        metrics: Arc<Metrics>,
    ) -> Result<Self, MatrixStartError> {
        let client = session::build_client(&settings).await?;
        readiness.set(MATRIX_CHANNEL, false, "connecting to the homeserver");
        Ok(MatrixChannel {
            shared: Arc::new(Shared {
                client,
                settings,
                family,
                queue,
                state,
                readiness,
                metrics,
            }),
            outboxes: Outboxes::default(),
            typing: TypingTurns::default(),
        })
    }

    fn enqueue(&mut self, job: Outgoing) {
        let shared = &self.shared;
        self.outboxes.send(job.room_key(), job, |jobs| {
            outbound::run_outbox(shared.clone(), jobs)
        });
    }

    fn typing_started(&mut self, conversation: Conversation, ctx: &mut Context<Self>) {
        let shared = self.shared.clone();
        let key = conversation.room_id.to_string();
        self.typing.started(
            key,
            ctx,
            TYPING_EVERY,
            move || outbound::send_typing(shared.clone(), conversation.clone(), true),
            |channel: &mut Self| &mut channel.typing,
        );
    }

    fn typing_stopped(&mut self, conversation: &Conversation, ctx: &mut Context<Self>) {
        if self.typing.stopped(&conversation.room_id.to_string(), ctx) {
            outbound::send_typing(self.shared.clone(), conversation.clone(), false);
        }
    }

    fn follow_up(&mut self, actions: Vec<inbound::FollowUp>, ctx: &mut Context<Self>) {
        for action in actions {
            match action {
                inbound::FollowUp::TurnStarted(conversation) => {
                    self.typing_started(conversation, ctx)
                }
                inbound::FollowUp::Send(job) => self.enqueue(job),
            }
        }
    }
}

impl Actor for MatrixChannel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        let shared = self.shared.clone();
        let channel = ctx.address();
        ctx.spawn(sync::run(shared, channel).into_actor(self));
    }
}

impl Handler<EventReceived> for MatrixChannel {
    type Result = ResponseActFuture<Self, Result<(), ChannelError>>;

    fn handle(&mut self, message: EventReceived, _ctx: &mut Self::Context) -> Self::Result {
        let shared = self.shared.clone();
        let work = async move {
            match message.0 {
                MatrixEvent::Message { room, event } => {
                    inbound::handle_message(&shared, room, *event).await
                }
                MatrixEvent::Reaction { room, event } => {
                    confirmations::handle_reaction(&shared, room, *event).await
                }
                MatrixEvent::Invite { room, sender } => {
                    inbound::handle_invite(&shared, room, sender).await;
                    Ok(Vec::new())
                }
                MatrixEvent::Undecryptable { room, event } => {
                    Ok(inbound::handle_undecryptable(&shared, room, *event).await)
                }
            }
        };
        Box::pin(work.into_actor(self).map(|handled, act, ctx| {
            let actions = handled.inspect_err(|error| {
                tracing::warn!(%error, "matrix event not handled; it will come again");
            })?;
            act.follow_up(actions, ctx);
            Ok(())
        }))
    }
}

impl Handler<DeliverReply> for MatrixChannel {
    type Result = ();

    fn handle(&mut self, reply: DeliverReply, ctx: &mut Self::Context) {
        let Some(conversation) = Conversation::parse(&reply.conversation_id) else {
            tracing::error!(conversation = %reply.conversation_id, "reply for a conversation that is not a matrix room");
            return;
        };
        let reply_to = reply
            .reply_to_event
            .as_deref()
            .and_then(|event| event.parse().ok());
        match reply.kind {
            ReplyKind::Answer | ReplyKind::Failed | ReplyKind::Delayed | ReplyKind::Question => {
                self.typing_stopped(&conversation, ctx);
                self.enqueue(Outgoing::Reply {
                    conversation,
                    markdown: reply.text,
                    reply_to,
                });
            }
            ReplyKind::AskConfirmation {
                confirmation_id, ..
            } => {
                self.typing_stopped(&conversation, ctx);
                self.enqueue(Outgoing::Ask {
                    conversation,
                    prompt: reply.text,
                    confirmation_id,
                    member_id: reply.member_id,
                    reply_to,
                });
            }
            ReplyKind::ConfirmationExpired { confirmation_id } => {
                self.enqueue(Outgoing::Close {
                    conversation,
                    confirmation_id,
                    outcome: confirmations::EXPIRED_OUTCOME.to_string(),
                });
            }
        }
    }
}

impl Handler<StopMatrix> for MatrixChannel {
    type Result = ();

    fn handle(&mut self, _message: StopMatrix, ctx: &mut Self::Context) {
        self.shared.readiness.set(MATRIX_CHANNEL, false, "stopped");
        ctx.stop();
    }
}
