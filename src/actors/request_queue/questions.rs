//! Questions a running turn puts to its member (an MCP server asking for input).
//!
//! The turn holds its conversation's lane while it waits, so the member's next message
//! there could never start a turn of its own: the queue hands it to the question instead
//! (`Submitted::AnsweredQuestion`). A question is keyed by conversation and member, so in
//! a group only the member who was asked answers it, and it dies with its turn.

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{AsyncContext, Context, Handler};
use tokio::sync::oneshot;

use super::{DeliverReply, ReplyKind, RequestQueue};
use crate::ids::{ConversationKey, MemberId};
use crate::llm::TextListener;
use crate::ports::Inbound;
use crate::turn::{AskError, AskMember, QuestionForm};

/// The turn running in a conversation, and where its replies go.
pub(super) struct RunningTurn {
    pub(super) inbound: Inbound,
    /// Whoever waits for this turn's next reply (an answered confirmation over HTTP).
    pub(super) reply_to: Option<oneshot::Sender<DeliverReply>>,
    /// The member's answer to the turn's last question (its inbox id and platform event
    /// id): later replies answer that message.
    pub(super) deliver_as: Option<(String, Option<String>)>,
    /// Who hears the turn's text as the model writes it (maybe nobody, until an answer
    /// to its question brings a listener).
    pub(super) listener: TextListener,
}

pub(super) struct OpenQuestion {
    answer_to: oneshot::Sender<String>,
    /// What was asked, for a page that shows it again (`ShowQuestion`).
    shown: AskedQuestion,
    /// The message whose turn asked.
    inbox_id: String,
}

impl RequestQueue {
    /// When `inbound` is the answer to a question its sender was asked: hand it over and
    /// return the inbox id of the turn that asked.
    pub(super) fn answer_open_question(
        &mut self,
        inbound: &Inbound,
        listener: Option<&TextListener>,
    ) -> Option<String> {
        // A voice note is words only once transcribed, in its own turn: it never answers
        // a question with an empty text.
        if crate::voice::untranscribed(inbound).is_some() {
            return None;
        }
        let key = inbound.conversation.clone();
        let question = self
            .questions
            .remove(&(key.clone(), inbound.member_id.clone()))?;
        self.unnote_question(&key, &inbound.member_id);
        // Withdrawn (the asker stopped waiting): the message is an ordinary one.
        question.answer_to.send(inbound.text.clone()).ok()?;
        if let Some(running) = self.running.get_mut(&key) {
            running.deliver_as = Some((inbound.id.clone(), inbound.platform_event_id.clone()));
            if let Some(listener) = listener {
                running.listener.redirect(listener);
            }
        }
        tracing::info!(inbox_id = %question.inbox_id, conversation = %key, "question answered");
        Some(question.inbox_id)
    }

    /// Withdraw the question `member_id` is asked in `conversation_key`: its asker hears
    /// "cancel". Whether there was one.
    pub(super) fn cancel_question(
        &mut self,
        conversation_key: &ConversationKey,
        member_id: &MemberId,
    ) -> bool {
        let slot = (conversation_key.clone(), member_id.clone());
        let question = self.questions.remove(&slot);
        if question.is_some() {
            self.unnote_question(conversation_key, member_id);
        }
        question.is_some_and(|question| question.answer_to.send("cancel".to_owned()).is_ok())
    }

    /// The turn of `conversation_key` ended: its questions can no longer be answered.
    pub(super) fn forget_questions(&mut self, conversation_key: &ConversationKey) {
        let asked: Vec<MemberId> = self
            .questions
            .keys()
            .filter(|(key, _)| key == conversation_key)
            .map(|(_, member_id)| member_id.clone())
            .collect();
        for member_id in asked {
            self.questions
                .remove(&(conversation_key.clone(), member_id.clone()));
            self.unnote_question(conversation_key, &member_id);
        }
    }
}

impl Handler<AskMember> for RequestQueue {
    type Result = Result<(), AskError>;

    fn handle(&mut self, message: AskMember, ctx: &mut Context<Self>) -> Self::Result {
        let key = message.conversation_key.root().clone();
        let inbound = self
            .running
            .get(&key)
            .map(|running| running.inbound.clone())
            .ok_or_else(|| AskError::NoRunningTurn(message.conversation_key.clone()))?;
        let slot = (key, message.member_id);
        if self
            .questions
            .get(&slot)
            .is_some_and(|open| !open.answer_to.is_closed())
        {
            return Err(AskError::AlreadyAsking {
                member: slot.1,
                conversation: slot.0,
            });
        }
        tracing::info!(inbox_id = %inbound.id, conversation = %slot.0, "asking the member a question");
        let noted = self.note_question(&slot.0, &slot.1, &inbound.id, &message.question);
        self.questions.insert(
            slot.clone(),
            OpenQuestion {
                answer_to: message.answer_to,
                shown: AskedQuestion {
                    text: message.question.clone(),
                    form: message.form,
                },
                inbox_id: inbound.id.clone(),
            },
        );
        // Shown once noted for the other workers, and only if still asked by then.
        ctx.spawn(noted.into_actor(self).map(move |(), act, ctx| {
            let still_asked = act
                .questions
                .get(&slot)
                .is_some_and(|open| open.inbox_id == inbound.id);
            if still_asked {
                act.deliver_queued(&inbound, message.question, ReplyKind::Question, ctx);
            }
        }));
        Ok(())
    }
}

/// The question `member_id` is asked in `conversation_key` now, if any: for a page that
/// shows it (with its form) again each time it is loaded.
///
/// Sent by the web page (`http/page/question.rs`); handled here, in
/// `request_queue/questions.rs`.
#[derive(Debug, actix::Message)]
#[rtype(result = "Option<AskedQuestion>")]
pub struct ShowQuestion {
    pub conversation_key: ConversationKey,
    pub member_id: MemberId,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AskedQuestion {
    pub text: String,
    pub form: Option<QuestionForm>,
}

impl Handler<ShowQuestion> for RequestQueue {
    type Result = actix::ResponseFuture<Option<AskedQuestion>>;

    fn handle(&mut self, message: ShowQuestion, _ctx: &mut Context<Self>) -> Self::Result {
        let here = self
            .questions
            .get(&(message.conversation_key.clone(), message.member_id.clone()))
            .filter(|open| !open.answer_to.is_closed())
            .map(|open| open.shown.clone());
        if here.is_some() || !self.may_be_asked_elsewhere(&message.conversation_key) {
            return Box::pin(std::future::ready(here));
        }
        // Asked by another worker: its text (the form stays with that worker).
        let elsewhere = self.asked_elsewhere(&message.conversation_key, &message.member_id);
        Box::pin(async move {
            let (_, text) = elsewhere.await.ok().flatten()?;
            Some(AskedQuestion { text, form: None })
        })
    }
}
