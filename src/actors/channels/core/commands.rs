//! What a member's commands and answers do, on every platform: `/cancel`, and a
//! confirmation answered by a button, a reaction or a "yes". Each returns the messages to
//! deliver; the platform only finds out who spoke, where, and shows the result.

use actix::Addr;

use super::texts::{DECLINED_OUTCOME, approved_outcome};
use crate::actors::channels::ChannelError;
use crate::actors::request_queue::{
    AnswerConfirmation, AnswerError, CANCELLED_OUTCOME, CancelPending, RequestQueue,
};
use crate::config::FamilyMember;
use crate::ports::{AnswerPlace, AnswerRefused, OutgoingKind, OutgoingMessage};

/// `text` as markdown in `conversation_id` of `channel`, threaded to `reply_to_event`.
pub(crate) fn say(
    channel: &str,
    conversation_id: &str,
    text: impl Into<String>,
    reply_to_event: Option<String>,
) -> OutgoingMessage {
    OutgoingMessage {
        channel: channel.to_string(),
        conversation_id: conversation_id.to_string(),
        inbox_id: None,
        text: text.into(),
        kind: OutgoingKind::Reply,
        reply_to_event,
    }
}

/// Close confirmation `confirmation_id`'s prompt in `conversation_id`, ending it with
/// `outcome`.
pub(crate) fn close(
    channel: &str,
    conversation_id: &str,
    confirmation_id: &str,
    outcome: impl Into<String>,
) -> OutgoingMessage {
    OutgoingMessage {
        channel: channel.to_string(),
        conversation_id: conversation_id.to_string(),
        inbox_id: None,
        text: outcome.into(),
        kind: OutgoingKind::Close {
            confirmation_id: confirmation_id.to_string(),
        },
        reply_to_event: None,
    }
}

/// `/cancel` from `member_id` in `conversation_id`: their confirmations there are denied
/// (their prompts closed), their question withdrawn, their pending plugin call dropped.
pub(crate) async fn cancel(
    queue: &Addr<RequestQueue>,
    member_id: &str,
    channel: &str,
    conversation_id: &str,
    reply_to_event: Option<String>,
) -> Result<Vec<OutgoingMessage>, ChannelError> {
    let cancelled = queue
        .send(CancelPending {
            member_id: member_id.to_string(),
            conversation_key: format!("{channel}:{conversation_id}"),
        })
        .await
        .map_err(|_| ChannelError::QueueStopped)??;
    if let Some(reply) = cancelled.reply() {
        return Ok(vec![say(channel, conversation_id, reply, reply_to_event)]);
    }
    // The turns that waited go on and say what happened; the prompts close now.
    Ok(cancelled
        .confirmation_ids
        .iter()
        .map(|id| close(channel, conversation_id, id, CANCELLED_OUTCOME))
        .collect())
}

/// `member` answered confirmation `confirmation_id` in `conversation_id` of `channel`: the
/// prompt's closing message when the answer counts (the turn goes on), else why not.
pub(crate) async fn answer(
    queue: &Addr<RequestQueue>,
    member: &FamilyMember,
    channel: &str,
    conversation_id: &str,
    confirmation_id: &str,
    approve: bool,
) -> Result<Result<OutgoingMessage, AnswerRefused>, ChannelError> {
    let answered = queue
        .send(AnswerConfirmation {
            confirmation_id: confirmation_id.to_string(),
            member_id: member.id.clone(),
            place: AnswerPlace::new(channel, Some(conversation_id.to_string())),
            approve,
            reply_to: None,
        })
        .await
        .map_err(|_| ChannelError::QueueStopped)?;
    match answered {
        Ok(_) => {
            let name = member.name.clone().unwrap_or_else(|| member.id.clone());
            let outcome = if approve {
                approved_outcome(&name)
            } else {
                DECLINED_OUTCOME.to_string()
            };
            Ok(Ok(close(
                channel,
                conversation_id,
                confirmation_id,
                outcome,
            )))
        }
        Err(AnswerError::Refused(refusal)) => Ok(Err(refusal)),
        Err(AnswerError::Storage(error)) => Err(ChannelError::Storage(error)),
    }
}
