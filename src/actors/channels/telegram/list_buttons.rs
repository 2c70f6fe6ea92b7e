//! The `/reminders` list on Telegram: the channel core's list (`core/reminder_lists.rs`)
//! as one plain-text message with a "❌ Cancel #N" button under it for each entry still
//! open. A button's callback data is `hr:<schedule id>` (`CancelPress`, read by one
//! parser, beside the prompts' `hc:`), well within Telegram's 64 bytes. The list is noted
//! under its message's event id (`core/list_notes.rs`) and edited from that note once an
//! entry ended (its mark shown, its button gone). The core decides what a press does; this module renders,
//! reads the data and answers the press with what the core says.

use std::fmt;
use std::str::FromStr;

use teloxide::payloads::{EditMessageTextSetters, SendMessageSetters};
use teloxide::requests::Requester;
use teloxide::types::{
    CallbackQuery, ChatId, InlineKeyboardButton, InlineKeyboardMarkup, MessageId,
};
use teloxide::{ApiError, RequestError};

use super::api::{delivery_error, message};
use super::buttons::answer_press;
use super::chat::{ChatTarget, MessageEvent, event_id};
use super::{TELEGRAM_CHANNEL, TelegramAdapter};
use crate::actors::channels::core::DeliveryError;
use crate::actors::channels::core::list_notes::{NotedList, list_to_show, note_list};
use crate::ports::OutgoingMessage;

const DATA_PREFIX: &str = "hr:";
/// Telegram shows at most 200 characters in the answer to a press.
const MAX_ANSWER_CHARS: usize = 200;

/// What a list's cancel button carries: the entry's schedule, written `hr:<schedule id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CancelPress {
    pub(super) schedule_id: i64,
}

/// Callback data that is not a reminder list's cancel button.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("callback data {0:?} is not a reminder list's cancel button")]
pub(super) struct NotACancelButton(String);

impl fmt::Display for CancelPress {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{DATA_PREFIX}{}", self.schedule_id)
    }
}

impl FromStr for CancelPress {
    type Err = NotACancelButton;

    fn from_str(data: &str) -> Result<Self, Self::Err> {
        let not_ours = || NotACancelButton(data.to_owned());
        let number = data.strip_prefix(DATA_PREFIX).ok_or_else(not_ours)?;
        // Digits only: no sign, no spaces, nothing a schedule id is not written with.
        if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(not_ours());
        }
        Ok(CancelPress {
            schedule_id: number.parse().map_err(|_| not_ours())?,
        })
    }
}

/// One "❌ Cancel #N" button a row, for each entry still open; none once all ended.
fn keyboard(list: &NotedList) -> InlineKeyboardMarkup {
    let rows: Vec<Vec<InlineKeyboardButton>> = list
        .open()
        .map(|schedule_id| {
            let press = CancelPress { schedule_id };
            vec![InlineKeyboardButton::callback(
                format!("❌ Cancel #{schedule_id}"),
                press.to_string(),
            )]
        })
        .collect();
    InlineKeyboardMarkup::new(rows)
}

/// Show the list `list_message` holds, with its buttons, and note it; the message's event
/// id.
pub(super) async fn send_list(
    adapter: &TelegramAdapter,
    target: ChatTarget,
    list_message: &OutgoingMessage,
    reply_to: Option<MessageId>,
) -> Result<String, DeliveryError> {
    let Some(list) = NotedList::of(list_message) else {
        return Err(DeliveryError::Permanent("a list that is no list".into()));
    };
    // Plain text: a reminder's words are shown as they were written.
    let mut request = message(adapter, target, &list.text(), reply_to);
    if list.open().next().is_some() {
        request = request.reply_markup(keyboard(&list));
    }
    let sent = request.await.map_err(delivery_error)?;
    let shown = event_id(target.chat_id, sent.id);
    if !list.entries.is_empty()
        && let Err(error) = note_list(adapter.state.as_ref(), TELEGRAM_CHANNEL, &shown, &list).await
    {
        // Shown all the same; its buttons answer that it is no longer open.
        tracing::warn!(list = %shown, %error, "where a reminder list is shown was not stored");
    }
    Ok(shown)
}

/// Edit list `list_event` to show it as noted now: how each entry ended, the buttons of
/// the open ones only.
pub(super) async fn edit_list(
    adapter: &TelegramAdapter,
    list_event: &str,
) -> Result<(), DeliveryError> {
    let Ok(shown) = list_event.parse::<MessageEvent>() else {
        tracing::warn!(
            list_event,
            "a reminder list's event is not a telegram message"
        );
        return Ok(());
    };
    let list = list_to_show(adapter.state.as_ref(), TELEGRAM_CHANNEL, list_event).await?;
    // Forgotten: nothing is left to show.
    let Some(list) = list else {
        return Ok(());
    };
    let edited = adapter
        .bot
        .edit_message_text(ChatId(shown.chat_id), shown.message_id, list.text())
        .reply_markup(keyboard(&list))
        .await;
    match edited {
        Ok(_) => Ok(()),
        // Edited already (a resend after a restart, a second cancel shown by the first).
        Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
        Err(error) => {
            let error = delivery_error(error);
            if matches!(error, DeliveryError::Transient { .. }) {
                return Err(error);
            }
            tracing::warn!(list = list_event, %error, "reminder list not updated");
            Ok(())
        }
    }
}

/// The schedule a press cancels, when its data is a list's cancel button.
pub(super) fn cancel_of(query: &CallbackQuery) -> Option<i64> {
    let press: CancelPress = query.data.as_deref()?.parse().ok()?;
    Some(press.schedule_id)
}

/// The list a press was made on: its message's event id.
pub(super) fn list_of(query: &CallbackQuery) -> Option<String> {
    let shown = query.message.as_ref()?;
    Some(event_id(shown.chat().id.0, shown.id()))
}

/// Answer a press on a list with `text`: a short notice when it counted, an alert when
/// nothing changed.
pub(super) async fn tell_presser(
    adapter: &TelegramAdapter,
    query: &CallbackQuery,
    text: &str,
    refused: bool,
) {
    let text = if text.chars().count() > MAX_ANSWER_CHARS {
        let mut cut: String = text.chars().take(MAX_ANSWER_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        text.to_string()
    };
    answer_press(adapter, query, &text, refused).await;
}

#[cfg(test)]
mod tests {
    use teloxide::types::InlineKeyboardButtonKind;

    use super::*;
    use crate::actors::channels::core::list_notes::{Ended, NotedEntry};

    fn data(button: &InlineKeyboardButton) -> &str {
        match &button.kind {
            InlineKeyboardButtonKind::CallbackData(data) => data,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_cancel_button_carries_the_schedule_only_within_telegram_s_limit() {
        let press = CancelPress {
            schedule_id: i64::MAX,
        };
        let written = press.to_string();
        assert_eq!(written, format!("hr:{}", i64::MAX));
        assert!(written.len() <= 64, "{written}");
        assert_eq!(written.parse(), Ok(press));
        assert_eq!("hr:12".parse(), Ok(CancelPress { schedule_id: 12 }));
        for not_ours in [
            "hr:",
            "hr:-1",
            "hr:+1",
            "hr: 1",
            "hr:1x",
            "hr:99999999999999999999",
            "hc:1:y",
            "12",
        ] {
            assert_eq!(
                not_ours.parse::<CancelPress>(),
                Err(NotACancelButton(not_ours.into())),
                "{not_ours}"
            );
        }
    }

    #[test]
    fn only_the_open_entries_have_a_button() {
        let entry = |schedule_id, ended| NotedEntry {
            schedule_id,
            line: format!("#{schedule_id}"),
            ended,
        };
        let list = NotedList {
            member: "alice".parse().unwrap(),
            entries: vec![
                entry(3, None),
                entry(7, Some(Ended::Cancelled)),
                entry(12, None),
            ],
            footer: String::new(),
            noted_at_ms: 0,
        };
        let markup = keyboard(&list);
        let rows: Vec<(&str, &str)> = markup
            .inline_keyboard
            .iter()
            .map(|row| (row[0].text.as_str(), data(&row[0])))
            .collect();
        assert_eq!(rows, [("❌ Cancel #3", "hr:3"), ("❌ Cancel #12", "hr:12")]);
        let all_ended = NotedList {
            entries: vec![entry(3, Some(Ended::Inactive))],
            ..list
        };
        assert!(keyboard(&all_ended).inline_keyboard.is_empty());
    }
}
