//! What a chat platform is to the channel core: a `PlatformAdapter` turns the platform's
//! events into the platform-neutral `Incoming` the core handles (a message, an answer to a
//! confirmation, a cancel from a reminder list), loads a message's quote and downloads its
//! files, acknowledges what the platform needs acknowledged, shows typing, receives events
//! (polling, a webhook, a sync loop) and, as a `Platform`, delivers the parts of outgoing
//! messages. Everything between
//! (member lookup, commands, the "seen before" check, the queue, replies) is the core's.

use std::sync::Arc;
use std::time::Duration;

use actix::Recipient;
use async_trait::async_trait;
use futures::future::BoxFuture;

use super::messages::EventReceived;
use super::platform::Platform;
use crate::actors::channels::ChannelError;
use crate::config::FamilyMember;
use crate::family::Family;
use crate::ids::{ConversationKey, PromptId};
use crate::ports::{AnswerRefused, Attachment, OutgoingMessage, PlatformUser, QuotedMessage};

/// Each profile's slash commands (without the slash) and what the profile is for, and what
/// the default profile is for: what `/help` lists (and Telegram's command menu).
#[derive(Debug, Clone, Default)]
pub struct ProfileCommands {
    pub commands: Vec<(String, String)>,
    pub default_description: String,
}

/// A message someone wrote, as every platform has it.
#[derive(Debug)]
pub(crate) struct IncomingMessage<S> {
    /// Who wrote it, as the platform names them (a Telegram user id, a Matrix user id).
    pub(crate) sender: String,
    /// What the platform calls them (a Telegram first name), when it says: the name a new
    /// member gets when neither their invite nor their `/join` gives one.
    pub(crate) sender_name: Option<String>,
    /// Where it was written.
    pub(crate) conversation: ConversationKey,
    /// The platform's id of it, the same each time the platform delivers it.
    pub(crate) event_id: String,
    /// Its text (or caption); empty for a message with only a file or nothing readable.
    pub(crate) text: String,
    /// The platform's message, to load its quote and files from and to acknowledge it.
    pub(crate) source: S,
}

/// An answer to a prompt (a button, a reaction, a "yes" in reply to it): a confirmation's,
/// or a fired reminder's, whose first choice is Done and second Snooze.
#[derive(Debug)]
pub(crate) struct IncomingAnswer<S> {
    pub(crate) sender: String,
    /// The platform's id of the answering event (a button press, a reaction, a reply).
    pub(crate) event_id: String,
    /// Where it was given, when the platform says.
    pub(crate) conversation: Option<ConversationKey>,
    pub(crate) prompt: PromptId,
    pub(crate) approve: bool,
    /// The platform's event, to acknowledge.
    pub(crate) source: S,
}

/// A cancel asked from a reminder list hearth showed (`/reminders`): a button under it, a
/// numbered reply to it. The core decides whether it counts (the list's member, an entry
/// on it, the rules of who may cancel what).
#[derive(Debug)]
pub(crate) struct IncomingCancel<S> {
    pub(crate) sender: String,
    /// The platform's id of the asking event (a button press, a reply).
    pub(crate) event_id: String,
    /// Where it was asked, when the platform says: where the list is, and where a reply
    /// goes.
    pub(crate) conversation: Option<ConversationKey>,
    /// The platform event showing the list, when the platform says.
    pub(crate) list_event: Option<String>,
    /// The entry's number: its schedule's id.
    pub(crate) schedule_id: i64,
    /// The platform's event, to acknowledge.
    pub(crate) source: S,
}

/// A platform event as the core handles it.
#[derive(Debug)]
pub(crate) enum Incoming<M, A> {
    Message(IncomingMessage<M>),
    Answer(IncomingAnswer<A>),
    Cancel(IncomingCancel<A>),
    /// The platform answers on its own (a message it cannot decrypt): store and deliver.
    #[cfg_attr(not(feature = "matrix"), allow(dead_code))]
    Say(OutgoingMessage),
    /// Nothing for hearth: someone else's bot, an edit, an invite the adapter answered.
    Ignored,
}

/// An `Incoming` without the platform's own event: what a fuzz target checks an adapter's
/// reading of a platform event against.
#[derive(Debug, Clone, PartialEq)]
pub enum IncomingReading {
    Message {
        sender: String,
        sender_name: Option<String>,
        conversation: ConversationKey,
        event_id: String,
        text: String,
    },
    Answer {
        sender: String,
        event_id: String,
        conversation: Option<ConversationKey>,
        prompt: PromptId,
        approve: bool,
    },
    Cancel {
        sender: String,
        event_id: String,
        conversation: Option<ConversationKey>,
        list_event: Option<String>,
        schedule_id: i64,
    },
    Say,
    Ignored,
    /// A button press on a button the platform's adapter did not make.
    NotMine,
}

impl<M, A> From<Incoming<M, A>> for IncomingReading {
    fn from(incoming: Incoming<M, A>) -> Self {
        match incoming {
            Incoming::Message(message) => IncomingReading::Message {
                sender: message.sender,
                sender_name: message.sender_name,
                conversation: message.conversation,
                event_id: message.event_id,
                text: message.text,
            },
            Incoming::Answer(answer) => IncomingReading::Answer {
                sender: answer.sender,
                event_id: answer.event_id,
                conversation: answer.conversation,
                prompt: answer.prompt,
                approve: answer.approve,
            },
            Incoming::Cancel(cancel) => IncomingReading::Cancel {
                sender: cancel.sender,
                event_id: cancel.event_id,
                conversation: cancel.conversation,
                list_event: cancel.list_event,
                schedule_id: cancel.schedule_id,
            },
            Incoming::Say(_) => IncomingReading::Say,
            Incoming::Ignored => IncomingReading::Ignored,
        }
    }
}

/// What became of an answer, for the platform to tell the person who gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AnswerOutcome {
    Approved,
    Declined,
    /// A reminder acknowledged.
    Done,
    /// A reminder put off for `reminders.snooze_minutes`.
    Snoozed,
    Refused(AnswerRefused),
    /// Not from a family member.
    Stranger,
    /// It could not be stored; it may be given again.
    Failed,
}

#[async_trait]
pub(crate) trait PlatformAdapter: Platform + Sized {
    /// What the platform's event source hands over.
    type Event: Send + 'static;
    /// The platform's message behind an `IncomingMessage`.
    type MessageSource: Send + Sync + 'static;
    /// The platform's event behind an `IncomingAnswer`.
    type AnswerSource: Send + Sync + 'static;

    /// How often "typing…" is shown again while a turn runs.
    const TYPING_EVERY: Duration;
    /// The answer to a message with neither text nor a file hearth can keep.
    const NOTHING_TO_READ: &'static str;
    /// A second command prefix besides `/` (`!` on Matrix, where clients take `/`).
    const ALTERNATE_PREFIX: Option<char>;
    /// How a member opens a private chat with hearth here (where codes are sent).
    const PRIVATE_CHAT_HINT: &'static str;

    /// The family member `sender` is, if any.
    fn member(&self, family: &Family, sender: &str) -> Option<FamilyMember>;

    /// `sender` as an account that can join the family, if it can.
    fn platform_user(&self, sender: &str) -> Option<PlatformUser>;

    /// Whether `conversation` is `sender`'s own chat with hearth, which only they and hearth
    /// read (Telegram's private chat, a Matrix direct room with hearth).
    fn own_chat_of(&self, _sender: &str, _conversation: &ConversationKey) -> bool {
        false
    }

    /// The family's members changed (someone joined or linked an account): a platform that
    /// keeps what it derives from them (Matrix's own rooms) finds it anew.
    fn members_changed(&self) {}

    /// The bot's own name on the platform, once known: `/cmd@name` is for it and
    /// `/cmd@other` is not.
    fn bot_username(&self) -> Option<String>;

    /// What `/help` lists.
    fn profile_commands(&self) -> &ProfileCommands;

    /// `event` as the core handles it (platform-only events are handled here).
    async fn read(
        &self,
        event: Self::Event,
    ) -> Result<Incoming<Self::MessageSource, Self::AnswerSource>, ChannelError>;

    /// The message the member replied to, as context, when it can be read.
    async fn quote(&self, message: &Self::MessageSource) -> Option<QuotedMessage>;

    /// The message's files, downloaded within the size limit into message `inbox_id`'s
    /// folder (a file not kept carries a note saying why).
    async fn attachments(&self, message: &Self::MessageSource, inbox_id: &str) -> Vec<Attachment>;

    /// The message was handled (taken, answered, or known already): a platform that shows
    /// it (Matrix's read receipt) says so.
    fn message_handled(&self, message: &Self::MessageSource);

    /// Tell whoever answered what became of it (Telegram's reply to a button press).
    async fn answer_handled(&self, answer: &Self::AnswerSource, outcome: AnswerOutcome);

    /// Tell whoever answered `text` (`refused`: nothing changed) in the platform's own way
    /// of answering an answer (Telegram's reply to a button press): `true` once told;
    /// `false` where the platform has none (Matrix), and the core says it in the chat.
    async fn tell_answerer(&self, answer: &Self::AnswerSource, text: &str, refused: bool) -> bool;

    /// The place "typing…" is shown for `conversation` (a chat, a room).
    fn typing_place(&self, conversation: &ConversationKey) -> Option<String>;

    /// Show "typing…" at `place`, or stop showing it; never waits.
    fn show_typing(self: &Arc<Self>, place: &str, typing: bool);

    /// Receive the platform's events and hand each to `events` until it is handled for
    /// good; runs until the channel stops it.
    fn receive(
        self: Arc<Self>,
        events: Recipient<EventReceived<Self::Event>>,
    ) -> BoxFuture<'static, ()>;
}
