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
use crate::ids::PromptId;
use crate::ports::AnswerRefused;

const DATA_PREFIX: &str = "hc:";

/// What a prompt's button carries as its callback data: which prompt (a confirmation, a
/// fired reminder), and whether it is the first button (approve, Done), written
/// `hc:<prompt id>:y|n`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ButtonPress {
    prompt_id: PromptId,
    approve: bool,
}

/// Callback data that is not one of hearth's prompt buttons.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("callback data {0:?} is not a prompt's button")]
struct NotAConfirmationButton(String);

impl fmt::Display for ButtonPress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let answer = if self.approve { "y" } else { "n" };
        write!(formatter, "{DATA_PREFIX}{}:{answer}", self.prompt_id)
    }
}

impl FromStr for ButtonPress {
    type Err = NotAConfirmationButton;

    fn from_str(data: &str) -> Result<Self, Self::Err> {
        let not_ours = || NotAConfirmationButton(data.to_owned());
        let rest = data.strip_prefix(DATA_PREFIX).ok_or_else(not_ours)?;
        // The answer is what follows the last ':' (a prompt id ends with none).
        let (id, answer) = rest.rsplit_once(':').ok_or_else(not_ours)?;
        let approve = match answer {
            "y" => true,
            "n" => false,
            _ => return Err(not_ours()),
        };
        Ok(ButtonPress {
            prompt_id: id.parse().map_err(|_| not_ours())?,
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

/// A confirmation's ✅ Confirm / ❌ Cancel; a fired reminder's ✅ Done / ⏰ Snooze.
fn keyboard(prompt_id: &PromptId, snooze_minutes: u64) -> InlineKeyboardMarkup {
    let (yes, no) = match prompt_id {
        PromptId::Reminder(_) => (
            "✅ Done".to_string(),
            format!("⏰ Snooze {snooze_minutes} min"),
        ),
        PromptId::Confirmation(_) => ("✅ Confirm".to_string(), "❌ Cancel".to_string()),
    };
    let button = |label: String, approve| {
        let press = ButtonPress {
            prompt_id: prompt_id.clone(),
            approve,
        };
        InlineKeyboardButton::callback(label, press.to_string())
    };
    InlineKeyboardMarkup::new([[button(yes, true), button(no, false)]])
}

/// Show `prompt` with the two buttons and remember where it is; the message's event id.
pub(super) async fn send_prompt(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    prompt: &str,
    prompt_id: &PromptId,
    reply_to: Option<MessageId>,
) -> Result<String, DeliveryError> {
    // Plain text: a prompt shows a tool's arguments as they are, markup included.
    let sent = message(adapter, target, prompt, reply_to)
        .reply_markup(keyboard(prompt_id, adapter.snooze_minutes))
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
            &shown_key(prompt_id, &target.chat_id.to_string()),
            &value,
        )
        .await
    {
        tracing::warn!(prompt = %prompt_id, %error, "where a prompt is shown was not stored");
    }
    Ok(event_id(target.chat_id, sent.id))
}

/// Edit every message showing the confirmation to say `outcome`, without buttons, and
/// forget them.
pub(super) async fn close_prompt(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    prompt_id: &PromptId,
    outcome: &str,
) -> Result<(), DeliveryError> {
    let shown = shown_places(adapter.state.as_ref(), TELEGRAM_CHANNEL, prompt_id).await?;
    // None left: closed already (a press and the expiry crossed), or never shown.
    for (key, value) in shown {
        if let Ok(shown) = serde_json::from_str::<ShownConfirmation>(&value) {
            edit_closed(adapter, target, prompt_id, &shown, outcome).await?;
        }
        if let Err(error) = adapter.state.delete_state(TELEGRAM_CHANNEL, &key).await {
            tracing::warn!(prompt = %prompt_id, %error, "closed prompt not forgotten");
        }
    }
    Ok(())
}

/// Edit one message showing a confirmation to say `outcome`, without buttons.
async fn edit_closed(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    prompt_id: &PromptId,
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
            tracing::warn!(chat = target.chat_id, prompt = %prompt_id, %error,
                "confirmation message not updated");
        }
    }
    Ok(())
}

/// A press as an answer: the confirmation and whether it approves; `None` for data that is
/// not a confirmation's (the press is told so).
pub(super) fn answer_of(query: &CallbackQuery) -> Option<(PromptId, bool)> {
    let press: ButtonPress = query.data.as_deref()?.parse().ok()?;
    Some((press.prompt_id, press.approve))
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
        AnswerOutcome::Done => ("Done.", false),
        AnswerOutcome::Snoozed => ("Snoozed.", false),
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

/// Answer a press with `text`, as an alert when `show_alert`.
pub(super) async fn answer_press(
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
        let id: PromptId = "01234567-89ab-cdef-0123-456789abcdef".parse().unwrap();
        let markup = keyboard(&id, 10);
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
            prompt_id: id.clone(),
            approve,
        };
        assert_eq!(data[0].parse(), Ok(press(true)));
        assert_eq!(data[1].parse(), Ok(press(false)));
        let not_buttons = [
            "hc:abc:maybe",
            "other",
            "hc:a b:y",
            "hc::y",
            "hc:y",
            "hc:reminder:1:y",
            "hc:reminder:1.x:n",
        ];
        for not_ours in not_buttons {
            assert_eq!(
                not_ours.parse::<ButtonPress>(),
                Err(NotAConfirmationButton(not_ours.into()))
            );
        }
    }

    #[test]
    fn a_fired_reminder_has_done_and_snooze_whose_data_names_the_occurrence() {
        let firing = crate::ids::FiringId {
            schedule_id: i64::MAX,
            due_ms: i64::MAX,
        };
        let prompt = PromptId::Reminder(firing);
        let markup = keyboard(&prompt, 15);
        let buttons = &markup.inline_keyboard[0];
        assert_eq!(buttons[0].text, "✅ Done");
        assert_eq!(buttons[1].text, "⏰ Snooze 15 min");
        let teloxide::types::InlineKeyboardButtonKind::CallbackData(data) = &buttons[1].kind else {
            panic!("{:?}", buttons[1].kind);
        };
        assert!(data.len() <= 64, "{data}");
        assert_eq!(
            data.parse(),
            Ok(ButtonPress {
                prompt_id: prompt,
                approve: false
            })
        );
    }
}
