//! Confirmations in Matrix's idiom: the prompt is a notice the bot seeds with ✅ and ❌
//! reactions; the member asked answers by reacting (or by replying "yes" / "no" to the
//! prompt; the channel core decides whose answer counts). The outcome is edited into the
//! prompt (`m.replace`). Which event shows which confirmation is kept in `ChannelState`,
//! so answers and expiry still find it after a restart.

use matrix_sdk::ruma::events::reaction::ReactionEventContent;
use matrix_sdk::ruma::events::relation::Annotation;
use matrix_sdk::ruma::events::room::message::{ReplacementMetadata, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, OwnedTransactionId};
use serde::{Deserialize, Serialize};

use super::rooms::{Conversation, room, send_event, send_message};
use super::{MATRIX_CHANNEL, MatrixAdapter};
use crate::actors::channels::ChannelError;
use crate::actors::channels::core::DeliveryError;
use crate::actors::channels::core::prompts::{shown_key, shown_places};
use crate::ids::PromptId;

pub(super) const YES: &str = "✅";
pub(super) const NO: &str = "❌";
/// A fired reminder's second choice (its first is ✅ Done).
pub(super) const SNOOZE: &str = "⏰";

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
    adapter: &MatrixAdapter,
    conversation: &Conversation,
    prompt: &str,
    prompt_id: &PromptId,
    reply_to: Option<OwnedEventId>,
    transaction_id: OwnedTransactionId,
) -> Result<String, DeliveryError> {
    let text = if matches!(prompt_id, PromptId::Reminder(_)) {
        format!(
            "{prompt}\n\nReact with {YES} when done or {SNOOZE} to snooze (or reply done / snooze)."
        )
    } else {
        format!("{prompt}\n\nReact with {YES} to confirm or {NO} to cancel (or reply yes / no).")
    };
    let content = RoomMessageEventContent::notice_plain(&text);
    let event_id = send_message(adapter, conversation, content, reply_to, transaction_id).await?;
    let shown = ShownConfirmation {
        room_id: conversation.room_id.clone(),
        event_id: event_id.clone(),
        text: prompt.to_string(),
    };
    let stored = async {
        let value = serde_json::to_string(&shown).unwrap_or_default();
        adapter
            .state
            .put_state(
                MATRIX_CHANNEL,
                &shown_key(prompt_id, conversation.room_id.as_str()),
                &value,
            )
            .await?;
        adapter
            .state
            .put_state(
                MATRIX_CHANNEL,
                &prompt_key(event_id.as_str()),
                &prompt_id.to_string(),
            )
            .await
    };
    if let Err(error) = stored.await {
        // Shown but not findable: answers would be ignored, so show it again later.
        return Err(DeliveryError::Transient {
            reason: format!("where prompt {prompt_id} is shown was not stored: {error}"),
            retry_after: None,
        });
    }
    tracing::debug!(prompt = %prompt_id, "prompt shown");
    Ok(event_id.to_string())
}

/// Every place prompt `prompt_id` is still shown, with its state key.
async fn shown_everywhere(
    adapter: &MatrixAdapter,
    prompt_id: &PromptId,
) -> Result<Vec<(String, ShownConfirmation)>, DeliveryError> {
    let found = shown_places(adapter.state.as_ref(), MATRIX_CHANNEL, prompt_id).await?;
    Ok(found
        .into_iter()
        .filter_map(|(key, value)| Some((key, serde_json::from_str(&value).ok()?)))
        .collect())
}

/// One of the two answers, ready to tap, on prompt `prompt_id`.
pub(super) async fn seed_reaction(
    adapter: &MatrixAdapter,
    conversation: &Conversation,
    prompt_id: &PromptId,
    key: &str,
    transaction_id: OwnedTransactionId,
) -> Result<(), DeliveryError> {
    // Settled meanwhile: nothing to tap any more.
    let Some((_, shown)) = shown_everywhere(adapter, prompt_id)
        .await?
        .into_iter()
        .find(|(_, shown)| shown.room_id == conversation.room_id)
    else {
        return Ok(());
    };
    let room = room(adapter, conversation)?;
    let reaction = ReactionEventContent::new(Annotation::new(shown.event_id, key.into()));
    send_event(&room, reaction.into(), transaction_id).await?;
    Ok(())
}

/// Edit each copy of the prompt to say `outcome`, in the room it is in, and
/// forget them. An escalated confirmation is shown in each parent's room, while its
/// expiry is told to the child's conversation.
pub(super) async fn close_prompt(
    adapter: &MatrixAdapter,
    prompt_id: &PromptId,
    outcome: &str,
    transaction_id: OwnedTransactionId,
) -> Result<(), DeliveryError> {
    let shown = shown_everywhere(adapter, prompt_id).await?;
    for (nth, (key, shown)) in shown.into_iter().enumerate() {
        let room = room(adapter, &Conversation::room(shown.room_id.clone()))?;
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
            if let Err(error) = adapter.state.delete_state(MATRIX_CHANNEL, &key).await {
                tracing::warn!(prompt = %prompt_id, %error, "closed prompt not forgotten");
            }
        }
    }
    Ok(())
}

/// The prompt (a confirmation, a fired reminder) shown by event `event_id`, if it is still
/// open.
pub(super) async fn prompt_of(
    adapter: &MatrixAdapter,
    event_id: &str,
) -> Result<Option<PromptId>, ChannelError> {
    let noted = adapter
        .state
        .get_state(MATRIX_CHANNEL, &prompt_key(event_id))
        .await?;
    Ok(noted.and_then(|noted| match noted.parse() {
        Ok(prompt_id) => Some(prompt_id),
        // Noted by something else than `send_prompt`: no prompt of ours to answer.
        Err(error) => {
            tracing::warn!(event_id, %error, "a prompt's note names no prompt");
            None
        }
    }))
}

/// What a reaction's `key` answers: approve or Done (✅, ✔, 👍), decline or Snooze (❌, ✖,
/// 👎, ⏰), or nothing.
pub(super) fn reaction_answer(key: &str) -> Option<bool> {
    // Some clients add a variation selector to the emoji.
    match key.trim_end_matches('\u{fe0f}') {
        YES | "✔" | "👍" => Some(true),
        NO | "✖" | "👎" | SNOOZE => Some(false),
        _ => None,
    }
}

/// "yes" / "no" (and a few words like them; "done" / "snooze" for a reminder) in reply to a
/// prompt: its answer.
pub(super) fn yes_or_no(text: &str) -> Option<bool> {
    match text
        .trim()
        .trim_end_matches(['.', '!'])
        .to_lowercase()
        .as_str()
    {
        "yes" | "y" | "ok" | "confirm" | "done" | "✅" => Some(true),
        "no" | "n" | "cancel" | "snooze" | "later" | "❌" | "⏰" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yes_and_no_in_a_few_words_and_reactions() {
        assert_eq!(yes_or_no("Yes!"), Some(true));
        assert_eq!(yes_or_no("no."), Some(false));
        assert_eq!(yes_or_no("maybe"), None);
        assert_eq!(reaction_answer("✅\u{fe0f}"), Some(true));
        assert_eq!(reaction_answer("👎"), Some(false));
        assert_eq!(reaction_answer("🎉"), None);
        assert_eq!(yes_or_no("Done"), Some(true));
        assert_eq!(yes_or_no("snooze"), Some(false));
        assert_eq!(reaction_answer("⏰"), Some(false));
    }
}
