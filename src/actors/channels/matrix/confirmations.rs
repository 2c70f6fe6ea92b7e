//! Confirmations in Matrix's idiom: the prompt is a notice the bot seeds with ✅ and ❌
//! reactions; the member asked answers by reacting (or by replying "yes" / "no" to the
//! prompt); anyone else's reaction is ignored. The outcome is edited into the prompt
//! (`m.replace`). Which event shows which confirmation is kept in `ChannelState`, so
//! answers and expiry still find it after a restart.

use matrix_sdk::Room;
use matrix_sdk::ruma::events::reaction::{OriginalSyncReactionEvent, ReactionEventContent};
use matrix_sdk::ruma::events::relation::Annotation;
use matrix_sdk::ruma::events::room::message::{ReplacementMetadata, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedTransactionId};
use serde::{Deserialize, Serialize};

use super::inbound::FollowUp;
use super::outbound::{Conversation, room, send_event, send_message};
use super::{MATRIX_CHANNEL, Shared};
use crate::actors::channels::ChannelError;
use crate::actors::channels::core::prompts::{shown_key, shown_places};
use crate::actors::channels::core::{DeliveryError, commands};

pub(super) const YES: &str = "✅";
pub(super) const NO: &str = "❌";

/// Where a confirmation is shown, under `confirmation:<id>:<room id>`: one room for the
/// member's own confirmation, each parent's room for an escalated one.
#[derive(Debug, Serialize, Deserialize)]
struct ShownConfirmation {
    room_id: OwnedRoomId,
    event_id: OwnedEventId,
    text: String,
}

fn prompt_key(event_id: &str) -> String {
    format!("prompt:{event_id}")
}

/// Show `prompt` and remember where it is; its event id. The reactions follow as parts of
/// their own (`seed_reaction`).
pub(super) async fn send_prompt(
    shared: &Shared,
    conversation: &Conversation,
    prompt: &str,
    confirmation_id: &str,
    reply_to: Option<OwnedEventId>,
    transaction_id: OwnedTransactionId,
) -> Result<String, DeliveryError> {
    let text =
        format!("{prompt}\n\nReact with {YES} to confirm or {NO} to cancel (or reply yes / no).");
    let content = RoomMessageEventContent::notice_plain(&text);
    let event_id = send_message(shared, conversation, content, reply_to, transaction_id).await?;
    let shown = ShownConfirmation {
        room_id: conversation.room_id.clone(),
        event_id: event_id.clone(),
        text: prompt.to_string(),
    };
    let stored = async {
        let value = serde_json::to_string(&shown).unwrap_or_default();
        shared
            .state
            .put_state(
                MATRIX_CHANNEL,
                &shown_key(confirmation_id, conversation.room_id.as_str()),
                &value,
            )
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
        // Shown but not findable: answers would be ignored, so show it again later.
        return Err(DeliveryError::Transient {
            reason: format!(
                "where confirmation {confirmation_id} is shown was not stored: {error}"
            ),
            retry_after: None,
        });
    }
    tracing::debug!(confirmation = confirmation_id, "confirmation shown");
    Ok(event_id.to_string())
}

/// Every place confirmation `confirmation_id` is still shown, with its state key.
async fn shown_everywhere(
    shared: &Shared,
    confirmation_id: &str,
) -> Result<Vec<(String, ShownConfirmation)>, DeliveryError> {
    let found = shown_places(shared.state.as_ref(), MATRIX_CHANNEL, confirmation_id).await?;
    Ok(found
        .into_iter()
        .filter_map(|(key, value)| Some((key, serde_json::from_str(&value).ok()?)))
        .collect())
}

/// One of the two answers, ready to tap, on the prompt of `confirmation_id`.
pub(super) async fn seed_reaction(
    shared: &Shared,
    conversation: &Conversation,
    confirmation_id: &str,
    key: &str,
    transaction_id: OwnedTransactionId,
) -> Result<(), DeliveryError> {
    // Settled meanwhile: nothing to tap any more.
    let Some((_, shown)) = shown_everywhere(shared, confirmation_id)
        .await?
        .into_iter()
        .find(|(_, shown)| shown.room_id == conversation.room_id)
    else {
        return Ok(());
    };
    let room = room(shared, conversation)?;
    let reaction = ReactionEventContent::new(Annotation::new(shown.event_id, key.into()));
    send_event(&room, reaction.into(), transaction_id).await?;
    Ok(())
}

/// Edit each prompt of the confirmation to say `outcome`, in the room it is in, and
/// forget them. An escalated confirmation is shown in each parent's room, while its
/// expiry is told to the child's conversation.
pub(super) async fn close_prompt(
    shared: &Shared,
    confirmation_id: &str,
    outcome: &str,
    transaction_id: OwnedTransactionId,
) -> Result<(), DeliveryError> {
    let shown = shown_everywhere(shared, confirmation_id).await?;
    for (nth, (key, shown)) in shown.into_iter().enumerate() {
        let room = room(
            shared,
            &Conversation {
                room_id: shown.room_id.clone(),
                thread_root: None,
            },
        )?;
        let edited = RoomMessageEventContent::notice_plain(format!("{}\n\n{outcome}", shown.text))
            .make_replacement(ReplacementMetadata::new(shown.event_id.clone(), None));
        // One transaction id per room edited, so a resend is still recognised.
        let transaction = if nth == 0 {
            transaction_id.clone()
        } else {
            OwnedTransactionId::from(format!("{transaction_id}.{nth}"))
        };
        send_event(&room, edited.into(), transaction).await?;
        for key in [key, prompt_key(shown.event_id.as_str())] {
            if let Err(error) = shared.state.delete_state(MATRIX_CHANNEL, &key).await {
                tracing::warn!(confirmation = confirmation_id, %error, "closed confirmation not forgotten");
            }
        }
    }
    Ok(())
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
    // The room the answer was given in (a thread of it counts too).
    let conversation = Conversation {
        room_id: room.room_id().to_owned(),
        thread_root: None,
    };
    let answered = commands::answer(
        &shared.queue,
        member,
        MATRIX_CHANNEL,
        &conversation.conversation_id(),
        confirmation_id,
        approve,
    )
    .await?;
    match answered {
        Ok(close) => Ok(vec![
            FollowUp::Send(close),
            FollowUp::TurnStarted(conversation),
        ]),
        Err(refusal) => {
            tracing::info!(confirmation = confirmation_id, sender, %refusal, "matrix answer ignored");
            Ok(Vec::new())
        }
    }
}
