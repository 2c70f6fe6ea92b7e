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
mod media;
mod messages;
mod outbound;
mod own_chats;
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

use super::core::typing::TypingTurns;
use super::core::{ChannelDeps, Deliveries, resume_deliveries, send};
use super::{ChannelError, DeliverReply};
use crate::actors::request_queue::RequestQueue;
use crate::family::Family;
use crate::metrics::Metrics;
use crate::ports::{ChannelState, Inbox};
use crate::readiness::Readiness;
use outbound::{Conversation, MatrixPlatform};

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
    /// Read only: whether a redelivered event was accepted before.
    inbox: Arc<dyn Inbox>,
    state: Arc<dyn ChannelState>,
    readiness: Arc<Readiness>,
    metrics: Arc<Metrics>,
}

pub struct MatrixChannel {
    shared: Arc<Shared>,
    /// The outbox's messages for Matrix, in order per conversation.
    deliveries: Deliveries<MatrixPlatform>,
    typing: TypingTurns<String>,
}

impl MatrixChannel {
    /// Open the store (a wrong passphrase or an unreadable store stops start-up here);
    /// logging in and syncing happen once the actor runs, retried while the homeserver
    /// is away.
    pub async fn build(
        settings: MatrixSettings,
        deps: ChannelDeps,
    ) -> Result<Self, MatrixStartError> {
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
        let client = session::build_client(&settings).await?;
        readiness.set(MATRIX_CHANNEL, false, "connecting to the homeserver");
        let shared = Arc::new(Shared {
            client,
            settings,
            family,
            queue,
            inbox,
            state,
            readiness,
            metrics: metrics.clone(),
        });
        let platform = MatrixPlatform {
            shared: shared.clone(),
        };
        Ok(MatrixChannel {
            shared,
            deliveries: Deliveries::new(platform, outbox, metrics, delivery),
            typing: TypingTurns::default(),
        })
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

impl Actor for MatrixChannel {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(1024);
        let shared = self.shared.clone();
        let channel = ctx.address();
        ctx.spawn(sync::run(shared, channel).into_actor(self));
        resume_deliveries(self, ctx, |channel: &mut Self| &mut channel.deliveries);
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
        if let Some(conversation) = Conversation::parse(&reply.conversation_id)
            && reply.kind.ends_a_turn()
        {
            self.typing_stopped(&conversation, ctx);
        }
        let message = reply.outgoing(MATRIX_CHANNEL);
        self.deliveries.deliver(reply.outbox_id, message);
    }
}

impl Handler<StopMatrix> for MatrixChannel {
    type Result = ();

    fn handle(&mut self, _message: StopMatrix, ctx: &mut Self::Context) {
        self.shared.readiness.set(MATRIX_CHANNEL, false, "stopped");
        ctx.stop();
    }
}
