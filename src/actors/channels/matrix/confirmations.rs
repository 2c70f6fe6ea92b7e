//! Confirmations in Matrix's idiom: the prompt is a notice the bot seeds with ✅ and ❌
//! reactions; the member asked answers by reacting (or by replying "yes" / "no" to the
//! prompt); anyone else's reaction is ignored. The outcome is edited into the prompt
//! (`m.replace`). Which event shows which confirmation is kept in `ChannelState`, so
//! answers and expiry still find it after a restart.

use matrix_sdk::Room;
use matrix_sdk::ruma::events::reaction::{OriginalSyncReactionEvent, ReactionEventContent};
use matrix_sdk::ruma::events::relation::Annotation;
use matrix_sdk::ruma::events::room::message::{ReplacementMetadata, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId};
use serde::{Deserialize, Serialize};

use super::inbound::FollowUp;
use super::outbound::{Conversation, Outgoing, room, send_event, send_message};
use super::{MATRIX_CHANNEL, Shared};
use crate::actors::channels::ChannelError;
use crate::actors::request_queue::{AnswerConfirmation, AnswerError};
use crate::ports::AnswerPlace;

pub(super) const EXPIRED_OUTCOME: &str = "⌛ Expired: nothing was done.";
const YES: &str = "✅";
const NO: &str = "❌";

/// Where a confirmation is shown, under `confirmation:<id>`.
#[derive(Debug, Serialize, Deserialize)]
struct ShownConfirmation {
    room_id: OwnedRoomId,
    event_id: OwnedEventId,
    text: String,
}

fn confirmation_key(confirmation_id: &str) -> String {
    format!("confirmation:{confirmation_id}")
}

fn prompt_key(event_id: &str) -> String {
    format!("prompt:{event_id}")
}

pub(super) async fn send_prompt(
    shared: &Shared,
    conversation: &Conversation,
    prompt: &str,
    confirmation_id: &str,
    member_id: &str,
    reply_to: Option<OwnedEventId>,
) {
    let text =
        format!("{prompt}\n\nReact with {YES} to confirm or {NO} to cancel (or reply yes / no).");
    let content = RoomMessageEventContent::notice_plain(&text);
    let Some(event_id) = send_message(shared, conversation, content, reply_to).await else {
        tracing::error!(
            confirmation = confirmation_id,
            "confirmation not shown in matrix; it expires unanswered"
        );
        return;
    };
    let shown = ShownConfirmation {
        room_id: conversation.room_id.clone(),
        event_id: event_id.clone(),
        text: prompt.to_string(),
    };
    let stored = async {
        let value = serde_json::to_string(&shown).unwrap_or_default();
        shared
            .state
            .put_state(MATRIX_CHANNEL, &confirmation_key(confirmation_id), &value)
            .await?;
        shared
            .state
            .put_state(
                MATRIX_CHANNEL,
                &prompt_key(event_id.as_str()),
                confirmation_id,
            )
            .await
    };
    if let Err(error) = stored.await {
        tracing::warn!(confirmation = confirmation_id, %error, "where a confirmation is shown was not stored");
    }
    tracing::debug!(
        confirmation = confirmation_id,
        member = member_id,
        "confirmation shown"
    );
    // The two answers, ready to tap.
    if let Some(room) = room(shared, conversation) {
        for key in [YES, NO] {
            let reaction = ReactionEventContent::new(Annotation::new(event_id.clone(), key.into()));
            send_event(shared, &room, reaction.into()).await;
        }
    }
}

/// Edit the prompt to say `outcome` and forget it.
pub(super) async fn close_prompt(
    shared: &Shared,
    conversation: &Conversation,
    confirmation_id: &str,
    outcome: &str,
) {
    let key = confirmation_key(confirmation_id);
    let shown = match shared.state.get_state(MATRIX_CHANNEL, &key).await {
        Ok(Some(value)) => serde_json::from_str::<ShownConfirmation>(&value).ok(),
        Ok(None) => None,
        Err(error) => {
            tracing::warn!(confirmation = confirmation_id, %error, "cannot read where a confirmation is shown");
            return;
        }
    };
    let Some(shown) = shown else {
        return;
    };
    if let Some(room) = room(shared, conversation) {
        let edited = RoomMessageEventContent::notice_plain(format!("{}\n\n{outcome}", shown.text))
            .make_replacement(ReplacementMetadata::new(shown.event_id.clone(), None));
        send_event(shared, &room, edited.into()).await;
    }
    for key in [key, prompt_key(shown.event_id.as_str())] {
        if let Err(error) = shared.state.delete_state(MATRIX_CHANNEL, &key).await {
            tracing::warn!(confirmation = confirmation_id, %error, "closed confirmation not forgotten");
        }
    }
}

/// The confirmation shown by event `event_id`, if it is a prompt still open.
pub(super) async fn confirmation_of(
    shared: &Shared,
    event_id: &str,
) -> Result<Option<String>, ChannelError> {
    Ok(shared
        .state
        .get_state(MATRIX_CHANNEL, &prompt_key(event_id))
        .await?)
}

/// A reaction: ✅ or ❌ on an open prompt, by the member it asks, answers it.
pub(super) async fn handle_reaction(
    shared: &Shared,
    room: Room,
    event: OriginalSyncReactionEvent,
) -> Result<Vec<FollowUp>, ChannelError> {
    let relation = &event.content.relates_to;
    // Some clients add a variation selector to the emoji.
    let approve = match relation.key.trim_end_matches('\u{fe0f}') {
        YES | "✔" | "👍" => true,
        NO | "✖" | "👎" => false,
        _ => return Ok(Vec::new()),
    };
    let Some(confirmation_id) = confirmation_of(shared, relation.event_id.as_str()).await? else {
        return Ok(Vec::new());
    };
    answer(
        shared,
        room,
        event.sender.as_str(),
        &confirmation_id,
        approve,
    )
    .await
}

/// `sender` answers `confirmation_id`; answers from anyone but the member asked, and
/// answers to what is no longer open, change nothing.
pub(super) async fn answer(
    shared: &Shared,
    room: Room,
    sender: &str,
    confirmation_id: &str,
    approve: bool,
) -> Result<Vec<FollowUp>, ChannelError> {
    let Some(member) = shared.family.by_matrix_id(sender) else {
        return Ok(Vec::new());
    };
    let answered = shared
        .queue
        .send(AnswerConfirmation {
            confirmation_id: confirmation_id.to_string(),
            member_id: member.id.clone(),
            // The room the answer was given in (a thread of it counts too).
            place: AnswerPlace::new(MATRIX_CHANNEL, Some(room.room_id().to_string())),
            approve,
            reply_to: None,
        })
        .await
        .map_err(|_| ChannelError::QueueStopped)?;
    let conversation = Conversation {
        room_id: room.room_id().to_owned(),
        thread_root: None,
    };
    match answered {
        Ok(_) => {
            let name = member.name.clone().unwrap_or_else(|| member.id.clone());
            let outcome = if approve {
                format!("✅ Confirmed by {name}.")
            } else {
                "❌ Cancelled.".to_string()
            };
            Ok(vec![
                FollowUp::Send(Outgoing::Close {
                    conversation: conversation.clone(),
                    confirmation_id: confirmation_id.to_string(),
                    outcome,
                }),
                FollowUp::TurnStarted(conversation),
            ])
        }
        Err(AnswerError::Refused(refusal)) => {
            tracing::info!(confirmation = confirmation_id, sender, %refusal, "matrix answer ignored");
            Ok(Vec::new())
        }
        Err(AnswerError::Storage(error)) => Err(ChannelError::Storage(error)),
    }
}
