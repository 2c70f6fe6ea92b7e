//! Matrix (matrix-sdk with its SQLite state and crypto store): the channel core's adapter
//! for a homeserver, rooms encrypted or not. It only parses, renders and sends; the
//! channel actor, the inbound sequence and the outbox are the core's
//! (`ChannelActor<MatrixAdapter>`).
//!
//! - The session (`session.rs`): password or access-token login once, then the saved
//!   session restores the same device and its keys at every start; the store is
//!   encrypted with `store_passphrase_env`; a recovery key restores cross-signing.
//! - The sync loop (`sync.rs`) keeps its own sync position in `ChannelState` and moves
//!   it only after every event of a sync was handled for good, so a restart neither loses
//!   nor repeats a message; the first start skips the rooms' history. It backs off while
//!   the homeserver is away and readiness says so. Members' own rooms with hearth are
//!   found as it syncs (`own_chats.rs`).
//! - `inbound.rs` reads an event: a message (text, replies as context, images and files
//!   via `media.rs`, `/` and `!` commands), a "yes" / "no" reply or a reaction on a prompt
//!   as an answer; invites are accepted from family members, and from strangers only while
//!   a code adding a member is open, for a few rooms, left when it closes
//!   (`stranger_rooms.rs`); a message that cannot be decrypted is answered with a request
//!   to verify this device, and counted.
//! - Replies (`outbound.rs`) are `m.notice` with the markdown as HTML and a plain body,
//!   threaded to the message they answer; typing shows while a turn runs; messages read
//!   get a read receipt (`rooms.rs`: conversations, sending, typing, receipts).
//! - Confirmations (`confirmations.rs`) are prompts the bot seeds with ✅ and ❌
//!   reactions; the outcome is edited into the prompt (`m.replace`).
//! - `/reminders` (`lists.rs`) is the member's list, numbered; a number in reply to it
//!   cancels that entry, answered in the room, and the list is edited to show it.
//! - `check.rs`: the login tried once beside a running bot, changing nothing it keeps
//!   (`hearth doctor`).

mod check;
mod confirmations;
pub(crate) mod inbound;
mod lists;
mod media;
mod outbound;
mod own_chats;
mod rooms;
mod session;
mod stranger_rooms;
mod sync;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use async_trait::async_trait;
use futures::future::BoxFuture;
use matrix_sdk::Client;

pub use check::{LoginChecked, MatrixCheckError, MatrixLogin, check_login};
pub use session::MatrixStartError;

use super::ChannelError;
use super::core::{
    AnswerOutcome, ChannelActor, ChannelDeps, EventReceived, Incoming, PlatformAdapter,
    ProfileCommands,
};
use crate::config::FamilyMember;
use crate::family::Family;
use crate::ids::ConversationKey;
use crate::metrics::Metrics;
use crate::ports::{Attachment, ChannelState, PlatformUser, QuotedMessage};
use crate::readiness::Readiness;
use inbound::{MatrixAnswer, MatrixMessage};
use rooms::Conversation;
use sync::MatrixEvent;

/// The channel name in `Inbound::channel` and readiness.
pub const MATRIX_CHANNEL: &str = "matrix";

/// The Matrix channel: the channel core's actor over a homeserver.
pub(crate) type MatrixChannel = ChannelActor<MatrixAdapter>;

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
    /// For `/help`.
    pub commands: ProfileCommands,
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

/// The homeserver as the channel core's platform.
pub(crate) struct MatrixAdapter {
    client: Client,
    settings: MatrixSettings,
    family: Arc<Family>,
    /// Where the rooms that are members' own chats are kept (`own_chats.rs`).
    own_chats: Arc<crate::family::OwnChats>,
    /// Set when the family changed, so the own rooms are found again after the next sync.
    own_rooms_changed: Arc<std::sync::atomic::AtomicBool>,
    /// Whether strangers' room invites are answered at all (members change in chat).
    membership: Option<Arc<crate::family::Membership>>,
    /// The rooms joined on strangers' invites while a code was open.
    stranger_rooms: stranger_rooms::StrangerRooms,
    state: Arc<dyn ChannelState>,
    readiness: Arc<Readiness>,
    metrics: Arc<Metrics>,
}

impl MatrixAdapter {
    /// Open the store (a wrong passphrase or an unreadable store stops start-up here);
    /// logging in and syncing happen once the channel runs, retried while the homeserver
    /// is away.
    pub(crate) async fn build(
        settings: MatrixSettings,
        deps: &ChannelDeps,
    ) -> Result<Self, MatrixStartError> {
        let client = session::build_client(&settings).await?;
        deps.readiness
            .set(MATRIX_CHANNEL, false, "connecting to the homeserver");
        Ok(MatrixAdapter {
            client,
            settings,
            family: deps.family.clone(),
            own_chats: deps.own_chats.clone(),
            own_rooms_changed: Arc::default(),
            membership: deps
                .membership
                .as_ref()
                .map(|parts| parts.membership.clone()),
            stranger_rooms: Default::default(),
            state: deps.state.clone(),
            readiness: deps.readiness.clone(),
            metrics: deps.metrics.clone(),
        })
    }
}

#[async_trait]
impl PlatformAdapter for MatrixAdapter {
    type Event = MatrixEvent;
    type MessageSource = MatrixMessage;
    type AnswerSource = MatrixAnswer;

    /// Matrix typing notices last a few seconds.
    const TYPING_EVERY: Duration = Duration::from_secs(3);
    /// A location, a video.
    const NOTHING_TO_READ: &'static str =
        "I can read text, images, files and voice messages; that message had none.";
    /// Clients take `/` for their own commands.
    const ALTERNATE_PREFIX: Option<char> = Some('!');
    const PRIVATE_CHAT_HINT: &'static str =
        "start a direct chat with me (a room of just you and me)";

    fn member(&self, family: &Family, sender: &str) -> Option<FamilyMember> {
        family.by_matrix_id(sender)
    }

    fn platform_user(&self, sender: &str) -> Option<PlatformUser> {
        Some(PlatformUser::Matrix(sender.to_string()))
    }

    /// A room found to be the member's direct chat with hearth (`own_chats.rs`), or a
    /// thread in it.
    fn own_chat_of(&self, sender: &str, conversation: &ConversationKey) -> bool {
        let Some(member) = self.family.member_by_matrix_id(sender) else {
            return false;
        };
        let Some(room) = Conversation::of_key(conversation)
            .and_then(|conversation| Conversation::room(conversation.room_id).key().ok())
        else {
            return false;
        };
        self.own_chats.of(&member.id).contains(&room)
    }

    fn members_changed(&self) {
        self.own_rooms_changed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    fn bot_username(&self) -> Option<String> {
        None
    }

    fn profile_commands(&self) -> &ProfileCommands {
        &self.settings.commands
    }

    async fn read(
        &self,
        event: MatrixEvent,
    ) -> Result<Incoming<MatrixMessage, MatrixAnswer>, ChannelError> {
        inbound::read(self, event).await
    }

    async fn quote(&self, message: &MatrixMessage) -> Option<QuotedMessage> {
        inbound::quote(self, message).await
    }

    async fn attachments(&self, message: &MatrixMessage, inbox_id: &str) -> Vec<Attachment> {
        inbound::attachments(self, message, inbox_id).await
    }

    fn message_handled(&self, message: &MatrixMessage) {
        inbound::message_handled(message);
    }

    async fn answer_handled(&self, answer: &MatrixAnswer, outcome: AnswerOutcome) {
        inbound::answer_handled(answer, outcome);
    }

    /// Matrix answers an answer only by a message: the core replies in the room.
    async fn tell_answerer(&self, answer: &MatrixAnswer, _text: &str, _refused: bool) -> bool {
        inbound::answer_read(answer);
        false
    }

    /// A room: its threads share its typing notice.
    fn typing_place(&self, conversation: &ConversationKey) -> Option<String> {
        Conversation::of_key(conversation).map(|conversation| conversation.room_id.to_string())
    }

    fn show_typing(self: &Arc<Self>, place: &str, typing: bool) {
        if let Ok(room_id) = place.parse() {
            rooms::send_typing(self.clone(), room_id, typing);
        }
    }

    fn receive(
        self: Arc<Self>,
        events: Recipient<EventReceived<MatrixEvent>>,
    ) -> BoxFuture<'static, ()> {
        Box::pin(sync::run(self, events))
    }
}
