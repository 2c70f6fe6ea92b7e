//! The `/reminders` list on Matrix, which has no buttons: the channel core's list
//! (`core/reminder_lists.rs`) as a notice whose entries are numbered by their schedule
//! ("#12 …"), saying to reply to it with a number. The list is noted under its event id
//! (`core/list_notes.rs`), so a reply to it (the reply relation names the event) is found
//! as one, and edited (`m.replace`) from the note once an entry ended. Which replies count is the core's to
//! decide; this module renders, and reads the number a reply says ("12", "#12",
//! "cancel 12").

use matrix_sdk::ruma::events::room::message::{ReplacementMetadata, RoomMessageEventContent};
use matrix_sdk::ruma::{OwnedEventId, OwnedTransactionId};

use super::rooms::{Conversation, room, send_event, send_message};
use super::{MATRIX_CHANNEL, MatrixAdapter};
use crate::actors::channels::ChannelError;
use crate::actors::channels::core::DeliveryError;
use crate::actors::channels::core::list_notes::{NotedList, list_to_show, note_list, noted_list};
use crate::ports::OutgoingMessage;

/// The list as shown: its text, and how to cancel while an entry is open.
fn shown_text(list: &NotedList) -> String {
    let text = list.text();
    match list.open().next() {
        Some(example) => format!(
            "{text}\n\nTo cancel one, reply to this message with its number (e.g. {example})."
        ),
        None => text,
    }
}

/// Show the list `list_message` holds and note it; its event id. Not noted, replies to it
/// would count for nothing: then it is shown again later (the same transaction id, so the
/// homeserver shows it once).
pub(super) async fn send_list(
    adapter: &MatrixAdapter,
    conversation: &Conversation,
    list_message: &OutgoingMessage,
    reply_to: Option<OwnedEventId>,
    transaction_id: OwnedTransactionId,
) -> Result<String, DeliveryError> {
    let Some(list) = NotedList::of(list_message) else {
        return Err(DeliveryError::Permanent("a list that is no list".into()));
    };
    let content = RoomMessageEventContent::notice_plain(shown_text(&list));
    let event_id = send_message(adapter, conversation, content, reply_to, transaction_id).await?;
    if !list.entries.is_empty() {
        note_list(
            adapter.state.as_ref(),
            MATRIX_CHANNEL,
            event_id.as_str(),
            &list,
        )
        .await
        .map_err(|error| DeliveryError::Transient {
            reason: format!("where reminder list {event_id} is shown was not stored: {error}"),
            retry_after: None,
        })?;
    }
    Ok(event_id.to_string())
}

/// Edit list `list_event` in `conversation`'s room to show it as noted now.
pub(super) async fn edit_list(
    adapter: &MatrixAdapter,
    conversation: &Conversation,
    list_event: &str,
    transaction_id: OwnedTransactionId,
) -> Result<(), DeliveryError> {
    let list = list_to_show(adapter.state.as_ref(), MATRIX_CHANNEL, list_event).await?;
    // Forgotten: nothing is left to show.
    let Some(list) = list else {
        return Ok(());
    };
    let Ok(shown) = OwnedEventId::try_from(list_event) else {
        tracing::warn!(
            list_event,
            "a reminder list's event is not a matrix event id"
        );
        return Ok(());
    };
    let room = room(adapter, &Conversation::room(conversation.room_id.clone()))?;
    let edited = RoomMessageEventContent::notice_plain(shown_text(&list))
        .make_replacement(ReplacementMetadata::new(shown, None));
    send_event(&room, edited.into(), transaction_id).await?;
    Ok(())
}

/// Whether event `event_id` shows a reminder list.
pub(super) async fn is_list(adapter: &MatrixAdapter, event_id: &str) -> Result<bool, ChannelError> {
    Ok(noted_list(adapter.state.as_ref(), MATRIX_CHANNEL, event_id)
        .await?
        .is_some())
}

/// The number a reply to a list says: "12", "#12", "cancel 12", "Cancel #12."; nothing
/// else counts (the member may be saying something to hearth).
pub(super) fn list_number(text: &str) -> Option<i64> {
    let text = text.trim().trim_end_matches('.').to_lowercase();
    let number = text
        .strip_prefix("cancel")
        .map(str::trim_start)
        .unwrap_or(&text);
    let digits = number.strip_prefix('#').unwrap_or(number);
    if digits.is_empty() || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actors::channels::core::list_notes::{Ended, NotedEntry};

    #[test]
    fn a_number_alone_or_after_cancel_is_a_list_s_answer() {
        for (text, number) in [
            ("12", 12),
            (" #12 ", 12),
            ("cancel 12", 12),
            ("Cancel #12.", 12),
            ("CANCEL   7", 7),
        ] {
            assert_eq!(list_number(text), Some(number), "{text:?}");
        }
        for text in [
            "",
            "#",
            "cancel",
            "12 please",
            "-3",
            "+3",
            "1.5",
            "cancel it",
            "twelve",
            "99999999999999999999",
        ] {
            assert_eq!(list_number(text), None, "{text:?}");
        }
    }

    #[test]
    fn the_list_says_how_to_cancel_while_an_entry_is_open() {
        let mut list = NotedList {
            member: "alice".parse().unwrap(),
            entries: vec![NotedEntry {
                schedule_id: 12,
                line: "#12 “call grandma”: Today at 18:00 (Europe/Berlin)".into(),
                ended: None,
            }],
            footer: String::new(),
            noted_at_ms: 0,
        };
        assert_eq!(
            shown_text(&list),
            "#12 “call grandma”: Today at 18:00 (Europe/Berlin)\n\n\
             To cancel one, reply to this message with its number (e.g. 12)."
        );
        list.entries[0].ended = Some(Ended::Cancelled);
        assert_eq!(
            shown_text(&list),
            "#12 “call grandma”: Today at 18:00 (Europe/Berlin) — ❌ cancelled"
        );
    }
}
