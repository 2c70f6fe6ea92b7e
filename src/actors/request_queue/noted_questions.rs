//! Questions a running turn asks its member, noted in the database for the other workers
//! of a PostgreSQL database (`ChannelState`, under `questions`): the member's answer may
//! reach any worker (a load balancer, the platform's leader), and one that does not run
//! the conversation must know it answers a question, not start a turn.
//!
//! Such a worker stores the answer like any message and wakes the others; the worker
//! running the turn reads it and hands it to its question (`leases.rs`), and the answer's
//! sender waits for the reply of the turn that asked, as on the worker that asked. A note
//! names the message whose turn asked: once that message is answered the note is stale and
//! ignored, so a note a killed worker left behind never swallows a message.
//!
//! A page shown by another worker shows the question's text; its form stays with the
//! worker that asked.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::RequestQueue;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{ChannelState, InboxStatus, StorageError};

/// The `ChannelState` "channel" the notes live under.
const NOTES: &str = "questions";

#[derive(Serialize, Deserialize)]
struct NotedQuestion {
    /// The message whose turn asked.
    inbox_id: String,
    text: String,
}

/// `member_id` in `conversation`, as one text: a note's key, and the subject of a
/// `WakeTopic::Cancel` (a member id holds no `/`; a conversation key may).
pub(super) fn member_in(conversation: &ConversationKey, member_id: &MemberId) -> String {
    format!("{member_id}/{conversation}")
}

/// The member and conversation `member_in` wrote, if `text` is one.
pub(super) fn read_member_in(text: &str) -> Option<(MemberId, ConversationKey)> {
    let (member, conversation) = text.split_once('/')?;
    Some((member.parse().ok()?, conversation.parse().ok()?))
}

impl RequestQueue {
    /// The notes' store, among workers only.
    fn notes(&self) -> Option<Arc<dyn ChannelState>> {
        self.question_notes.clone()
    }

    /// `member_id` is asked `text` in `conversation` by the turn of message `inbox_id`.
    /// Done when the note is stored (at once when there are no other workers): the
    /// question is shown only then, so a `/cancel` or an answer the member sends to another
    /// worker after seeing it always finds the note.
    pub(super) fn note_question(
        &self,
        conversation: &ConversationKey,
        member_id: &MemberId,
        inbox_id: &str,
        text: &str,
    ) -> impl std::future::Future<Output = ()> + 'static {
        let notes = self.notes();
        let key = member_in(conversation, member_id);
        let note = NotedQuestion {
            inbox_id: inbox_id.to_owned(),
            text: text.to_owned(),
        };
        async move {
            let Some(notes) = notes else { return };
            let Ok(value) = serde_json::to_string(&note) else {
                return;
            };
            if let Err(error) = notes.put_state(NOTES, &key, &value).await {
                tracing::warn!(%error, "question not noted for the other workers");
            }
        }
    }

    /// The question `member_id` was asked in `conversation` is gone (answered, withdrawn,
    /// or its turn ended).
    pub(super) fn unnote_question(&self, conversation: &ConversationKey, member_id: &MemberId) {
        let Some(notes) = self.notes() else { return };
        let key = member_in(conversation, member_id);
        actix::spawn(async move {
            if let Err(error) = notes.delete_state(NOTES, &key).await {
                tracing::debug!(%error, "question note not removed; it goes stale");
            }
        });
    }

    /// Whether a message of `conversation` may answer a question another worker asked:
    /// among workers, for a conversation not run here.
    pub(super) fn may_be_asked_elsewhere(&self, conversation: &ConversationKey) -> bool {
        self.question_notes.is_some() && !self.runs_here(conversation)
    }

    /// The question another worker asks `member_id` in `conversation`, if any: the
    /// message whose turn asked, and the question's text.
    pub(super) fn asked_elsewhere(
        &self,
        conversation: &ConversationKey,
        member_id: &MemberId,
    ) -> impl std::future::Future<Output = Result<Option<(String, String)>, StorageError>> + 'static
    {
        let notes = self
            .notes()
            .filter(|_| self.may_be_asked_elsewhere(conversation));
        let key = member_in(conversation, member_id);
        let inbox = self.inbox.clone();
        async move {
            let Some(notes) = notes else { return Ok(None) };
            let Some(value) = notes.get_state(NOTES, &key).await? else {
                return Ok(None);
            };
            let Ok(note) = serde_json::from_str::<NotedQuestion>(&value) else {
                return Ok(None);
            };
            // Still asking only while the message that asked waits for its answer.
            let asking = inbox.get(&note.inbox_id).await?;
            let open = asking.is_some_and(|record| {
                matches!(
                    record.status,
                    InboxStatus::Accepted | InboxStatus::Suspended
                )
            });
            Ok(open.then_some((note.inbox_id, note.text)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_in_a_conversation_whose_key_holds_a_slash_reads_back_as_written() {
        let conversation: ConversationKey = "http:alice/s1".parse().unwrap();
        let member: MemberId = "alice".parse().unwrap();
        let text = member_in(&conversation, &member);
        assert_eq!(read_member_in(&text), Some((member, conversation)));
        assert_eq!(read_member_in("no member here"), None);
    }
}
