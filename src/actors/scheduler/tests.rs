//! The scheduler on tokio's paused clock over the in-memory store, with a channel and a
//! queue that only record what they are handed: each occurrence fires once, at its time,
//! in order; a late one says so, a long-missed one is told and its recurrence goes on
//! from now; a schedule added later joins the timer; more due at once than are held all
//! fire; Done and Snooze settle once; an unacknowledged one is told to the parents once;
//! a task's turn is stored and queued on its profile; a channel's list and cancel follow
//! the tools' rules, and a cancelled reminder never fires.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Addr, Context, Handler};

use super::{HELD, Scheduler, SchedulerDeps};
use crate::actors::channels::DeliverStored;
use crate::actors::request_queue::QueueStored;
use crate::clock::{follow_tokio_clock, now_ms};
use crate::config::{FamilyMember, FamilyRole, RemindersConfig};
use crate::family::{Family, OwnChats};
use crate::ids::{ConversationKey, MemberId, PromptId};
use crate::metrics::Metrics;
use crate::ports::{
    FiringState, NewSchedule, OutgoingKind, ScheduleKind, Schedules, TracingTelemetry,
};
use crate::reminders::{
    CancelReminder, ListReminders, ListingError, ReminderChoice, ReminderError, SchedulesChanged,
    SettleReminder,
};
use crate::storage::in_memory::InMemoryStore;

const SECOND: Duration = Duration::from_secs(1);
const MINUTE_MS: i64 = 60_000;

/// What the channel and the queue were handed, in order.
#[derive(Default, Clone)]
struct Handed {
    delivered: Arc<Mutex<Vec<(i64, String, OutgoingKind)>>>,
    queued: Arc<Mutex<Vec<crate::ports::Inbound>>>,
}

impl Handed {
    fn texts(&self) -> Vec<String> {
        self.delivered
            .lock()
            .unwrap()
            .iter()
            .map(|(_, text, _)| text.clone())
            .collect()
    }
}

struct Recorder(Handed);

impl Actor for Recorder {
    type Context = Context<Self>;
}

impl Handler<DeliverStored> for Recorder {
    type Result = ();

    fn handle(&mut self, stored: DeliverStored, _ctx: &mut Context<Self>) {
        self.0.delivered.lock().unwrap().push((
            stored.outbox_id,
            stored.message.text,
            stored.message.kind,
        ));
    }
}

impl Handler<QueueStored> for Recorder {
    type Result = ();

    fn handle(&mut self, stored: QueueStored, _ctx: &mut Context<Self>) {
        self.0.queued.lock().unwrap().push(stored.inbound);
    }
}

fn member(id: &str, role: FamilyRole) -> FamilyMember {
    FamilyMember {
        id: id.parse().unwrap(),
        name: Some(id.to_uppercase()),
        telegram_user_id: None,
        matrix_user_id: None,
        role,
        timezone: None,
    }
}

fn member_id(id: &str) -> MemberId {
    id.parse().unwrap()
}

struct Setup {
    scheduler: Addr<Scheduler>,
    handed: Handed,
}

fn start(store: &Arc<InMemoryStore>) -> Setup {
    let handed = Handed::default();
    let recorder = Recorder(handed.clone()).start();
    let deps = SchedulerDeps {
        schedules: store.clone(),
        family: Arc::new(Family::new(&[
            member("alice", FamilyRole::Parent),
            member("max", FamilyRole::Child),
        ])),
        own_chats: Arc::new(OwnChats::new([(
            member_id("alice"),
            ConversationKey::new("telegram", "1001").unwrap(),
        )])),
        settings: RemindersConfig::default(),
        metrics: Arc::new(Metrics::default()),
        telemetry: Arc::new(TracingTelemetry),
        channels: HashMap::from([("telegram".to_string(), recorder.clone().recipient())]),
        queue: recorder.recipient(),
        worker: None,
    };
    Setup {
        scheduler: Scheduler::new(deps).start(),
        handed,
    }
}

fn reminder(member: &str, text: &str, due_ms: i64) -> NewSchedule {
    NewSchedule {
        kind: ScheduleKind::Reminder,
        member_id: member_id(member),
        set_by: member_id(member),
        text: text.into(),
        profile_id: None,
        conversation: ConversationKey::new("telegram", &format!("{member}-chat")).unwrap(),
        zone: "Europe/Berlin".into(),
        recurrence: None,
        start_local: None,
        first_due_ms: due_ms,
        escalate_after_minutes: None,
        snoozed_from: None,
        once_key: None,
    }
}

async fn settle(
    store: &Arc<InMemoryStore>,
    setup: &Setup,
    member: &str,
    choice: ReminderChoice,
) -> Result<String, ReminderError> {
    let open = store.open_firings_of(&member_id(member)).await.unwrap();
    let firing = open.first().expect("an open reminder").id;
    setup
        .scheduler
        .send(SettleReminder {
            firing,
            member_id: member_id(member),
            choice,
        })
        .await
        .unwrap()
        .map(|settled| settled.text)
}

#[actix::test]
async fn a_reminder_fires_once_at_its_time_with_done_and_snooze() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let stored = store
        .add(&reminder("alice", "call grandma", now_ms() + 3_000))
        .await
        .unwrap();
    let setup = start(&store);
    tokio::time::sleep(2 * SECOND).await;
    assert!(setup.handed.texts().is_empty(), "fired early");
    tokio::time::sleep(2 * SECOND).await;
    assert_eq!(setup.handed.texts(), ["⏰ Reminder: call grandma"]);
    let (_, _, kind) = setup.handed.delivered.lock().unwrap()[0].clone();
    let OutgoingKind::Prompt {
        prompt: PromptId::Reminder(firing),
        member_id,
    } = kind
    else {
        panic!("not a reminder's prompt: {kind:?}");
    };
    assert_eq!(member_id, "alice");
    assert_eq!(firing.schedule_id, stored.id);
    // Nothing more, ever: it fired once.
    tokio::time::sleep(Duration::from_secs(24 * 3600)).await;
    assert_eq!(setup.handed.texts().len(), 1);
    let schedule = store.schedule(stored.id).await.unwrap().unwrap();
    assert_eq!(schedule.next_due_ms, None);
}

#[actix::test]
async fn reminders_fire_in_order_and_one_added_later_joins_the_timer() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let now = now_ms();
    for (text, at) in [("third", 30), ("first", 10), ("second", 20)] {
        store
            .add(&reminder("alice", text, now + at * 1_000))
            .await
            .unwrap();
    }
    let setup = start(&store);
    tokio::time::sleep(SECOND).await;
    // Added after the scheduler read what is due: it hears of it.
    let added = store
        .add(&reminder("alice", "sooner", now + 5_000))
        .await
        .unwrap();
    setup.scheduler.do_send(SchedulesChanged {
        schedule_id: added.id,
        next_due_ms: Some(now + 5_000),
    });
    tokio::time::sleep(Duration::from_secs(40)).await;
    assert_eq!(
        setup.handed.texts(),
        [
            "⏰ Reminder: sooner",
            "⏰ Reminder: first",
            "⏰ Reminder: second",
            "⏰ Reminder: third"
        ]
    );
}

#[actix::test]
async fn more_due_at_once_than_are_held_all_fire_once() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let due = now_ms() + 60_000;
    let count = HELD + 300;
    for n in 0..count {
        store
            .add(&reminder("alice", &format!("r{n}"), due))
            .await
            .unwrap();
    }
    let setup = start(&store);
    tokio::time::sleep(Duration::from_secs(70)).await;
    let mut texts = setup.handed.texts();
    assert_eq!(texts.len(), count);
    texts.sort();
    texts.dedup();
    assert_eq!(texts.len(), count, "a reminder fired twice");
    assert!(store.due(i64::MAX, 10).await.unwrap().is_empty());
}

#[actix::test]
async fn a_late_one_says_so_and_a_long_missed_one_is_told_and_goes_on_from_now() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let now = now_ms();
    store
        .add(&reminder("alice", "late one", now - 12 * MINUTE_MS))
        .await
        .unwrap();
    let mut daily = reminder("alice", "daily one", now - 3 * 24 * 60 * MINUTE_MS);
    daily.recurrence = Some("daily".into());
    let start_local = crate::clock::now()
        .with_timezone(&chrono_tz::Europe::Berlin)
        .naive_local()
        - chrono::TimeDelta::days(3);
    daily.start_local = Some(start_local.format("%Y-%m-%dT%H:%M").to_string());
    daily.first_due_ms = now - 3 * 24 * 60 * MINUTE_MS;
    let daily = store.add(&daily).await.unwrap();
    let setup = start(&store);
    tokio::time::sleep(SECOND).await;
    let texts = setup.handed.texts();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts
            .iter()
            .any(|text| text.starts_with("⏰ Reminder (late by 12 min")
                && text.ends_with("late one")),
        "{texts:?}"
    );
    let missed = texts
        .iter()
        .find(|text| text.contains("daily one"))
        .unwrap();
    assert!(missed.starts_with("⏰ Missed reminder"), "{missed}");
    assert!(missed.contains("The next one is tomorrow"), "{missed}");
    // Told once, not once per day missed; the next is a day from now.
    let next = store
        .schedule(daily.id)
        .await
        .unwrap()
        .unwrap()
        .next_due_ms
        .unwrap();
    assert!(
        next > now && next <= now + 24 * 60 * MINUTE_MS,
        "{next} vs {now}"
    );
}

#[actix::test]
async fn done_and_snooze_settle_once_and_a_snooze_fires_again() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    store
        .add(&reminder("max", "medicine", now_ms() + 1_000))
        .await
        .unwrap();
    let setup = start(&store);
    tokio::time::sleep(2 * SECOND).await;
    assert_eq!(setup.handed.texts(), ["⏰ Reminder: medicine"]);
    // Not alice's to answer.
    let open = store.open_firings_of(&member_id("max")).await.unwrap();
    let not_hers = setup
        .scheduler
        .send(SettleReminder {
            firing: open[0].id,
            member_id: member_id("alice"),
            choice: ReminderChoice::Done,
        })
        .await
        .unwrap();
    assert!(matches!(not_hers, Err(ReminderError::NotYours(_))));
    let snoozed = settle(&store, &setup, "max", ReminderChoice::Snooze(None))
        .await
        .unwrap();
    // Today, or tomorrow when the test runs in the minutes before Berlin's midnight.
    assert!(
        snoozed.starts_with("⏰ Snoozed until today at")
            || snoozed.starts_with("⏰ Snoozed until tomorrow,"),
        "{snoozed}"
    );
    let again = setup
        .scheduler
        .send(SettleReminder {
            firing: open[0].id,
            member_id: member_id("max"),
            choice: ReminderChoice::Done,
        })
        .await
        .unwrap();
    assert!(matches!(again, Err(ReminderError::AlreadySettled { .. })));
    tokio::time::sleep(Duration::from_secs(9 * 60)).await;
    assert_eq!(setup.handed.texts().len(), 2, "the close only");
    tokio::time::sleep(Duration::from_secs(2 * 60)).await;
    let texts = setup.handed.texts();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert_eq!(texts[2], "⏰ Reminder: medicine");
    let done = settle(&store, &setup, "max", ReminderChoice::Done)
        .await
        .unwrap();
    assert_eq!(done, "✅ Done.");
    assert!(
        store
            .open_firings_of(&member_id("max"))
            .await
            .unwrap()
            .is_empty()
    );
    let firing = store.firing(open[0].id).await.unwrap().unwrap();
    assert_eq!(firing.state, FiringState::Snoozed);
}

#[actix::test]
async fn an_unacknowledged_reminder_is_told_to_the_parents_once() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let mut medicine = reminder("max", "medicine", now_ms() + 1_000);
    medicine.escalate_after_minutes = Some(30);
    medicine.set_by = member_id("alice");
    store.add(&medicine).await.unwrap();
    let mut acknowledged = reminder("max", "teeth", now_ms() + 1_000);
    acknowledged.escalate_after_minutes = Some(30);
    store.add(&acknowledged).await.unwrap();
    let setup = start(&store);
    tokio::time::sleep(2 * SECOND).await;
    let open = store.open_firings_of(&member_id("max")).await.unwrap();
    let teeth = open
        .iter()
        .find(|firing| firing.id.schedule_id != 1)
        .unwrap()
        .id;
    setup
        .scheduler
        .send(SettleReminder {
            firing: teeth,
            member_id: member_id("max"),
            choice: ReminderChoice::Done,
        })
        .await
        .unwrap()
        .unwrap();
    tokio::time::sleep(Duration::from_secs(29 * 60)).await;
    let told = |handed: &Handed| {
        handed
            .delivered
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, text, _)| text.starts_with("⚠️"))
            .count()
    };
    assert_eq!(told(&setup.handed), 0);
    tokio::time::sleep(Duration::from_secs(2 * 60)).await;
    assert_eq!(told(&setup.handed), 1);
    let texts = setup.handed.texts();
    let notice = texts.iter().find(|text| text.starts_with("⚠️")).unwrap();
    assert!(notice.contains("MAX's reminder “medicine”"), "{notice}");
    assert!(notice.contains("within 30 min"), "{notice}");
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert_eq!(told(&setup.handed), 1);
}

#[actix::test]
async fn a_task_s_occurrence_is_a_turn_stored_and_queued_on_its_profile() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let mut task = reminder("alice", "tell me the weather", now_ms() + 1_000);
    task.kind = ScheduleKind::Task;
    task.profile_id = Some("weather".into());
    store.add(&task).await.unwrap();
    let setup = start(&store);
    tokio::time::sleep(2 * SECOND).await;
    assert!(setup.handed.texts().is_empty());
    let queued = setup.handed.queued.lock().unwrap().clone();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].text, "tell me the weather");
    assert_eq!(queued[0].extras.profile_id.as_deref(), Some("weather"));
    assert_eq!(queued[0].conversation, "telegram:alice-chat");
    let unanswered = crate::ports::Inbox::unanswered(store.as_ref())
        .await
        .unwrap();
    assert_eq!(unanswered.len(), 1);
    assert_eq!(unanswered[0].inbound, queued[0]);
}

#[actix::test]
async fn a_channel_s_list_and_cancel_follow_the_tools_rules_and_a_cancelled_one_never_fires() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    let alice_s = store
        .add(&reminder("alice", "call grandma", now_ms() + 3_000))
        .await
        .unwrap()
        .id;
    let max_s = store
        .add(&reminder("max", "homework", now_ms() + 4_000))
        .await
        .unwrap()
        .id;
    let setup = start(&store);
    let list = |member: &str| ListReminders {
        member_id: member_id(member),
    };
    let max_list = setup.scheduler.send(list("max")).await.unwrap().unwrap();
    let listed: Vec<i64> = max_list.schedules.iter().map(|s| s.schedule_id).collect();
    assert_eq!(listed, [max_s]);
    let alice_list = setup.scheduler.send(list("alice")).await.unwrap().unwrap();
    assert_eq!(alice_list.schedules.len(), 2, "a parent lists the family's");

    let cancel = |member: &str, schedule_id| CancelReminder {
        member_id: member_id(member),
        schedule_id,
    };
    // Max may not cancel his mother's: as if it did not exist.
    let refused = setup.scheduler.send(cancel("max", alice_s)).await.unwrap();
    assert!(matches!(refused, Err(ListingError::NotVisible(id)) if id == alice_s));
    let cancelled = setup
        .scheduler
        .send(cancel("alice", alice_s))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        cancelled.text,
        format!("Cancelled #{alice_s}: “call grandma”.")
    );
    let again = setup
        .scheduler
        .send(cancel("alice", alice_s))
        .await
        .unwrap();
    assert!(matches!(again, Err(ListingError::NotActive(_))));
    let stranger = setup.scheduler.send(cancel("lea", max_s)).await.unwrap();
    assert!(matches!(stranger, Err(ListingError::NotAMember(_))));

    tokio::time::sleep(5 * SECOND).await;
    assert_eq!(setup.handed.texts(), ["⏰ Reminder: homework"]);
}
