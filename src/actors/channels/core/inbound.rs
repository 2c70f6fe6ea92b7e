//! The inbound sequence, the same on every platform: who wrote (strangers get nothing),
//! whether this platform event was handled before, the commands (`/help`, `/cancel`,
//! `/reminders`, a profile's), the files, `SubmitInbound` and what its outcome says to do;
//! an answer to a confirmation; and a cancel from a reminder list (`reminder_lists.rs`).
//!
//! A platform delivers an event again when hearth stopped before confirming it (Telegram's
//! offset, a Matrix sync position, a webhook call). A message is recognised by the inbox
//! (`knows_event`); a command or an answer, which the inbox never sees, by the note
//! `handled:<event id>` in `ChannelState`, written once it was handled and kept as long
//! as the inbox keeps finished messages (`prune_handled`). A second `/cancel` could
//! otherwise cancel a confirmation asked after the first.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;

use super::adapter::{AnswerOutcome, Incoming, IncomingAnswer, IncomingMessage, PlatformAdapter};
use super::commands::{self, Command, MembershipCommand, parse_command};
use super::list_notes;
use super::membership::{ASK_FOR_A_CODE, MembershipParts, help_lines};
use super::reminder_answers::{self, ReminderAnswers};
use super::reminder_lists;
use super::texts::{BUSY_REPLY, help_text};
use crate::actors::channels::ChannelError;
use crate::actors::request_queue::{
    EXPIRED_OUTCOME, RequestQueue, SubmitError, SubmitInbound, Submitted,
};
use crate::family::Family;
use crate::ids::{ConversationKey, PromptId};
use crate::ports::{
    AnswerRefused, ChannelState, Inbound, InboundExtras, Inbox, OutgoingMessage, StorageError,
    now_ms,
};

const HANDLED_PREFIX: &str = "handled:";

/// What the actor does once an event is handled.
#[derive(Debug)]
pub(crate) enum FollowUp {
    /// A turn of this conversation runs (again): show "typing…".
    TurnStarted(ConversationKey),
    /// Store this in the outbox and deliver it.
    Send(OutgoingMessage),
}

/// What the inbound sequence needs: the platform, and where members, messages and notes
/// live.
pub(crate) struct ChannelCore<A> {
    pub(crate) adapter: Arc<A>,
    pub(crate) family: Arc<Family>,
    pub(crate) queue: Addr<RequestQueue>,
    /// Read only: whether a redelivered message was accepted before.
    pub(crate) inbox: Arc<dyn Inbox>,
    pub(crate) state: Arc<dyn ChannelState>,
    /// How long a handled command is remembered (as long as finished inbox messages).
    pub(crate) handled_kept_for: Duration,
    /// Where answers to fired reminders go.
    pub(crate) reminders: Option<ReminderAnswers>,
    /// The family's commands (`/invite`, `/join`, `/link`, `/family`), where members can
    /// be changed in chat.
    pub(crate) membership: Option<MembershipParts>,
}

impl<A: PlatformAdapter> ChannelCore<A> {
    fn channel(&self) -> &'static str {
        self.adapter.channel()
    }

    /// Handle `event` for good; the follow-ups for the actor.
    pub(crate) async fn handle(&self, event: A::Event) -> Result<Vec<FollowUp>, ChannelError> {
        match self.adapter.read(event).await? {
            Incoming::Message(message) => self.message(message).await,
            Incoming::Answer(answer) => self.answer(answer).await,
            Incoming::Cancel(cancel) => self.cancel_from_list(cancel).await,
            Incoming::Say(message) => Ok(vec![FollowUp::Send(message)]),
            Incoming::Ignored => Ok(Vec::new()),
        }
    }

    async fn message(
        &self,
        message: IncomingMessage<A::MessageSource>,
    ) -> Result<Vec<FollowUp>, ChannelError> {
        let username = self.adapter.bot_username();
        let reminders = self.reminders.is_some();
        let command = parse_command(
            &message.text,
            A::ALTERNATE_PREFIX,
            username.as_deref(),
            reminders,
            self.membership.is_some(),
        );
        // Who may speak is what the database says now, on every worker.
        self.family.refresh().await?;
        let Some(member) = self.adapter.member(&self.family, &message.sender) else {
            return self.stranger_wrote(message, command).await;
        };
        if self.seen(&message.event_id).await? {
            return Ok(Vec::new());
        }
        let say = |text: String| {
            vec![FollowUp::Send(commands::say(
                &message.conversation,
                text,
                Some(message.event_id.clone()),
            ))]
        };
        let text = match command {
            Some(Command::NotForUs) => return Ok(Vec::new()),
            Some(Command::Help) => {
                let commands = self.adapter.profile_commands();
                let mut help = help_text(
                    &commands.commands,
                    &commands.default_description,
                    A::ALTERNATE_PREFIX,
                    reminders,
                );
                if self.membership.is_some() {
                    help.push_str(&help_lines(&member, A::ALTERNATE_PREFIX));
                }
                return Ok(self.handled(&message, say(help)).await);
            }
            Some(Command::Reminders) => {
                // Parsed only where reminders reach the channel.
                let Some(answers) = &self.reminders else {
                    return Ok(Vec::new());
                };
                let list = reminder_lists::list_reply(
                    answers,
                    &member.id,
                    &message.conversation,
                    Some(message.event_id.clone()),
                )
                .await?;
                return Ok(self.handled(&message, vec![FollowUp::Send(list)]).await);
            }
            Some(Command::Cancel) => {
                let messages = commands::cancel(
                    &self.queue,
                    &member.id,
                    &message.conversation,
                    Some(message.event_id.clone()),
                )
                .await?;
                let follow_up = messages.into_iter().map(FollowUp::Send).collect();
                return Ok(self.handled(&message, follow_up).await);
            }
            Some(Command::Membership(which, rest)) => {
                let Some(parts) = &self.membership else {
                    return Ok(Vec::new());
                };
                let replies = parts
                    .member_command(self.adapter.as_ref(), &member, &message, which, &rest)
                    .await?;
                let follow_up = replies.into_iter().map(FollowUp::Send).collect();
                return Ok(self.handled(&message, follow_up).await);
            }
            Some(Command::Other(text)) => text,
            None => message.text.clone(),
        };
        let id = Inbound::new_id();
        let attachments = self.adapter.attachments(&message.source, &id).await;
        if text.trim().is_empty() && attachments.is_empty() {
            return Ok(self
                .handled(&message, say(A::NOTHING_TO_READ.to_string()))
                .await);
        }
        let inbound = Inbound {
            id,
            conversation: message.conversation.clone(),
            member_id: member.id.clone(),
            text,
            platform_event_id: Some(message.event_id.clone()),
            received_at_ms: now_ms(),
            extras: InboundExtras {
                profile_id: None,
                quoted: self.adapter.quote(&message.source).await,
                attachments,
            },
        };
        let submitted = self
            .queue
            .send(SubmitInbound {
                inbound,
                listener: None,
                only_answer: false,
            })
            .await
            .map_err(|_| ChannelError::QueueStopped)?;
        let follow_up = match submitted {
            Ok(Submitted::Accepted | Submitted::AnsweredQuestion { .. }) => {
                vec![FollowUp::TurnStarted(message.conversation.clone())]
            }
            Ok(Submitted::Duplicate(_)) => Vec::new(),
            Err(SubmitError::Busy { .. }) => say(BUSY_REPLY.to_string()),
            Err(SubmitError::Storage(error)) => return Err(ChannelError::Storage(error)),
            // Never asked for here: a chat message always counts.
            Err(SubmitError::NoOpenQuestion) => Vec::new(),
        };
        self.adapter.message_handled(&message.source);
        Ok(follow_up)
    }

    /// A message from someone who is no member: `/join` is read, and, when strangers are
    /// told, the first other message of a day in their own chat is answered with how to
    /// join; anything else gets nothing.
    async fn stranger_wrote(
        &self,
        message: IncomingMessage<A::MessageSource>,
        command: Option<Command>,
    ) -> Result<Vec<FollowUp>, ChannelError> {
        let (Some(parts), Some(user)) = (
            &self.membership,
            self.adapter.platform_user(&message.sender),
        ) else {
            return Ok(Vec::new());
        };
        if let Some(Command::Membership(MembershipCommand::Join, rest)) = command {
            if self.seen(&message.event_id).await? {
                return Ok(Vec::new());
            }
            let replies = parts
                .join(self.adapter.as_ref(), &user, &message, &rest)
                .await?;
            let follow_up = replies.into_iter().map(FollowUp::Send).collect();
            return Ok(self.handled(&message, follow_up).await);
        }
        if self
            .adapter
            .own_chat_of(&message.sender, &message.conversation)
            && parts.membership.tell_stranger(&user, now_ms())
        {
            let reply = commands::say(
                &message.conversation,
                ASK_FOR_A_CODE,
                Some(message.event_id.clone()),
            );
            return Ok(vec![FollowUp::Send(reply)]);
        }
        Ok(Vec::new())
    }

    async fn answer(
        &self,
        answer: IncomingAnswer<A::AnswerSource>,
    ) -> Result<Vec<FollowUp>, ChannelError> {
        if let Err(error) = self.family.refresh().await {
            self.adapter
                .answer_handled(&answer.source, AnswerOutcome::Failed)
                .await;
            return Err(error.into());
        }
        let Some(member) = self.adapter.member(&self.family, &answer.sender) else {
            self.adapter
                .answer_handled(&answer.source, AnswerOutcome::Stranger)
                .await;
            return Ok(Vec::new());
        };
        if self.seen(&answer.event_id).await? {
            let outcome = AnswerOutcome::Refused(AnswerRefused::AlreadyAnswered);
            self.adapter.answer_handled(&answer.source, outcome).await;
            return Ok(Vec::new());
        }
        let confirmation_id = match &answer.prompt {
            PromptId::Reminder(firing) => {
                let outcome = reminder_answers::settle(
                    self.reminders.as_ref(),
                    &member,
                    *firing,
                    answer.approve,
                )
                .await;
                self.adapter.answer_handled(&answer.source, outcome).await;
                if outcome != AnswerOutcome::Failed {
                    self.note_handled(&answer.event_id).await;
                }
                return Ok(Vec::new());
            }
            PromptId::Confirmation(id) => id,
        };
        let answered = match &answer.conversation {
            Some(conversation) => {
                commands::answer(
                    &self.queue,
                    &member,
                    conversation,
                    confirmation_id,
                    answer.approve,
                )
                .await
            }
            // Given nowhere a confirmation could have been asked: none may be answered.
            None => Ok(Err(AnswerRefused::Unknown)),
        };
        let mut follow_up = Vec::new();
        let outcome = match answered {
            Ok(Ok(close)) => {
                follow_up.push(FollowUp::Send(close));
                // The turn goes on.
                follow_up.extend(answer.conversation.clone().map(FollowUp::TurnStarted));
                if answer.approve {
                    AnswerOutcome::Approved
                } else {
                    AnswerOutcome::Declined
                }
            }
            Ok(Err(refusal)) => {
                tracing::info!(channel = self.channel(), confirmation = %confirmation_id,
                    member = %member.id, %refusal, "answer refused");
                if refusal == AnswerRefused::Expired
                    && let Some(conversation) = &answer.conversation
                {
                    follow_up.push(FollowUp::Send(commands::close(
                        conversation,
                        confirmation_id,
                        EXPIRED_OUTCOME,
                    )));
                }
                AnswerOutcome::Refused(refusal)
            }
            Err(error) => {
                self.adapter
                    .answer_handled(&answer.source, AnswerOutcome::Failed)
                    .await;
                return Err(error);
            }
        };
        self.adapter.answer_handled(&answer.source, outcome).await;
        self.note_handled(&answer.event_id).await;
        Ok(follow_up)
    }

    /// Whether event `event_id` was handled before: a message accepted, or a command or
    /// answer noted.
    pub(super) async fn seen(&self, event_id: &str) -> Result<bool, StorageError> {
        let channel = self.channel();
        let key = handled_key(event_id);
        let (accepted, noted) = futures::try_join!(
            self.inbox.knows_event(channel, event_id),
            self.state.get_state(channel, &key),
        )?;
        Ok(accepted || noted.is_some())
    }

    /// A message handled without the inbox (a command, a reply of the channel's own):
    /// noted so that the platform delivering it again changes nothing.
    async fn handled(
        &self,
        message: &IncomingMessage<A::MessageSource>,
        follow_up: Vec<FollowUp>,
    ) -> Vec<FollowUp> {
        self.note_handled(&message.event_id).await;
        self.adapter.message_handled(&message.source);
        follow_up
    }

    pub(super) async fn note_handled(&self, event_id: &str) {
        let noted = self
            .state
            .put_state(
                self.channel(),
                &handled_key(event_id),
                &now_ms().to_string(),
            )
            .await;
        if let Err(error) = noted {
            // Handled all the same; only a redelivery after a crash could repeat it.
            tracing::warn!(channel = self.channel(), event_id, %error, "handled event not noted");
        }
    }

    /// Forget the handled events and the reminder lists older than `handled_kept_for`; how
    /// many were forgotten.
    pub(crate) async fn prune_handled(&self) -> Result<usize, StorageError> {
        let kept_for = i64::try_from(self.handled_kept_for.as_millis()).unwrap_or(i64::MAX);
        let before = now_ms().saturating_sub(kept_for);
        let lists = list_notes::forget_lists(self.state.as_ref(), self.channel(), before);
        let noted = self
            .state
            .list_state(self.channel(), HANDLED_PREFIX)
            .await?;
        let mut forgotten = 0;
        for (key, at) in noted {
            // A value that is no time is no note of ours: gone as well.
            if at.parse::<i64>().is_ok_and(|at| at >= before) {
                continue;
            }
            self.state.delete_state(self.channel(), &key).await?;
            forgotten += 1;
        }
        Ok(forgotten + lists.await?)
    }
}

fn handled_key(event_id: &str) -> String {
    format!("{HANDLED_PREFIX}{event_id}")
}
