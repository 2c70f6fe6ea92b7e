//! Confirmations as messages with ✅ Confirm / ❌ Cancel buttons (the channel core delivers
//! and closes them through the outbox, and answers a press as the person who pressed).
//!
//! The callback data is `hc:<confirmation id>:y|n`: an opaque id, never the arguments.
//! Which message shows which confirmation is kept in `ChannelState`, so the buttons can
//! be taken away on expiry even after a restart. The queue decides who may answer and
//! whether it is still open; this module only turns its verdict into Telegram's idiom.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use teloxide::payloads::{AnswerCallbackQuerySetters, EditMessageTextSetters, SendMessageSetters};
use teloxide::requests::Requester;
use teloxide::types::{
    CallbackQuery, ChatId, InlineKeyboardButton, InlineKeyboardMarkup, MessageId,
};
use teloxide::{ApiError, RequestError};

use super::api::{QUICK_ATTEMPTS, delivery_error, message, with_retries};
use super::chat::{ChatTarget, event_id};
use super::{TELEGRAM_CHANNEL, TelegramAdapter};
use crate::actors::channels::core::prompts::{shown_key, shown_places};
use crate::actors::channels::core::{AnswerOutcome, DeliveryError};
use crate::ids::ConfirmationId;
use crate::ports::AnswerRefused;

const DATA_PREFIX: &str = "hc:";

/// What a confirmation's button carries as its callback data: which confirmation, and
/// whether it approves, written `hc:<confirmation id>:y|n`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ButtonPress {
    confirmation_id: ConfirmationId,
    approve: bool,
}

/// Callback data that is not one of hearth's confirmation buttons.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("callback data {0:?} is not a confirmation's button")]
struct NotAConfirmationButton(String);

impl fmt::Display for ButtonPress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let answer = if self.approve { "y" } else { "n" };
        write!(formatter, "{DATA_PREFIX}{}:{answer}", self.confirmation_id)
    }
}

impl FromStr for ButtonPress {
    type Err = NotAConfirmationButton;

    fn from_str(data: &str) -> Result<Self, Self::Err> {
        let not_ours = || NotAConfirmationButton(data.to_owned());
        let rest = data.strip_prefix(DATA_PREFIX).ok_or_else(not_ours)?;
        // A confirmation id holds no ':', so the answer is what follows the last one.
        let (id, answer) = rest.rsplit_once(':').ok_or_else(not_ours)?;
        let approve = match answer {
            "y" => true,
            "n" => false,
            _ => return Err(not_ours()),
        };
        Ok(ButtonPress {
            confirmation_id: id.parse().map_err(|_| not_ours())?,
            approve,
        })
    }
}

/// Where a confirmation is shown, in `ChannelState` under `confirmation:<id>:<chat>`: one
/// chat for the member's own confirmation, each parent's chat for an escalated one.
#[derive(Debug, Serialize, Deserialize)]
struct ShownConfirmation {
    chat_id: i64,
    message_id: i32,
    text: String,
}

fn keyboard(confirmation_id: &ConfirmationId) -> InlineKeyboardMarkup {
    let button = |label: &str, approve| {
        let press = ButtonPress {
            confirmation_id: confirmation_id.clone(),
            approve,
        };
        InlineKeyboardButton::callback(label, press.to_string())
    };
    InlineKeyboardMarkup::new([[button("✅ Confirm", true), button("❌ Cancel", false)]])
}

/// Show `prompt` with the two buttons and remember where it is; the message's event id.
pub(super) async fn send_prompt(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    prompt: &str,
    confirmation_id: &ConfirmationId,
    reply_to: Option<MessageId>,
) -> Result<String, DeliveryError> {
    // Plain text: a prompt shows a tool's arguments as they are, markup included.
    let sent = message(adapter, target, prompt, reply_to)
        .reply_markup(keyboard(confirmation_id))
        .await
        .map_err(delivery_error)?;
    let shown = ShownConfirmation {
        chat_id: target.chat_id,
        message_id: sent.id.0,
        text: prompt.to_string(),
    };
    let value = serde_json::to_string(&shown).unwrap_or_default();
    if let Err(error) = adapter
        .state
        .put_state(
            TELEGRAM_CHANNEL,
            &shown_key(confirmation_id, &target.chat_id.to_string()),
            &value,
        )
        .await
    {
        tracing::warn!(confirmation = %confirmation_id, %error, "where a confirmation is shown was not stored");
    }
    Ok(event_id(target.chat_id, sent.id))
}

/// Edit every message showing the confirmation to say `outcome`, without buttons, and
/// forget them.
pub(super) async fn close_prompt(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    confirmation_id: &ConfirmationId,
    outcome: &str,
) -> Result<(), DeliveryError> {
    let shown = shown_places(adapter.state.as_ref(), TELEGRAM_CHANNEL, confirmation_id).await?;
    // None left: closed already (a press and the expiry crossed), or never shown.
    for (key, value) in shown {
        if let Ok(shown) = serde_json::from_str::<ShownConfirmation>(&value) {
            edit_closed(adapter, target, confirmation_id, &shown, outcome).await?;
        }
        if let Err(error) = adapter.state.delete_state(TELEGRAM_CHANNEL, &key).await {
            tracing::warn!(confirmation = %confirmation_id, %error, "closed confirmation not forgotten");
        }
    }
    Ok(())
}

/// Edit one message showing a confirmation to say `outcome`, without buttons.
async fn edit_closed(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    confirmation_id: &ConfirmationId,
    shown: &ShownConfirmation,
    outcome: &str,
) -> Result<(), DeliveryError> {
    let text = format!("{}\n\n{outcome}", shown.text);
    let edited = adapter
        .bot
        .edit_message_text(ChatId(shown.chat_id), MessageId(shown.message_id), &text)
        .reply_markup(InlineKeyboardMarkup::default())
        .await;
    match edited {
        Ok(_) => {}
        // Edited already (a resend after a restart): nothing is left to do.
        Err(RequestError::Api(ApiError::MessageNotModified)) => {}
        Err(error) => {
            let error = delivery_error(error);
            if matches!(error, DeliveryError::Transient { .. }) {
                return Err(error);
            }
            tracing::warn!(chat = target.chat_id, confirmation = %confirmation_id, %error,
                "confirmation message not updated");
        }
    }
    Ok(())
}

/// A press as an answer: the confirmation and whether it approves; `None` for data that is
/// not a confirmation's (the press is told so).
pub(super) fn answer_of(query: &CallbackQuery) -> Option<(ConfirmationId, bool)> {
    let press: ButtonPress = query.data.as_deref()?.parse().ok()?;
    Some((press.confirmation_id, press.approve))
}

/// Answer the press (Telegram shows a spinner on the button until then): a short notice
/// when it counted, an alert saying why when it did not.
pub(super) async fn acknowledge_press(
    adapter: &TelegramAdapter,
    query: &CallbackQuery,
    outcome: AnswerOutcome,
) {
    let (text, show_alert) = match outcome {
        AnswerOutcome::Approved => ("Confirmed.", false),
        AnswerOutcome::Declined => ("Cancelled.", false),
        AnswerOutcome::Refused(refusal) => (
            match refusal {
                AnswerRefused::NotYours => "This is not for you.",
                AnswerRefused::AlreadyAnswered => "This was already answered.",
                AnswerRefused::InProgress => "Already answered: I'm working on it.",
                AnswerRefused::Expired => "This request has expired.",
                AnswerRefused::Unknown => "This request is no longer open.",
            },
            true,
        ),
        AnswerOutcome::Stranger => ("This is not for you.", true),
        AnswerOutcome::Failed => ("Something went wrong; please press again.", true),
    };
    answer_press(adapter, query, text, show_alert).await;
}

/// A press of a button that is not one of hearth's confirmations.
pub(super) async fn not_mine(adapter: &TelegramAdapter, query: &CallbackQuery) {
    answer_press(adapter, query, "This button is not mine.", true).await;
}

async fn answer_press(
    adapter: &TelegramAdapter,
    query: &CallbackQuery,
    text: &str,
    show_alert: bool,
) {
    let answered = with_retries("answerCallbackQuery", QUICK_ATTEMPTS, || {
        adapter
            .bot
            .answer_callback_query(query.id.clone())
            .text(text)
            .show_alert(show_alert)
    })
    .await;
    if let Err(error) = answered {
        tracing::debug!(%error, "button press not acknowledged");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn callback_data_is_the_id_and_the_answer_only() {
        let id: ConfirmationId = "01234567-89ab-cdef-0123-456789abcdef".parse().unwrap();
        let markup = keyboard(&id);
        let data: Vec<String> = markup.inline_keyboard[0]
            .iter()
            .map(|button| match &button.kind {
                teloxide::types::InlineKeyboardButtonKind::CallbackData(data) => data.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        // Telegram allows at most 64 bytes of callback data.
        assert!(data.iter().all(|data| data.len() <= 64), "{data:?}");
        assert_eq!(data[0], "hc:01234567-89ab-cdef-0123-456789abcdef:y");
        let press = |approve| ButtonPress {
            confirmation_id: id.clone(),
            approve,
        };
        assert_eq!(data[0].parse(), Ok(press(true)));
        assert_eq!(data[1].parse(), Ok(press(false)));
        for not_ours in ["hc:abc:maybe", "other", "hc:a b:y", "hc::y", "hc:y"] {
            assert_eq!(
                not_ours.parse::<ButtonPress>(),
                Err(NotAConfirmationButton(not_ours.into()))
            );
        }
    }
}
