//! What a member may see of the family's reminders and scheduled tasks, how they are
//! listed, and cancelling one: the one place these rules live, called by the
//! `list_reminders` and `cancel_reminder` tools, by the scheduler for the channels'
//! `/reminders` and its cancel buttons or numbered replies, by `GET /api/reminders` and by
//! the web page's `/reminders`.
//!
//! A member sees and cancels their own and those they set; a parent sees and cancels the
//! family's. One a member may not see is as if it did not exist.

use chrono::{DateTime, Utc};

use super::texts::schedule_line;
use crate::config::{FamilyMember, FamilyRole};
use crate::family::Family;
use crate::ids::MemberId;
use crate::local_time::{ZoneName, phrasing};
use crate::ports::{Firing, ListedReminder, Schedule, ScheduleStatus, Schedules, StorageError};

/// What a list with nothing in it says.
pub const NO_REMINDERS: &str = "No reminders or scheduled tasks.";

/// Why a list or a cancel was not done.
#[derive(Debug, thiserror::Error)]
pub enum ListingError {
    /// Unknown, or not the member's to see: as if it did not exist.
    #[error("no active reminder #{0} of yours")]
    NotVisible(i64),
    /// The member may see it, but it fires no more (done, cancelled).
    #[error("#{0} is not active any more")]
    NotActive(i64),
    #[error("{0} is not a family member")]
    NotAMember(MemberId),
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("the scheduler is not running")]
    Stopped,
}

/// What a member's list holds: the schedules they may see, soonest first, each its number
/// and its line (`schedule_line`), and their fired reminders waiting for Done or Snooze.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReminderListing {
    pub schedules: Vec<ListedReminder>,
    pub waiting: Vec<String>,
}

impl ReminderListing {
    /// The list as lines, or `NO_REMINDERS`.
    pub fn text(&self) -> String {
        if self.schedules.is_empty() && self.waiting.is_empty() {
            return NO_REMINDERS.to_string();
        }
        self.schedules
            .iter()
            .map(|listed| listed.line.as_str())
            .chain(self.waiting.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Whether `member` may see (and so cancel) `schedule`: theirs, set by them, or any when
/// they are a parent.
pub fn may_see(member: &FamilyMember, schedule: &Schedule) -> bool {
    member.role == FamilyRole::Parent
        || schedule.member_id == member.id
        || schedule.set_by == member.id
}

/// The active schedules `member` may see, soonest first.
pub async fn visible(
    schedules: &dyn Schedules,
    member: &FamilyMember,
) -> Result<Vec<Schedule>, StorageError> {
    if member.role == FamilyRole::Parent {
        schedules.active_schedules().await
    } else {
        schedules.schedules_of(&member.id).await
    }
}

/// `member`'s list at `now`, each line written for them (others named by `family`).
pub async fn list(
    schedules: &dyn Schedules,
    family: &Family,
    member: &FamilyMember,
    now: DateTime<Utc>,
) -> Result<ReminderListing, StorageError> {
    let shown = visible(schedules, member).await?;
    let open = schedules.open_firings_of(&member.id).await?;
    let name_of = |id: &MemberId| family.display_name(id);
    Ok(ReminderListing {
        schedules: shown
            .iter()
            .map(|schedule| ListedReminder {
                schedule_id: schedule.id,
                line: schedule_line(schedule, &member.id, name_of, now),
            })
            .collect(),
        waiting: open
            .iter()
            .map(|firing| {
                format!(
                    "#{} fired and waits to be marked done or snoozed",
                    firing.id.schedule_id
                )
            })
            .collect(),
    })
}

/// A fired reminder of a member's waiting for their Done or Snooze, with its schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingReminder {
    pub firing: Firing,
    pub schedule: Schedule,
    /// When it was due, in words in the schedule's zone.
    pub due_in_words: String,
}

/// `member_id`'s fired reminders waiting for Done or Snooze at `now`; one whose schedule is
/// gone is left out.
pub async fn waiting(
    schedules: &dyn Schedules,
    member_id: &MemberId,
    now: DateTime<Utc>,
) -> Result<Vec<WaitingReminder>, StorageError> {
    let mut waiting = Vec::new();
    for firing in schedules.open_firings_of(member_id).await? {
        let Some(schedule) = schedules.schedule(firing.id.schedule_id).await? else {
            continue;
        };
        let zone = ZoneName::parse(&schedule.zone).unwrap_or_else(|_| chrono_tz::UTC.into());
        let due = DateTime::<Utc>::from_timestamp_millis(firing.id.due_ms).unwrap_or(now);
        waiting.push(WaitingReminder {
            due_in_words: phrasing::say_instant(due, zone, now),
            firing,
            schedule,
        });
    }
    Ok(waiting)
}

/// Cancel schedule `id` for `member` when they may: the schedule as it was.
pub async fn cancel(
    schedules: &dyn Schedules,
    member: &FamilyMember,
    id: i64,
) -> Result<Schedule, ListingError> {
    let schedule = schedules
        .schedule(id)
        .await?
        .filter(|schedule| may_see(member, schedule))
        .ok_or(ListingError::NotVisible(id))?;
    if schedule.status != ScheduleStatus::Active || schedule.next_due_ms.is_none() {
        return Err(ListingError::NotActive(id));
    }
    // Fired for the last time or cancelled since it was read.
    if !schedules.cancel(id).await? {
        return Err(ListingError::NotActive(id));
    }
    Ok(schedule)
}

/// What a cancel says back.
pub fn cancelled_text(schedule: &Schedule) -> String {
    format!("Cancelled #{}: “{}”.", schedule.id, schedule.text)
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::ids::ConversationKey;
    use crate::ports::{NewSchedule, ScheduleKind};
    use crate::storage::in_memory::InMemoryStore;

    fn member(id: &str, role: FamilyRole) -> FamilyMember {
        FamilyMember {
            id: id.parse().unwrap(),
            name: Some(format!("{}{}", id[..1].to_uppercase(), &id[1..])),
            telegram_user_id: None,
            matrix_user_id: None,
            role,
            timezone: None,
        }
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 26, 7, 0, 0).unwrap()
    }

    /// A one-off reminder for `member`, set by `set_by`, due `hours` after `now()`.
    async fn add(store: &InMemoryStore, member: &str, set_by: &str, text: &str, hours: i64) -> i64 {
        let schedule = NewSchedule {
            kind: ScheduleKind::Reminder,
            member_id: member.parse().unwrap(),
            set_by: set_by.parse().unwrap(),
            text: text.into(),
            profile_id: None,
            conversation: ConversationKey::new("telegram", "1001").unwrap(),
            zone: "Europe/Berlin".into(),
            recurrence: None,
            start_local: None,
            first_due_ms: now().timestamp_millis() + hours * 3_600_000,
            escalate_after_minutes: None,
            snoozed_from: None,
            once_key: None,
        };
        store.add(&schedule).await.unwrap().id
    }

    /// Alice (parent), Max and Lea (children); Alice set one for Max, each has their own.
    async fn family_with_reminders() -> (InMemoryStore, Family, [i64; 4]) {
        let store = InMemoryStore::default();
        let family = Family::new(&[
            member("alice", FamilyRole::Parent),
            member("max", FamilyRole::Child),
            member("lea", FamilyRole::Child),
        ]);
        let ids = [
            add(&store, "alice", "alice", "call grandma", 1).await,
            add(&store, "max", "alice", "homework", 2).await,
            add(&store, "max", "max", "feed the cat", 3).await,
            add(&store, "lea", "lea", "piano", 4).await,
        ];
        (store, family, ids)
    }

    #[tokio::test]
    async fn a_child_lists_their_own_and_a_parent_the_family_s_each_in_their_words() {
        let (store, family, [grandma, homework, cat, piano]) = family_with_reminders().await;
        let max = &family.member("max").unwrap();
        let listed = list(&store, &family, max, now()).await.unwrap();
        let ids: Vec<i64> = listed.schedules.iter().map(|s| s.schedule_id).collect();
        assert_eq!(ids, [homework, cat]);
        assert_eq!(
            listed.schedules[0].line,
            format!("#{homework} “homework”: Today at 10:00 (Europe/Berlin) (set by Alice)")
        );
        let alice = &family.member("alice").unwrap();
        let listed = list(&store, &family, alice, now()).await.unwrap();
        let ids: Vec<i64> = listed.schedules.iter().map(|s| s.schedule_id).collect();
        assert_eq!(ids, [grandma, homework, cat, piano]);
        assert!(listed.text().contains("“piano”"), "{}", listed.text());
        assert!(listed.text().contains("(for Lea)"), "{}", listed.text());
    }

    #[tokio::test]
    async fn an_empty_list_says_so() {
        let store = InMemoryStore::default();
        let family = Family::new(&[member("max", FamilyRole::Child)]);
        let max = &family.member("max").unwrap();
        let listed = list(&store, &family, max, now()).await.unwrap();
        assert_eq!(listed, ReminderListing::default());
        assert_eq!(listed.text(), NO_REMINDERS);
    }

    #[tokio::test]
    async fn a_child_cancels_only_what_they_may_see_and_a_parent_anything() {
        let (store, family, [grandma, homework, _, piano]) = family_with_reminders().await;
        let max = &family.member("max").unwrap();
        // Another's is as if it did not exist, and stays.
        let refused = cancel(&store, max, grandma).await.unwrap_err();
        assert_eq!(
            refused.to_string(),
            format!("no active reminder #{grandma} of yours")
        );
        assert!(matches!(
            cancel(&store, max, 9_999).await,
            Err(ListingError::NotVisible(9_999))
        ));
        assert!(
            store
                .schedule(grandma)
                .await
                .unwrap()
                .unwrap()
                .next_due_ms
                .is_some()
        );
        // One a parent set for him is his to cancel.
        let cancelled = cancel(&store, max, homework).await.unwrap();
        assert_eq!(
            cancelled_text(&cancelled),
            format!("Cancelled #{homework}: “homework”.")
        );
        assert_eq!(
            cancel(&store, max, homework).await.unwrap_err().to_string(),
            format!("#{homework} is not active any more")
        );
        let alice = &family.member("alice").unwrap();
        assert_eq!(cancel(&store, alice, piano).await.unwrap().id, piano);
        let left: Vec<i64> = visible(&store, alice)
            .await
            .unwrap()
            .iter()
            .map(|schedule| schedule.id)
            .collect();
        assert_eq!(left.len(), 2);
        assert!(!left.contains(&piano) && !left.contains(&homework));
    }
}
