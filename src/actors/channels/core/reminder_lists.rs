//! `/reminders` and cancelling from its list, once for every platform: the member's
//! reminders, each entry shown with a way to cancel it (Telegram's buttons, a numbered
//! reply on Matrix); the platform only renders the list and reads a press or a reply.
//!
//! The list and the cancel come from the scheduler (`ListReminders`, `CancelReminder`,
//! through the `Recipient`s of `ReminderAnswers`, as Done and Snooze go), which answers by
//! `reminders::listing`, the rules the tools use: who sees and cancels what stays in one
//! place, the channels hold no schedules port, and they translate between the platform and
//! messages, as every channel does.
//!
//! The platform notes each list it shows (`list_notes.rs`): for whom it is, its entries
//! and how each ended. A cancel counts only from that member and for an entry on that
//! list, and then only if the rules let them cancel it; what happened is marked in the
//! note, and the list is edited from it (`OutgoingKind::ReminderListChanged`). Both the
//! list and the edit are outbox rows, delivered like every other reply. A press on a list
//! whose note was forgotten asks for a new one.

use super::adapter::{AnswerOutcome, IncomingCancel, PlatformAdapter};
use super::commands::say;
use super::inbound::{ChannelCore, FollowUp};
use super::list_notes::{Ended, NotedList, note_list, noted_list};
use super::reminder_answers::ReminderAnswers;
use crate::actors::channels::ChannelError;
use crate::config::FamilyMember;
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{OutgoingKind, OutgoingMessage};
use crate::reminders::{
    CancelReminder, ListReminders, ListingError, NO_REMINDERS, ReminderListing,
};

/// The most entries one list shows, each with its button: a keyboard of more is a wall.
pub(crate) const MAX_ENTRIES: usize = 20;
/// What a list's lines may take, in UTF-16 units (Telegram's measure): one message holds
/// 4096, and a list with buttons cannot be split.
const LINES_BUDGET: usize = 3_000;
/// A line longer than this is cut: one long reminder does not push the others out.
const MAX_LINE_CHARS: usize = 300;

/// The answer to a press or a reply on a list that is not noted (any more).
pub(crate) const LIST_CLOSED: &str = "This list is no longer open: send /reminders for a new one.";
/// The answer to someone else's press or reply on a member's list.
pub(crate) const NOT_YOUR_LIST: &str = "This list is not yours: send /reminders for your own.";
/// The answer when the cancel could not be done now; it may be asked again.
pub(crate) const CANCEL_FAILED: &str = "Something went wrong; please try again.";

/// `listing` as the message showing it to `member_id` in `conversation`: at most
/// `MAX_ENTRIES` entries within the budget, soonest first, the rest counted.
pub(crate) fn list_message(
    listing: ReminderListing,
    member_id: &MemberId,
    conversation: &ConversationKey,
    reply_to_event: Option<String>,
) -> OutgoingMessage {
    let mut used = 0;
    let mut fits = |line: &str, shown: usize| {
        let cost = line.encode_utf16().count() + 1;
        let fit = shown < MAX_ENTRIES && used + cost <= LINES_BUDGET;
        if fit {
            used += cost;
        }
        fit
    };
    let mut entries = Vec::new();
    let mut left_out = 0;
    for mut entry in listing.schedules {
        entry.line = cut(&entry.line);
        if left_out == 0 && fits(&entry.line, entries.len()) {
            entries.push(entry);
        } else {
            left_out += 1;
        }
    }
    let mut footer = Vec::new();
    for line in listing.waiting {
        if left_out == 0 && fits(&line, 0) {
            footer.push(line);
        } else {
            left_out += 1;
        }
    }
    if left_out > 0 {
        footer.push(format!("…and {left_out} more not shown here."));
    }
    if entries.is_empty() && footer.is_empty() {
        footer.push(NO_REMINDERS.to_string());
    }
    OutgoingMessage {
        conversation: conversation.clone(),
        inbox_id: None,
        text: footer.join("\n"),
        kind: OutgoingKind::ReminderList {
            member_id: member_id.clone(),
            entries,
        },
        reply_to_event,
    }
}

fn cut(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(MAX_LINE_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `/reminders` from `member_id` in `conversation`: their list, answering their command.
pub(crate) async fn list_reply(
    answers: &ReminderAnswers,
    member_id: &MemberId,
    conversation: &ConversationKey,
    reply_to_event: Option<String>,
) -> Result<OutgoingMessage, ChannelError> {
    let listing = answers
        .list
        .send(ListReminders {
            member_id: member_id.clone(),
        })
        .await
        .map_err(|_| ListingError::Stopped)??;
    Ok(list_message(
        listing,
        member_id,
        conversation,
        reply_to_event,
    ))
}

/// The edit showing list `list_event` in `conversation` as noted now.
fn list_changed(conversation: &ConversationKey, list_event: &str) -> OutgoingMessage {
    OutgoingMessage {
        conversation: conversation.clone(),
        inbox_id: None,
        text: String::new(),
        kind: OutgoingKind::ReminderListChanged {
            list_event: list_event.to_string(),
        },
        reply_to_event: None,
    }
}

/// What became of a cancel asked from a list.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// Cancelled now: the list changed.
    Cancelled(String),
    /// The entry fires no more: nothing was cancelled, but the list changed.
    Ended(String),
    /// Nothing changed.
    Refused(String),
    /// It could not be done now; it may be asked again.
    Failed,
}

/// `error` said to the member: a sentence.
fn sentence(error: &ListingError) -> String {
    let text = error.to_string();
    let mut chars = text.chars();
    let first = chars.next().map(|c| c.to_uppercase().collect::<String>());
    format!("{}{}.", first.unwrap_or_default(), chars.as_str())
}

fn not_on_list(schedule_id: i64, list: &NotedList) -> String {
    let listed: Vec<String> = list
        .entries
        .iter()
        .map(|entry| format!("#{}", entry.schedule_id))
        .collect();
    format!(
        "#{schedule_id} is not on this list, which has {}.",
        listed.join(", ")
    )
}

impl<A: PlatformAdapter> ChannelCore<A> {
    /// A cancel asked from a list: who asked (strangers get nothing), whether it was
    /// handled before (then nothing changes), then the verdict, told the platform's way or
    /// in the chat, and the list edited when it changed.
    pub(crate) async fn cancel_from_list(
        &self,
        cancel: IncomingCancel<A::AnswerSource>,
    ) -> Result<Vec<FollowUp>, ChannelError> {
        self.family.refresh().await?;
        let Some(member) = self.adapter.member(&self.family, &cancel.sender) else {
            self.adapter
                .answer_handled(&cancel.source, AnswerOutcome::Stranger)
                .await;
            return Ok(Vec::new());
        };
        // Told what happened when it was handled; Telegram takes one answer to a press.
        if self.seen(&cancel.event_id).await? {
            return Ok(Vec::new());
        }
        let verdict = self.verdict(&member, &cancel).await;
        let (text, refused, changed) = match &verdict {
            Verdict::Cancelled(text) => (text.as_str(), false, true),
            Verdict::Ended(text) => (text.as_str(), true, true),
            Verdict::Refused(text) => (text.as_str(), true, false),
            Verdict::Failed => (CANCEL_FAILED, true, false),
        };
        let mut follow_up = Vec::new();
        let told = self
            .adapter
            .tell_answerer(&cancel.source, text, refused)
            .await;
        if let (false, Some(conversation)) = (told, &cancel.conversation) {
            let reply = say(conversation, text, Some(cancel.event_id.clone()));
            follow_up.push(FollowUp::Send(reply));
        }
        if let (true, Some(conversation), Some(list_event)) =
            (changed, &cancel.conversation, &cancel.list_event)
        {
            follow_up.push(FollowUp::Send(list_changed(conversation, list_event)));
        }
        if verdict != Verdict::Failed {
            self.note_handled(&cancel.event_id).await;
        }
        Ok(follow_up)
    }

    async fn verdict(
        &self,
        member: &FamilyMember,
        cancel: &IncomingCancel<A::AnswerSource>,
    ) -> Verdict {
        let channel = self.adapter.channel();
        let (Some(answers), Some(list_event)) = (&self.reminders, &cancel.list_event) else {
            return Verdict::Refused(LIST_CLOSED.to_string());
        };
        let list = match noted_list(self.state.as_ref(), channel, list_event).await {
            Ok(Some(list)) => list,
            Ok(None) => return Verdict::Refused(LIST_CLOSED.to_string()),
            Err(error) => {
                tracing::warn!(channel, list_event, %error, "reminder list not read");
                return Verdict::Failed;
            }
        };
        if list.member != member.id {
            return Verdict::Refused(NOT_YOUR_LIST.to_string());
        }
        let schedule_id = cancel.schedule_id;
        if !list.lists(schedule_id) {
            return Verdict::Refused(not_on_list(schedule_id, &list));
        }
        let cancelled = answers
            .cancel
            .send(CancelReminder {
                member_id: member.id.clone(),
                schedule_id,
            })
            .await
            .unwrap_or(Err(ListingError::Stopped));
        let (verdict, ended) = match cancelled {
            Ok(cancelled) => (Verdict::Cancelled(cancelled.text), Ended::Cancelled),
            Err(error @ ListingError::NotActive(_)) => {
                (Verdict::Ended(sentence(&error)), Ended::Inactive)
            }
            Err(error @ ListingError::NotVisible(_)) => {
                return Verdict::Refused(sentence(&error));
            }
            Err(error) => {
                tracing::warn!(channel, schedule_id, member = %member.id, %error,
                    "cancel from a reminder list not done");
                return Verdict::Failed;
            }
        };
        self.mark(list_event, list, schedule_id, ended).await;
        verdict
    }

    /// Note that entry `schedule_id` of `list` ended so, for the edit to show.
    async fn mark(&self, list_event: &str, mut list: NotedList, schedule_id: i64, ended: Ended) {
        for entry in &mut list.entries {
            if entry.schedule_id == schedule_id {
                entry.ended = Some(ended);
            }
        }
        let channel = self.adapter.channel();
        if let Err(error) = note_list(self.state.as_ref(), channel, list_event, &list).await {
            // Cancelled all the same; only the list shows it as before.
            tracing::warn!(channel, list_event, %error, "reminder list not marked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::ListedReminder;

    fn alice() -> MemberId {
        "alice".parse().unwrap()
    }

    fn chat() -> ConversationKey {
        ConversationKey::new("telegram", "1001").unwrap()
    }

    fn listing(schedules: usize, line_chars: usize, waiting: usize) -> ReminderListing {
        ReminderListing {
            schedules: (1..=schedules)
                .map(|id| ListedReminder {
                    schedule_id: id as i64,
                    line: format!("#{id} {}", "x".repeat(line_chars)),
                })
                .collect(),
            waiting: (1..=waiting).map(|id| format!("#{id} fired")).collect(),
        }
    }

    fn entries_of(message: &OutgoingMessage) -> Vec<ListedReminder> {
        match &message.kind {
            OutgoingKind::ReminderList { entries, .. } => entries.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_list_shows_at_most_twenty_entries_within_the_budget_and_counts_the_rest() {
        let message = list_message(listing(3, 10, 1), &alice(), &chat(), Some("e-1".into()));
        assert_eq!(entries_of(&message).len(), 3);
        assert_eq!(message.text, "#1 fired");
        assert_eq!(message.reply_to_event.as_deref(), Some("e-1"));

        let message = list_message(listing(25, 10, 2), &alice(), &chat(), None);
        let ids: Vec<i64> = entries_of(&message).iter().map(|e| e.schedule_id).collect();
        assert_eq!(ids, (1..=20).collect::<Vec<_>>());
        assert_eq!(message.text, "…and 7 more not shown here.");

        // Long lines are cut, and the budget holds the rest back.
        let message = list_message(listing(20, 1_000, 0), &alice(), &chat(), None);
        let entries = entries_of(&message);
        assert!(entries.len() < 20, "{}", entries.len());
        assert!(
            entries
                .iter()
                .all(|e| e.line.chars().count() == MAX_LINE_CHARS)
        );
        assert!(entries[0].line.ends_with('…'));
        let shown = NotedList::of(&message).unwrap().text();
        assert!(shown.encode_utf16().count() < 4_096, "{}", shown.len());
        assert_eq!(
            message.text,
            format!("…and {} more not shown here.", 20 - entries.len())
        );
    }

    #[test]
    fn an_empty_list_says_so_and_has_no_entries() {
        let message = list_message(ReminderListing::default(), &alice(), &chat(), None);
        assert!(entries_of(&message).is_empty());
        assert_eq!(message.text, NO_REMINDERS);
        assert_eq!(NotedList::of(&message).unwrap().text(), NO_REMINDERS);
    }

    #[test]
    fn a_number_not_on_the_list_is_told_with_those_that_are() {
        let message = list_message(listing(3, 3, 0), &alice(), &chat(), None);
        let list = NotedList::of(&message).unwrap();
        assert_eq!(
            not_on_list(9, &list),
            "#9 is not on this list, which has #1, #2, #3."
        );
    }

    #[test]
    fn refusals_are_said_as_sentences() {
        assert_eq!(
            sentence(&ListingError::NotVisible(12)),
            "No active reminder #12 of yours."
        );
        assert_eq!(
            sentence(&ListingError::NotActive(12)),
            "#12 is not active any more."
        );
    }
}
