//! Where a platform noted a reminder list it shows (`/reminders`), in its `ChannelState`
//! under `reminder-list:<event id>`: for whom the list is, its entries (each its schedule's
//! number and line) and how each ended, and when it was noted. The adapters note a list as
//! they show it and edit it from its note; the core reads the note to decide whether a
//! cancel counts (`reminder_lists.rs`) and marks what happened in it. Notes are forgotten
//! after the time handled events are kept.

use serde::{Deserialize, Serialize};

use super::DeliveryError;
use crate::ids::MemberId;
use crate::ports::{ChannelState, OutgoingKind, OutgoingMessage, StorageError, now_ms};

const LIST_PREFIX: &str = "reminder-list:";

/// How an entry of a list ended, shown after its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ended {
    /// Cancelled from this list.
    Cancelled,
    /// It fires no more (done, cancelled elsewhere).
    Inactive,
}

impl Ended {
    fn mark(self) -> &'static str {
        match self {
            Ended::Cancelled => "❌ cancelled",
            Ended::Inactive => "not active any more",
        }
    }
}

/// One entry of a list: its schedule, its line, and how it ended, once it did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotedEntry {
    pub(crate) schedule_id: i64,
    pub(crate) line: String,
    #[serde(default)]
    pub(crate) ended: Option<Ended>,
}

/// A list a platform shows, as noted under `reminder-list:<event id>`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct NotedList {
    /// Whom it was made for: only they cancel from it.
    pub(crate) member: MemberId,
    pub(crate) entries: Vec<NotedEntry>,
    /// What follows the entries: fired reminders waiting, how many more there are.
    pub(crate) footer: String,
    pub(crate) noted_at_ms: i64,
}

impl NotedList {
    /// The list `message` shows, when it is one.
    pub(crate) fn of(message: &OutgoingMessage) -> Option<NotedList> {
        let OutgoingKind::ReminderList { member_id, entries } = &message.kind else {
            return None;
        };
        Some(NotedList {
            member: member_id.clone(),
            entries: entries
                .iter()
                .map(|entry| NotedEntry {
                    schedule_id: entry.schedule_id,
                    line: entry.line.clone(),
                    ended: None,
                })
                .collect(),
            footer: message.text.clone(),
            noted_at_ms: now_ms(),
        })
    }

    /// The list as plain text: each entry's line, with how it ended, then the footer.
    pub(crate) fn text(&self) -> String {
        let mut lines: Vec<String> = self
            .entries
            .iter()
            .map(|entry| match entry.ended {
                Some(ended) => format!("{} — {}", entry.line, ended.mark()),
                None => entry.line.clone(),
            })
            .collect();
        if !self.footer.is_empty() {
            if !lines.is_empty() {
                lines.push(String::new());
            }
            lines.push(self.footer.clone());
        }
        lines.join("\n")
    }

    /// The entries that may still be cancelled, in order.
    pub(crate) fn open(&self) -> impl Iterator<Item = i64> + '_ {
        self.entries
            .iter()
            .filter(|entry| entry.ended.is_none())
            .map(|entry| entry.schedule_id)
    }

    /// Whether the list has an entry for `schedule_id`, ended or not.
    pub(crate) fn lists(&self, schedule_id: i64) -> bool {
        self.entries
            .iter()
            .any(|entry| entry.schedule_id == schedule_id)
    }
}

fn list_key(list_event: &str) -> String {
    format!("{LIST_PREFIX}{list_event}")
}

/// Note that platform event `list_event` of `channel` shows `list`.
pub(crate) async fn note_list(
    state: &dyn ChannelState,
    channel: &str,
    list_event: &str,
    list: &NotedList,
) -> Result<(), StorageError> {
    let value = serde_json::to_string(list)
        .map_err(|error| StorageError::Corrupt(format!("reminder list note: {error}")))?;
    state
        .put_state(channel, &list_key(list_event), &value)
        .await
}

/// The list platform event `list_event` of `channel` shows, if it is noted.
pub(crate) async fn noted_list(
    state: &dyn ChannelState,
    channel: &str,
    list_event: &str,
) -> Result<Option<NotedList>, StorageError> {
    let Some(value) = state.get_state(channel, &list_key(list_event)).await? else {
        return Ok(None);
    };
    match serde_json::from_str(&value) {
        Ok(list) => Ok(Some(list)),
        Err(error) => {
            // Not written by `note_list`: no list of ours to cancel from.
            tracing::warn!(channel, list_event, %error, "a reminder list's note names no list");
            Ok(None)
        }
    }
}

/// The noted list an edit of `list_event` is to show, for a platform delivering it: storage
/// trouble is a delivery that may pass.
pub(crate) async fn list_to_show(
    state: &dyn ChannelState,
    channel: &str,
    list_event: &str,
) -> Result<Option<NotedList>, DeliveryError> {
    noted_list(state, channel, list_event)
        .await
        .map_err(|error| DeliveryError::Transient {
            reason: format!("cannot read reminder list {list_event}: {error}"),
            retry_after: None,
        })
}

/// Forget the lists of `channel` noted before `before_ms`; how many were forgotten.
pub(crate) async fn forget_lists(
    state: &dyn ChannelState,
    channel: &str,
    before_ms: i64,
) -> Result<usize, StorageError> {
    let mut forgotten = 0;
    for (key, value) in state.list_state(channel, LIST_PREFIX).await? {
        let noted_at = serde_json::from_str::<NotedList>(&value).map(|list| list.noted_at_ms);
        // A value that is no list is no note of ours: gone as well.
        if noted_at.is_ok_and(|at| at >= before_ms) {
            continue;
        }
        state.delete_state(channel, &key).await?;
        forgotten += 1;
    }
    Ok(forgotten)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::in_memory::InMemoryStore;

    fn list(ended: [Option<Ended>; 3], footer: &str) -> NotedList {
        NotedList {
            member: "alice".parse().unwrap(),
            entries: (1..=3)
                .zip(ended)
                .map(|(schedule_id, ended)| NotedEntry {
                    schedule_id,
                    line: format!("#{schedule_id} xxx"),
                    ended,
                })
                .collect(),
            footer: footer.into(),
            noted_at_ms: 1_000,
        }
    }

    #[test]
    fn a_noted_list_shows_how_each_entry_ended_and_offers_only_the_open_ones() {
        let list = list(
            [Some(Ended::Cancelled), None, Some(Ended::Inactive)],
            "#1 fired",
        );
        assert_eq!(
            list.text(),
            "#1 xxx — ❌ cancelled\n#2 xxx\n#3 xxx — not active any more\n\n#1 fired"
        );
        assert_eq!(list.open().collect::<Vec<_>>(), [2]);
        assert!(list.lists(3) && !list.lists(4));
        let round_trip: NotedList =
            serde_json::from_str(&serde_json::to_string(&list).unwrap()).unwrap();
        assert_eq!(round_trip, list);
    }

    #[test]
    fn a_list_message_is_noted_as_its_entries_and_footer() {
        let message = OutgoingMessage {
            conversation: "telegram:1001".parse().unwrap(),
            inbox_id: None,
            text: "No reminders or scheduled tasks.".into(),
            kind: OutgoingKind::ReminderList {
                member_id: "alice".parse().unwrap(),
                entries: Vec::new(),
            },
            reply_to_event: None,
        };
        let noted = NotedList::of(&message).unwrap();
        assert!(noted.entries.is_empty());
        assert_eq!(noted.text(), "No reminders or scheduled tasks.");
        let reply = OutgoingMessage {
            kind: OutgoingKind::Reply,
            ..message
        };
        assert_eq!(NotedList::of(&reply), None);
    }

    #[tokio::test]
    async fn lists_noted_before_the_time_kept_are_forgotten() {
        let store = InMemoryStore::default();
        let old = list([None; 3], "");
        let new = NotedList {
            noted_at_ms: 5_000,
            ..old.clone()
        };
        note_list(&store, "telegram", "1:1", &old).await.unwrap();
        note_list(&store, "telegram", "1:2", &new).await.unwrap();
        store
            .put_state("telegram", "reminder-list:1:3", "not a list")
            .await
            .unwrap();
        assert_eq!(noted_list(&store, "telegram", "1:3").await.unwrap(), None);
        assert_eq!(forget_lists(&store, "telegram", 2_000).await.unwrap(), 2);
        assert_eq!(noted_list(&store, "telegram", "1:1").await.unwrap(), None);
        assert_eq!(
            noted_list(&store, "telegram", "1:2").await.unwrap(),
            Some(new)
        );
    }
}
