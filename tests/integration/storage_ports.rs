//! One behavioural suite for the storage ports (`Inbox`, `ConversationMemory`,
//! `UserProfiles`, `PendingActions`, `TelemetrySink`, `ChannelState`, `ShoppingLists`,
//! `PendingPluginCalls`, `RegisteredPlugins`, `ScriptWorkflows`, `PlanExecutions`), run against
//! every adapter: the in-memory
//! store and SQLite on a temporary file. Each check is written once as an async
//! fn over `Stores`; `adapter_suite!` turns the list of checks into one test per
//! check and adapter. SQLite-only behaviour (telemetry rows, durability, urls)
//! follows at the end.

use std::path::Path;
use std::time::{Duration, Instant};

use hearth::llm::{Role, ToolCall};
use hearth::ports::{
    Acceptance, AnswerPlace, AnswerRefused, Attachment, AttachmentKind, Decision, HistoryEntry,
    Inbound, InboundExtras, InboxRecord, InboxStatus, LlmCallRecord, OpenConfirmation,
    OutgoingKind, OutgoingMessage, PendingConfirmation, PendingPluginCall, ProfileFacts,
    QuotedMessage, RegisteredPlugin, ScriptWorkflow, ShoppingItem, StorageError, TelemetryEvent,
    TurnRecord,
};
use hearth::storage::{self, Stores};

use crate::storage_ports_approvals::{
    pending_suspend_stores_every_prompt_with_it,
    pending_waiting_for_finds_the_message_s_unanswered_confirmation,
    plans_are_written_only_over_the_version_they_were_read_at,
};
use serde_json::json;
use sqlx::Row;
use tempfile::TempDir;

// ---------------------------------------------------------------------------
// Adapters
// ---------------------------------------------------------------------------

/// The ports under test, and whatever must outlive them (the SQLite file's folder).
struct Adapter {
    stores: Stores,
    _folder: Option<TempDir>,
}

async fn open_in_memory() -> Adapter {
    Adapter {
        stores: Stores::in_memory(),
        _folder: None,
    }
}

fn sqlite_url(folder: &Path) -> String {
    format!("sqlite://{}", folder.join("t.db").display())
}

async fn open_sqlite() -> Adapter {
    let folder = tempfile::tempdir().unwrap();
    let stores = open_or_panic(&sqlite_url(folder.path())).await;
    Adapter {
        stores,
        _folder: Some(folder),
    }
}

async fn open_or_panic(url: &str) -> Stores {
    match storage::open(url, 4).await {
        Ok(stores) => stores,
        Err(error) => panic!("storage::open({url:?}) failed: {error}"),
    }
}

/// One `#[tokio::test]` per check for the adapter opened by `$open`.
macro_rules! adapter_suite {
    ($adapter:ident, $open:ident) => {
        mod $adapter {
            adapter_suite!(@checks $open;
                inbox_accepts_an_id_once,
                inbox_deduplicates_platform_events_per_channel,
                inbox_lists_unanswered_in_acceptance_order,
                inbox_complete_stores_reply_and_history,
                inbox_complete_twice_is_refused_without_duplicating_history,
                inbox_record_failure_counts_attempts,
                inbox_give_up_marks_failed,
                inbox_get_unknown_and_ping,
                inbox_keeps_what_came_with_the_text,
                inbox_concurrent_writes_each_get_their_own_outcome,
                memory_recent_returns_only_chat_text,
                memory_recent_keeps_the_newest_limit_oldest_first,
                memory_recent_honours_since,
                memory_keys_are_isolated,
                memory_round_trips_every_field,
                profiles_set_get_overwrite_delete,
                profiles_members_are_isolated,
                telemetry_record_never_fails,
                pending_suspend_marks_the_message_suspended,
                pending_suspend_refuses_unknown_or_finished_messages,
                pending_answer_by_the_member_before_expiry,
                pending_answer_by_another_member_is_refused,
                pending_answer_from_elsewhere_is_as_if_it_did_not_exist,
                pending_answer_twice_unknown_and_expired,
                pending_expire_due_answers_only_the_due_pending_ones,
                pending_consume_returns_the_decision_once,
                pending_racing_answers_and_consumes_have_one_winner,
                pending_complete_after_consume_answers_the_suspended_message,
                pending_a_resumed_turn_can_ask_again,
                pending_suspend_refuses_a_used_confirmation_id,
                pending_open_lists_oldest_first_by_creation_time,
                pending_interrupted_lists_latest_consumed_of_suspended_messages,
                channel_state_put_get_list_delete,
                journal_keeps_the_latest_state_until_the_turn_ends,
                outbox_delivers_in_order_and_forgets_what_was_delivered,
                outbox_rows_are_written_with_what_caused_them,
                outbox_stores_a_message_once_under_its_key,
                retention_prunes_in_batches_only_what_is_old_enough,
                inbox_knows_the_events_it_accepted,
                shopping_add_merges_the_same_item_whatever_its_case,
                shopping_lists_items_in_the_order_first_added,
                shopping_remove_by_name_reports_whether_it_was_there,
                shopping_lists_are_independent_and_clear_counts,
                shopping_refuses_blank_names_and_zero_quantity,
                plugin_call_put_replaces_the_earlier_one,
                plugin_call_take_valid_hands_it_out_once,
                plugin_call_take_valid_drops_an_expired_call,
                plugin_call_peek_leaves_it_and_clear_removes_it,
                plugin_call_expire_due_removes_only_the_due_ones,
                registered_plugins_upsert_get_list_remove,
                script_workflow_put_replaces_and_is_per_conversation_and_member,
                script_workflow_older_than_the_ttl_is_not_handed_out,
                plans_are_stored_found_open_and_cancelled,
                pending_suspend_stores_every_prompt_with_it,
                pending_waiting_for_finds_the_message_s_unanswered_confirmation,
                plans_are_written_only_over_the_version_they_were_read_at,
            );
        }
    };
    (@checks $open:ident; $($check:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $check() {
                let adapter = super::$open().await;
                super::$check(&adapter.stores).await;
            }
        )*
    };
}

adapter_suite!(in_memory, open_in_memory);
adapter_suite!(sqlite, open_sqlite);

// ---------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------

/// Many writes at once (SQLite commits them in shared transactions): each caller gets
/// its own outcome, and a failing write does not take the others down with it.
async fn inbox_concurrent_writes_each_get_their_own_outcome(stores: &Stores) {
    let mut accepts = Vec::new();
    let mut refusals = Vec::new();
    for n in 0..100 {
        let inbox = stores.inbox.clone();
        accepts.push(tokio::spawn(async move {
            inbox
                .accept(&inbound(&format!("burst-{n:03}"), "http", None))
                .await
        }));
        if n % 5 == 0 {
            let inbox = stores.inbox.clone();
            refusals.push(tokio::spawn(async move {
                inbox.give_up(&format!("missing-{n}"), "e", "r", None).await
            }));
        }
    }
    for accept in accepts {
        assert_eq!(accept.await.unwrap().unwrap(), Acceptance::New);
    }
    for refusal in refusals {
        assert!(refusal.await.unwrap().is_err(), "an unknown id is refused");
    }
    let unanswered = stores.inbox.unanswered().await.unwrap();
    assert_eq!(unanswered.len(), 100);
}

pub(crate) fn inbound(id: &str, channel: &str, platform_event_id: Option<&str>) -> Inbound {
    Inbound {
        id: id.to_string(),
        channel: channel.to_string(),
        conversation_id: "family-chat".to_string(),
        member_id: "alice".to_string(),
        text: format!("text of {id}"),
        platform_event_id: platform_event_id.map(str::to_string),
        received_at_ms: 1_700_000_000_000,
        extras: Default::default(),
    }
}

fn entry(role: Role, content: &str, created_at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        role,
        content: content.to_string(),
        profile_id: "family".to_string(),
        inbox_id: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        created_at_ms,
    }
}

fn tool_call_entry(created_at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        tool_calls: vec![ToolCall {
            id: "call-1".to_string(),
            name: "profile_get".to_string(),
            arguments: json!({}),
        }],
        ..entry(Role::Assistant, "let me look", created_at_ms)
    }
}

fn tool_result_entry(created_at_ms: i64) -> HistoryEntry {
    HistoryEntry {
        tool_call_id: Some("call-1".to_string()),
        ..entry(Role::Tool, r#"{"name":"Alice"}"#, created_at_ms)
    }
}

/// A turn as the processing actor writes it: question, tool round trip, answer.
fn turn_for(message: &Inbound, reply: &str) -> TurnRecord {
    let with_inbox = |mut entry: HistoryEntry| {
        entry.inbox_id = Some(message.id.clone());
        entry
    };
    TurnRecord {
        conversation_key: message.conversation_key(),
        messages: vec![
            with_inbox(entry(Role::User, &message.text, 10)),
            with_inbox(tool_call_entry(11)),
            with_inbox(tool_result_entry(12)),
            with_inbox(entry(Role::Assistant, reply, 13)),
        ],
        reply: reply.to_string(),
        outgoing: None,
    }
}

fn contents(entries: &[HistoryEntry]) -> Vec<&str> {
    entries.iter().map(|entry| entry.content.as_str()).collect()
}

fn ids(records: &[InboxRecord]) -> Vec<&str> {
    records
        .iter()
        .map(|record| record.inbound.id.as_str())
        .collect()
}

pub(crate) async fn record_of(stores: &Stores, id: &str) -> InboxRecord {
    stores
        .inbox
        .get(id)
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("inbox message {id:?} not stored"))
}

pub(crate) async fn expect_new(stores: &Stores, message: &Inbound) {
    let acceptance = stores.inbox.accept(message).await.unwrap();
    assert_eq!(acceptance, Acceptance::New, "accepting {:?}", message.id);
}

async fn expect_duplicate_of(stores: &Stores, message: &Inbound, original: &Inbound) {
    match stores.inbox.accept(message).await.unwrap() {
        Acceptance::Duplicate(record) => assert_eq!(
            record.inbound, *original,
            "a duplicate of {:?} reports the original",
            message.id
        ),
        Acceptance::New => panic!("{:?} was accepted as new", message.id),
    }
}

// ---------------------------------------------------------------------------
// Inbox
// ---------------------------------------------------------------------------

async fn inbox_accepts_an_id_once(stores: &Stores) {
    let message = inbound("m-1", "http", None);
    expect_new(stores, &message).await;
    expect_duplicate_of(stores, &message, &message).await;

    // The same id with other content (even another channel) is still the same message.
    let mut changed = inbound("m-1", "telegram", Some("tg-1"));
    changed.text = "something else".to_string();
    expect_duplicate_of(stores, &changed, &message).await;

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.inbound, message);
    assert_eq!(record.status, InboxStatus::Accepted);
    assert_eq!(record.attempts, 0);
    assert_eq!(record.next_attempt_at_ms, None);
    assert_eq!(record.reply, None);
    assert_eq!(record.error, None);
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["m-1"]);
}

async fn inbox_deduplicates_platform_events_per_channel(stores: &Stores) {
    let first = inbound("a-1", "telegram", Some("event-7"));
    expect_new(stores, &first).await;

    // Redelivered by the platform under a fresh id: the original is reported, nothing stored.
    let redelivered = inbound("a-2", "telegram", Some("event-7"));
    expect_duplicate_of(stores, &redelivered, &first).await;
    assert_eq!(stores.inbox.get("a-2").await.unwrap(), None);

    // Platform ids are unique per channel only.
    let elsewhere = inbound("a-3", "matrix", Some("event-7"));
    expect_new(stores, &elsewhere).await;

    // Messages without a platform id never collide with each other.
    expect_new(stores, &inbound("b-1", "telegram", None)).await;
    expect_new(stores, &inbound("b-2", "telegram", None)).await;

    assert_eq!(
        ids(&stores.inbox.unanswered().await.unwrap()),
        ["a-1", "a-3", "b-1", "b-2"]
    );
}

async fn inbox_lists_unanswered_in_acceptance_order(stores: &Stores) {
    // Received times run backwards so only the acceptance order can explain the result.
    for (index, id) in ["m-1", "m-2", "m-3", "m-4", "m-5"].iter().enumerate() {
        let mut message = inbound(id, "http", None);
        message.received_at_ms = 2_000_000 - i64::try_from(index).unwrap();
        expect_new(stores, &message).await;
    }
    assert_eq!(
        ids(&stores.inbox.unanswered().await.unwrap()),
        ["m-1", "m-2", "m-3", "m-4", "m-5"]
    );

    let answered = record_of(stores, "m-2").await.inbound;
    stores
        .inbox
        .complete("m-2", &turn_for(&answered, "done"))
        .await
        .unwrap();
    stores
        .inbox
        .give_up("m-4", "model down", "sorry", None)
        .await
        .unwrap();
    stores
        .inbox
        .record_failure("m-5", "timeout", 5_000)
        .await
        .unwrap();

    let unanswered = stores.inbox.unanswered().await.unwrap();
    assert_eq!(ids(&unanswered), ["m-1", "m-3", "m-5"]);
    assert!(
        unanswered
            .iter()
            .all(|record| record.status == InboxStatus::Accepted)
    );
    assert_eq!(
        unanswered[2].attempts, 1,
        "the retried message keeps its count"
    );
}

async fn inbox_complete_stores_reply_and_history(stores: &Stores) {
    let message = inbound("m-1", "http", Some("http-1"));
    expect_new(stores, &message).await;
    stores
        .inbox
        .record_failure("m-1", "first try timed out", 9_000)
        .await
        .unwrap();

    let turn = turn_for(&message, "Your name is Alice.");
    stores.inbox.complete("m-1", &turn).await.unwrap();

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(record.reply.as_deref(), Some("Your name is Alice."));
    assert_eq!(record.error, None, "an answered message carries no error");
    assert_eq!(record.attempts, 1);
    assert_eq!(record.inbound, message);
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());

    // The turn's chat text is history now; its tool round trip is stored but not replayed.
    let history = stores
        .memory
        .recent(&message.conversation_key(), 50, 0)
        .await
        .unwrap();
    assert_eq!(
        history,
        [turn.messages[0].clone(), turn.messages[3].clone()],
        "user question and final answer, in order"
    );
}

async fn inbox_complete_twice_is_refused_without_duplicating_history(stores: &Stores) {
    let message = inbound("m-1", "console", None);
    expect_new(stores, &message).await;
    stores
        .inbox
        .complete("m-1", &turn_for(&message, "first answer"))
        .await
        .unwrap();

    let again = stores
        .inbox
        .complete("m-1", &turn_for(&message, "second answer"))
        .await;
    assert!(again.is_err(), "completing an answered message: {again:?}");

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(record.reply.as_deref(), Some("first answer"));
    let history = stores
        .memory
        .recent(&message.conversation_key(), 50, 0)
        .await
        .unwrap();
    assert_eq!(contents(&history), [message.text.as_str(), "first answer"]);

    // Neither an unknown message nor a failed one can be completed.
    let unknown = inbound("nope", "console", None);
    let result = stores
        .inbox
        .complete("nope", &turn_for(&unknown, "x"))
        .await;
    assert!(result.is_err(), "completing an unknown message: {result:?}");
    assert_eq!(stores.inbox.get("nope").await.unwrap(), None);

    let failed = inbound("m-2", "console", None);
    expect_new(stores, &failed).await;
    stores
        .inbox
        .give_up("m-2", "broken", "sorry", None)
        .await
        .unwrap();
    let result = stores
        .inbox
        .complete("m-2", &turn_for(&failed, "late answer"))
        .await;
    assert!(result.is_err(), "completing a failed message: {result:?}");
    assert_eq!(record_of(stores, "m-2").await.status, InboxStatus::Failed);
    let history = stores
        .memory
        .recent(&message.conversation_key(), 50, 0)
        .await
        .unwrap();
    assert_eq!(
        contents(&history),
        [message.text.as_str(), "first answer"],
        "refused completions write no history"
    );
}

async fn inbox_record_failure_counts_attempts(stores: &Stores) {
    let message = inbound("m-1", "matrix", Some("$event"));
    expect_new(stores, &message).await;

    let attempts = stores
        .inbox
        .record_failure("m-1", "rate limited", 1_000)
        .await
        .unwrap();
    assert_eq!(attempts, 1);
    let record = record_of(stores, "m-1").await;
    assert_eq!(record.attempts, 1);
    assert_eq!(record.status, InboxStatus::Accepted);
    assert_eq!(record.next_attempt_at_ms, Some(1_000));
    assert_eq!(record.error.as_deref(), Some("rate limited"));
    assert_eq!(record.reply, None);

    let attempts = stores
        .inbox
        .record_failure("m-1", "timeout", 3_000)
        .await
        .unwrap();
    assert_eq!(attempts, 2);
    let attempts = stores
        .inbox
        .record_failure("m-1", "timeout again", 7_000)
        .await
        .unwrap();
    assert_eq!(attempts, 3);

    let unanswered = stores.inbox.unanswered().await.unwrap();
    assert_eq!(
        ids(&unanswered),
        ["m-1"],
        "a failed attempt is retried later"
    );
    let record = &unanswered[0];
    assert_eq!(record.attempts, 3);
    assert_eq!(record.next_attempt_at_ms, Some(7_000));
    assert_eq!(record.error.as_deref(), Some("timeout again"));
    assert_eq!(record.status, InboxStatus::Accepted);
}

async fn inbox_give_up_marks_failed(stores: &Stores) {
    let message = inbound("m-1", "telegram", Some("upd-1"));
    let other = inbound("m-2", "telegram", Some("upd-2"));
    expect_new(stores, &message).await;
    expect_new(stores, &other).await;
    stores
        .inbox
        .record_failure("m-1", "timeout", 1_000)
        .await
        .unwrap();

    stores
        .inbox
        .give_up(
            "m-1",
            "model unavailable",
            "Sorry, I could not answer.",
            None,
        )
        .await
        .unwrap();

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.status, InboxStatus::Failed);
    assert_eq!(record.reply.as_deref(), Some("Sorry, I could not answer."));
    assert_eq!(record.error.as_deref(), Some("model unavailable"));
    assert_eq!(record.attempts, 1);
    assert_eq!(record.inbound, message);
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["m-2"]);

    // A failed message is still known: its redelivery is a duplicate, not a new turn.
    match stores.inbox.accept(&message).await.unwrap() {
        Acceptance::Duplicate(original) => assert_eq!(original.status, InboxStatus::Failed),
        Acceptance::New => panic!("a given-up message was accepted again"),
    }
    // Giving up writes no history.
    assert!(
        stores
            .memory
            .recent(&message.conversation_key(), 50, 0)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn inbox_get_unknown_and_ping(stores: &Stores) {
    stores.inbox.ping().await.unwrap();
    assert_eq!(stores.inbox.get("missing").await.unwrap(), None);
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());
    expect_new(stores, &inbound("m-1", "http", None)).await;
    assert_eq!(stores.inbox.get("m-2").await.unwrap(), None);
    stores.inbox.ping().await.unwrap();
}

async fn inbox_keeps_what_came_with_the_text(stores: &Stores) {
    let mut message = inbound("m-extras", "telegram", Some("-100:7"));
    message.extras = InboundExtras {
        quoted: Some(QuotedMessage {
            author: "Bob".into(),
            text: "the dentist is at 3".into(),
        }),
        attachments: vec![Attachment {
            kind: AttachmentKind::Image,
            file_name: "photo.jpg".into(),
            mime_type: Some("image/jpeg".into()),
            size_bytes: 12_345,
            path: None,
            note: Some("too large to download (over 5 MB)".into()),
        }],
    };
    expect_new(stores, &message).await;
    let stored = stores.inbox.get("m-extras").await.unwrap().unwrap();
    assert_eq!(stored.inbound, message);
    assert_eq!(stores.inbox.unanswered().await.unwrap()[0].inbound, message);
}

// ---------------------------------------------------------------------------
// ConversationMemory
// ---------------------------------------------------------------------------

async fn memory_recent_returns_only_chat_text(stores: &Stores) {
    let key = "http:kitchen";
    let entries = [
        entry(Role::User, "what is my name?", 1),
        tool_call_entry(2),
        tool_result_entry(3),
        entry(Role::Assistant, "", 4),
        entry(Role::System, "you are hearth", 5),
        entry(Role::User, "", 6),
        entry(Role::Assistant, "You are Alice.", 7),
    ];
    stores.memory.append(key, &entries).await.unwrap();

    let recent = stores.memory.recent(key, 100, 0).await.unwrap();
    assert_eq!(recent, [entries[0].clone(), entries[6].clone()]);

    // The limit counts chat text only: tool traffic never takes a slot.
    let recent = stores.memory.recent(key, 1, 0).await.unwrap();
    assert_eq!(contents(&recent), ["You are Alice."]);
}

async fn memory_recent_keeps_the_newest_limit_oldest_first(stores: &Stores) {
    let key = "telegram:42";
    // Two appends: order is kept across calls, and tool traffic sits in between.
    stores
        .memory
        .append(
            key,
            &[
                entry(Role::User, "one", 100),
                entry(Role::Assistant, "two", 101),
                tool_call_entry(102),
                tool_result_entry(103),
            ],
        )
        .await
        .unwrap();
    stores
        .memory
        .append(
            key,
            &[
                entry(Role::User, "three", 104),
                entry(Role::Assistant, "four", 105),
                entry(Role::User, "five", 106),
            ],
        )
        .await
        .unwrap();

    let all = stores.memory.recent(key, 10, 0).await.unwrap();
    assert_eq!(contents(&all), ["one", "two", "three", "four", "five"]);
    let newest = stores.memory.recent(key, 3, 0).await.unwrap();
    assert_eq!(contents(&newest), ["three", "four", "five"]);
    let newest = stores.memory.recent(key, 1, 0).await.unwrap();
    assert_eq!(contents(&newest), ["five"]);
    assert!(stores.memory.recent(key, 0, 0).await.unwrap().is_empty());
    let unbounded = stores.memory.recent(key, usize::MAX, 0).await.unwrap();
    assert_eq!(
        contents(&unbounded),
        ["one", "two", "three", "four", "five"]
    );
}

async fn memory_recent_honours_since(stores: &Stores) {
    let key = "matrix:!room";
    stores
        .memory
        .append(
            key,
            &[
                entry(Role::User, "old question", 1_000),
                entry(Role::Assistant, "old answer", 1_999),
                entry(Role::User, "boundary", 2_000),
                entry(Role::Assistant, "new answer", 2_001),
                entry(Role::User, "newest", 3_000),
            ],
        )
        .await
        .unwrap();

    let since = stores.memory.recent(key, 10, 2_000).await.unwrap();
    assert_eq!(
        contents(&since),
        ["boundary", "new answer", "newest"],
        "since_ms is inclusive"
    );
    let since = stores.memory.recent(key, 2, 1_000).await.unwrap();
    assert_eq!(contents(&since), ["new answer", "newest"]);
    assert!(
        stores
            .memory
            .recent(key, 10, 3_001)
            .await
            .unwrap()
            .is_empty()
    );
    let all = stores.memory.recent(key, 10, i64::MIN).await.unwrap();
    assert_eq!(all.len(), 5);
}

async fn memory_keys_are_isolated(stores: &Stores) {
    stores
        .memory
        .append("http:a", &[entry(Role::User, "for a", 1)])
        .await
        .unwrap();
    stores
        .memory
        .append("http:b", &[entry(Role::User, "for b", 2)])
        .await
        .unwrap();
    stores
        .memory
        .append("telegram:a", &[entry(Role::User, "for telegram a", 3)])
        .await
        .unwrap();

    let a = stores.memory.recent("http:a", 10, 0).await.unwrap();
    assert_eq!(contents(&a), ["for a"]);
    let b = stores.memory.recent("http:b", 10, 0).await.unwrap();
    assert_eq!(contents(&b), ["for b"]);
    let telegram = stores.memory.recent("telegram:a", 10, 0).await.unwrap();
    assert_eq!(contents(&telegram), ["for telegram a"]);
    assert!(
        stores
            .memory
            .recent("http:", 10, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        stores
            .memory
            .recent("unknown:key", 10, 0)
            .await
            .unwrap()
            .is_empty()
    );

    // The same through a completed turn: history lands under the turn's key only.
    let message = inbound("m-1", "http", None);
    expect_new(stores, &message).await;
    stores
        .inbox
        .complete("m-1", &turn_for(&message, "answer"))
        .await
        .unwrap();
    let a = stores.memory.recent("http:a", 10, 0).await.unwrap();
    assert_eq!(contents(&a), ["for a"]);
}

async fn memory_round_trips_every_field(stores: &Stores) {
    let key = "console:local";
    let entries = [
        HistoryEntry {
            role: Role::User,
            content: "Ça va? \"quotes\", 'apostrophes', emoji 🏠 and\nnewlines".to_string(),
            profile_id: "family".to_string(),
            inbox_id: Some("inbox-1".to_string()),
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at_ms: 1_700_000_000_123,
        },
        HistoryEntry {
            role: Role::Assistant,
            content: "   ".to_string(),
            profile_id: "kids".to_string(),
            inbox_id: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            created_at_ms: 1_700_000_000_456,
        },
    ];
    stores.memory.append(key, &entries).await.unwrap();
    let recent = stores.memory.recent(key, 10, 0).await.unwrap();
    assert_eq!(recent, entries);

    // An empty append is harmless.
    stores.memory.append(key, &[]).await.unwrap();
    assert_eq!(stores.memory.recent(key, 10, 0).await.unwrap(), entries);
}

// ---------------------------------------------------------------------------
// UserProfiles
// ---------------------------------------------------------------------------

fn facts(pairs: &[(&str, &str)]) -> ProfileFacts {
    pairs
        .iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect()
}

async fn profiles_set_get_overwrite_delete(stores: &Stores) {
    let profiles = &stores.profiles;
    assert_eq!(profiles.get("alice").await.unwrap(), ProfileFacts::new());

    profiles.set("alice", "name", Some("Alice")).await.unwrap();
    profiles
        .set("alice", "address", Some("1 Rue de la Paix"))
        .await
        .unwrap();
    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("address", "1 Rue de la Paix"), ("name", "Alice")])
    );

    profiles.set("alice", "name", Some("Alicia")).await.unwrap();
    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("address", "1 Rue de la Paix"), ("name", "Alicia")])
    );

    profiles.set("alice", "address", None).await.unwrap();
    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("name", "Alicia")])
    );
    // Forgetting what is not there is fine.
    profiles.set("alice", "address", None).await.unwrap();
    profiles.set("nobody", "name", None).await.unwrap();
    assert_eq!(profiles.get("nobody").await.unwrap(), ProfileFacts::new());

    profiles.set("alice", "name", None).await.unwrap();
    assert_eq!(profiles.get("alice").await.unwrap(), ProfileFacts::new());
}

async fn profiles_members_are_isolated(stores: &Stores) {
    let profiles = &stores.profiles;
    profiles.set("alice", "phone", Some("111")).await.unwrap();
    profiles.set("bob", "phone", Some("222")).await.unwrap();
    profiles.set("bob", "food", Some("pizza")).await.unwrap();

    assert_eq!(
        profiles.get("alice").await.unwrap(),
        facts(&[("phone", "111")])
    );
    assert_eq!(
        profiles.get("bob").await.unwrap(),
        facts(&[("food", "pizza"), ("phone", "222")])
    );

    profiles.set("alice", "phone", None).await.unwrap();
    assert_eq!(profiles.get("alice").await.unwrap(), ProfileFacts::new());
    assert_eq!(
        profiles.get("bob").await.unwrap(),
        facts(&[("food", "pizza"), ("phone", "222")])
    );
    assert_eq!(profiles.get("carol").await.unwrap(), ProfileFacts::new());
}

// ---------------------------------------------------------------------------
// ChannelState
// ---------------------------------------------------------------------------

async fn channel_state_put_get_list_delete(stores: &Stores) {
    let state = &stores.channel_state;
    assert_eq!(state.get_state("telegram", "offset").await.unwrap(), None);
    state.put_state("telegram", "offset", "41").await.unwrap();
    state.put_state("telegram", "offset", "42").await.unwrap();
    state.put_state("telegram", "ask:b", "2").await.unwrap();
    state.put_state("telegram", "ask:a", "1").await.unwrap();
    // A prefix is literal: `%` and `_` are not wildcards.
    state.put_state("telegram", "ask%x", "3").await.unwrap();
    state.put_state("matrix", "ask:c", "3").await.unwrap();
    assert_eq!(
        state.get_state("telegram", "offset").await.unwrap(),
        Some("42".to_string())
    );
    assert_eq!(
        state.list_state("telegram", "ask:").await.unwrap(),
        vec![("ask:a".into(), "1".into()), ("ask:b".into(), "2".into())]
    );
    state.delete_state("telegram", "ask:a").await.unwrap();
    state.delete_state("telegram", "never-there").await.unwrap();
    assert_eq!(
        state.list_state("telegram", "ask:").await.unwrap(),
        vec![("ask:b".into(), "2".into())]
    );
    assert_eq!(state.get_state("matrix", "offset").await.unwrap(), None);
}

// ---------------------------------------------------------------------------
// PendingActions
// ---------------------------------------------------------------------------

/// A moment in the confirmations' timeline; every check counts from it.
pub(crate) const T0: i64 = 1_700_000_000_000;
/// How long a confirmation waits in these checks.
const WAIT_MS: i64 = 60_000;

/// A confirmation for `alice`'s message `inbox_id`, with arguments and a turn state
/// awkward enough that only an exact round trip keeps them equal.
pub(crate) fn confirmation(id: &str, inbox_id: &str, created_at_ms: i64) -> PendingConfirmation {
    PendingConfirmation {
        id: id.to_string(),
        inbox_id: inbox_id.to_string(),
        member_id: "alice".to_string(),
        channel: "telegram".to_string(),
        conversation_id: "family-chat".to_string(),
        profile_id: "family".to_string(),
        tool_name: "calendar_delete".to_string(),
        arguments: json!({
            "event_id": format!("ev-{id}"),
            "notify": true,
            "attendees": ["bob", "carol"],
            "note": "Ça va? \"quotes\", 'apostrophes', 🏠 and\nnewlines",
            "count": 9_007_199_254_740_993_u64,
            "ratio": 0.125,
            "nothing": null,
            "nested": {"empty": {}, "list": []},
        }),
        prompt: format!("Delete the event ev-{id} and tell Bob and Carol?"),
        turn_state: json!({
            "round": 2,
            "messages": [
                {"role": "user", "content": format!("please cancel ev-{id}")},
                {"role": "assistant", "tool_calls": [
                    {"id": "call-7", "name": "calendar_delete", "arguments": {"event_id": id}}
                ]},
            ],
            "pending_call": "call-7",
        }),
        expires_at_ms: created_at_ms + WAIT_MS,
        created_at_ms,
        approvers: Vec::new(),
    }
}

/// Accept `alice`'s message `inbox_id` and suspend its turn on the confirmation `id`.
async fn suspended(
    stores: &Stores,
    inbox_id: &str,
    id: &str,
    created_at_ms: i64,
) -> PendingConfirmation {
    expect_new(stores, &inbound(inbox_id, "telegram", None)).await;
    let confirmation = confirmation(id, inbox_id, created_at_ms);
    stores.pending.suspend(&confirmation, &[]).await.unwrap();
    confirmation
}

/// `answer`, with the storage error unwrapped.
async fn answer(
    stores: &Stores,
    id: &str,
    member_id: &str,
    approve: bool,
    now_ms: i64,
) -> Result<PendingConfirmation, AnswerRefused> {
    stores
        .pending
        .answer(
            id,
            member_id,
            &AnswerPlace::new("telegram", None),
            approve,
            now_ms,
        )
        .await
        .unwrap_or_else(|error| panic!("answer({id:?}, {member_id:?}): {error}"))
}

async fn open_confirmations(stores: &Stores) -> Vec<OpenConfirmation> {
    stores.pending.open().await.unwrap()
}

/// The open confirmations as (id, decision), oldest first.
async fn open_decisions(stores: &Stores) -> Vec<(String, Option<Decision>)> {
    open_confirmations(stores)
        .await
        .into_iter()
        .map(|open| (open.confirmation.id, open.decision))
        .collect()
}

fn decisions(pairs: &[(&str, Option<Decision>)]) -> Vec<(String, Option<Decision>)> {
    pairs
        .iter()
        .map(|(id, decision)| (id.to_string(), *decision))
        .collect()
}

fn open_one(confirmation: &PendingConfirmation, decision: Option<Decision>) -> OpenConfirmation {
    OpenConfirmation {
        confirmation: confirmation.clone(),
        decision,
    }
}

async fn pending_suspend_marks_the_message_suspended(stores: &Stores) {
    let waiting = inbound("s-2", "telegram", None);
    expect_new(stores, &inbound("s-1", "telegram", None)).await;
    expect_new(stores, &waiting).await;
    assert!(open_confirmations(stores).await.is_empty());

    let asked = confirmation("c-s-1", "s-1", T0);
    stores.pending.suspend(&asked, &[]).await.unwrap();

    let record = record_of(stores, "s-1").await;
    assert_eq!(record.status, InboxStatus::Suspended);
    assert_eq!(record.inbound, inbound("s-1", "telegram", None));
    assert_eq!(record.attempts, 0);
    assert_eq!(record.reply, None);
    assert_eq!(record.error, None);
    // A suspended turn is resumed by its answer, not by the queue.
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["s-2"]);
    assert_eq!(record_of(stores, "s-2").await.status, InboxStatus::Accepted);

    // Stored exactly as given, waiting for alice.
    assert_eq!(open_confirmations(stores).await, [open_one(&asked, None)]);

    // A redelivery of the suspended message is a duplicate reporting its status.
    match stores
        .inbox
        .accept(&inbound("s-1", "telegram", None))
        .await
        .unwrap()
    {
        Acceptance::Duplicate(original) => assert_eq!(original.status, InboxStatus::Suspended),
        Acceptance::New => panic!("a suspended message was accepted again"),
    }
}

async fn pending_suspend_refuses_unknown_or_finished_messages(stores: &Stores) {
    // Never accepted.
    let result = stores
        .pending
        .suspend(&confirmation("c-ghost", "u-ghost", T0), &[])
        .await;
    assert!(result.is_err(), "suspending an unknown message: {result:?}");
    assert_eq!(stores.inbox.get("u-ghost").await.unwrap(), None);

    // Answered already.
    let done = inbound("u-1", "telegram", None);
    expect_new(stores, &done).await;
    stores
        .inbox
        .complete("u-1", &turn_for(&done, "all done"))
        .await
        .unwrap();
    let result = stores
        .pending
        .suspend(&confirmation("c-answered", "u-1", T0 + 1), &[])
        .await;
    assert!(
        result.is_err(),
        "suspending an answered message: {result:?}"
    );
    let record = record_of(stores, "u-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(record.reply.as_deref(), Some("all done"));

    // Given up on.
    expect_new(stores, &inbound("u-2", "telegram", None)).await;
    stores
        .inbox
        .give_up("u-2", "broken", "sorry", None)
        .await
        .unwrap();
    let result = stores
        .pending
        .suspend(&confirmation("c-failed", "u-2", T0 + 2), &[])
        .await;
    assert!(result.is_err(), "suspending a failed message: {result:?}");
    assert_eq!(record_of(stores, "u-2").await.status, InboxStatus::Failed);

    // Nothing of the refused confirmations was stored.
    assert!(open_confirmations(stores).await.is_empty());
    for id in ["c-ghost", "c-answered", "c-failed"] {
        assert_eq!(
            answer(stores, id, "alice", true, T0 + 10).await,
            Err(AnswerRefused::Unknown),
            "{id}"
        );
        assert_eq!(stores.pending.consume(id).await.unwrap(), None, "{id}");
    }
    assert!(
        stores
            .pending
            .expire_due(i64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(open_confirmations(stores).await.is_empty());
}

async fn pending_answer_by_the_member_before_expiry(stores: &Stores) {
    let approved = suspended(stores, "a-1", "c-a-1", T0).await;
    let denied = suspended(stores, "a-2", "c-a-2", T0 + 1).await;

    assert_eq!(
        answer(stores, "c-a-1", "alice", true, T0 + 1_000).await,
        Ok(approved.clone()),
        "the approved confirmation comes back exactly as stored"
    );
    // The last millisecond before expiry still counts.
    assert_eq!(
        answer(stores, "c-a-2", "alice", false, denied.expires_at_ms - 1).await,
        Ok(denied.clone())
    );

    assert_eq!(
        open_confirmations(stores).await,
        [
            open_one(&approved, Some(Decision::Approved)),
            open_one(&denied, Some(Decision::Denied)),
        ]
    );
    // Answering does not resume the turn by itself: the messages stay suspended.
    for id in ["a-1", "a-2"] {
        assert_eq!(record_of(stores, id).await.status, InboxStatus::Suspended);
    }
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());
}

async fn pending_answer_by_another_member_is_refused(stores: &Stores) {
    let asked = suspended(stores, "n-1", "c-n-1", T0).await;

    for approve in [true, false] {
        assert_eq!(
            answer(stores, "c-n-1", "bob", approve, T0 + 1_000).await,
            Err(AnswerRefused::NotYours)
        );
    }
    // Member ids are compared exactly.
    assert_eq!(
        answer(stores, "c-n-1", "Alice", true, T0 + 1_000).await,
        Err(AnswerRefused::NotYours)
    );
    assert_eq!(open_confirmations(stores).await, [open_one(&asked, None)]);
    assert_eq!(stores.pending.consume("c-n-1").await.unwrap(), None);

    // The right member still can.
    assert_eq!(
        answer(stores, "c-n-1", "alice", false, T0 + 2_000).await,
        Ok(asked.clone())
    );
    assert_eq!(
        answer(stores, "c-n-1", "bob", true, T0 + 3_000).await,
        Err(AnswerRefused::NotYours),
        "still not bob's once answered"
    );
    assert_eq!(
        open_confirmations(stores).await,
        [open_one(&asked, Some(Decision::Denied))]
    );
}

async fn pending_answer_from_elsewhere_is_as_if_it_did_not_exist(stores: &Stores) {
    // Asked in telegram chat "family-chat".
    let asked = suspended(stores, "w-1", "c-w-1", T0).await;
    let from = |channel: &str, conversation: Option<&str>| {
        AnswerPlace::new(channel, conversation.map(str::to_string))
    };
    for place in [
        from("http", None),
        from("matrix", Some("family-chat")),
        from("telegram", Some("other-chat")),
        from("telegram", Some("family")),
        from("telegram", Some("family-chat-2")),
    ] {
        let refused = stores
            .pending
            .answer("c-w-1", "alice", &place, true, T0 + 1_000)
            .await
            .unwrap();
        assert_eq!(refused, Err(AnswerRefused::Unknown), "{place:?}");
    }
    assert_eq!(open_confirmations(stores).await, [open_one(&asked, None)]);
    // Where it was asked, it is answered.
    let here = stores
        .pending
        .answer(
            "c-w-1",
            "alice",
            &from("telegram", Some("family-chat")),
            true,
            T0 + 1_000,
        )
        .await
        .unwrap();
    assert_eq!(here, Ok(asked.clone()));
    // A topic or thread within the chat counts as the chat.
    let mut in_topic = confirmation("c-w-2", "w-2", T0);
    in_topic.conversation_id = "family-chat/7".into();
    expect_new(stores, &inbound("w-2", "telegram", None)).await;
    stores.pending.suspend(&in_topic, &[]).await.unwrap();
    let here = stores
        .pending
        .answer(
            "c-w-2",
            "alice",
            &from("telegram", Some("family-chat")),
            false,
            T0 + 1_000,
        )
        .await
        .unwrap();
    assert!(here.is_ok(), "{here:?}");
}

async fn journal_keeps_the_latest_state_until_the_turn_ends(stores: &Stores) {
    let journal = &stores.turn_journal;
    // Only a stored message has a turn.
    assert!(journal.save_turn("j-unknown", &json!({})).await.is_err());
    for id in ["j-1", "j-2", "j-3"] {
        expect_new(stores, &inbound(id, "telegram", None)).await;
        assert_eq!(journal.load_turn(id).await.unwrap(), None);
        journal.save_turn(id, &json!({"rounds": 1})).await.unwrap();
        journal
            .save_turn(
                id,
                &json!({"rounds": 2, "in_flight": "call-1", "text": "Ça va 🏠"}),
            )
            .await
            .unwrap();
        assert_eq!(
            journal.load_turn(id).await.unwrap(),
            Some(json!({"rounds": 2, "in_flight": "call-1", "text": "Ça va 🏠"}))
        );
    }
    // A failed attempt keeps it: the retry goes on from there.
    stores
        .inbox
        .record_failure("j-1", "llm down", 1)
        .await
        .unwrap();
    assert!(journal.load_turn("j-1").await.unwrap().is_some());
    // Answered, given up or suspended: the turn is over, so is its entry.
    let message = inbound("j-1", "telegram", None);
    stores
        .inbox
        .complete("j-1", &turn_for(&message, "done"))
        .await
        .unwrap();
    stores
        .inbox
        .give_up("j-2", "broken", "sorry", None)
        .await
        .unwrap();
    stores
        .pending
        .suspend(&confirmation("c-j-3", "j-3", T0), &[])
        .await
        .unwrap();
    for id in ["j-1", "j-2", "j-3"] {
        assert_eq!(journal.load_turn(id).await.unwrap(), None, "{id}");
    }
}

pub(crate) fn outgoing(channel: &str, conversation: &str, text: &str) -> OutgoingMessage {
    OutgoingMessage {
        channel: channel.into(),
        conversation_id: conversation.into(),
        inbox_id: Some("m-x".into()),
        text: text.into(),
        kind: OutgoingKind::Reply,
        reply_to_event: Some("1001:7".into()),
    }
}

async fn outbox_delivers_in_order_and_forgets_what_was_delivered(stores: &Stores) {
    let outbox = &stores.outbox;
    let first = outbox
        .enqueue(&outgoing("telegram", "1001", "one"))
        .await
        .unwrap();
    let prompt = OutgoingMessage {
        kind: OutgoingKind::Prompt {
            confirmation_id: "c-1".into(),
            member_id: "alice".into(),
        },
        ..outgoing("telegram", "1001", "Run it? Ça va 🏠")
    };
    let second = outbox.enqueue(&prompt).await.unwrap();
    let other = outbox
        .enqueue(&outgoing("matrix", "!room", "elsewhere"))
        .await
        .unwrap();
    let third = outbox
        .enqueue(&outgoing("telegram", "1002", "three"))
        .await
        .unwrap();
    assert!(first < second && second < other && other < third);
    let pending = outbox.undelivered("telegram").await.unwrap();
    let ids: Vec<i64> = pending.iter().map(|entry| entry.id).collect();
    assert_eq!(ids, [first, second, third]);
    assert_eq!(pending[1].message, prompt);
    assert_eq!((pending[0].attempts, pending[0].parts_delivered), (0, 0));

    outbox.part_delivered(first, 2).await.unwrap();
    assert_eq!(
        outbox
            .attempt_failed(first, "502 bad gateway")
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        outbox
            .attempt_failed(first, "502 bad gateway")
            .await
            .unwrap(),
        2
    );
    let again = &outbox.undelivered("telegram").await.unwrap()[0];
    assert_eq!(
        (again.id, again.attempts, again.parts_delivered),
        (first, 2, 2)
    );

    outbox.delivered(first, Some("1001:55")).await.unwrap();
    outbox.abandon(third, "chat not found").await.unwrap();
    let left: Vec<i64> = outbox
        .undelivered("telegram")
        .await
        .unwrap()
        .iter()
        .map(|entry| entry.id)
        .collect();
    assert_eq!(left, [second]);
    assert_eq!(outbox.undelivered("matrix").await.unwrap().len(), 1);
}

async fn outbox_stores_a_message_once_under_its_key(stores: &Stores) {
    let outbox = &stores.outbox;
    let said = outgoing("telegram", "1001", "I'll check order O-1.");
    let first = outbox.enqueue_once("plan-1.1", &said).await.unwrap();
    assert!(first.is_some());
    // Said again by a retry, pending or delivered: not stored twice.
    assert_eq!(outbox.enqueue_once("plan-1.1", &said).await.unwrap(), None);
    outbox.delivered(first.unwrap(), None).await.unwrap();
    assert_eq!(outbox.enqueue_once("plan-1.1", &said).await.unwrap(), None);
    assert!(outbox.undelivered("telegram").await.unwrap().is_empty());
    // Another key, or no key, is another message, in order after it.
    let other = outbox
        .enqueue_once("plan-2.1", &said)
        .await
        .unwrap()
        .unwrap();
    let plain = outbox.enqueue(&said).await.unwrap();
    assert!(first.unwrap() < other && other < plain);
    assert_eq!(outbox.undelivered("telegram").await.unwrap().len(), 2);
}

async fn outbox_rows_are_written_with_what_caused_them(stores: &Stores) {
    for id in ["o-1", "o-2", "o-3"] {
        expect_new(stores, &inbound(id, "telegram", None)).await;
    }
    let message = inbound("o-1", "telegram", None);
    let turn = TurnRecord {
        outgoing: Some(outgoing("telegram", "family-chat", "the answer")),
        ..turn_for(&message, "the answer")
    };
    let answer = stores.inbox.complete("o-1", &turn).await.unwrap();
    // Answered twice: refused, and nothing more is queued.
    assert!(stores.inbox.complete("o-1", &turn).await.is_err());
    let failed = outgoing("telegram", "family-chat", "sorry");
    let notice = stores
        .inbox
        .give_up("o-2", "broken", "sorry", Some(&failed))
        .await
        .unwrap();
    let prompt = outgoing("telegram", "family-chat", "Run it?");
    let asked = stores
        .pending
        .suspend(&confirmation("c-o-3", "o-3", T0), &[prompt])
        .await
        .unwrap();
    let asked = asked.first().copied();
    let queued: Vec<(Option<i64>, String)> = stores
        .outbox
        .undelivered("telegram")
        .await
        .unwrap()
        .into_iter()
        .map(|entry| (Some(entry.id), entry.message.text))
        .collect();
    assert_eq!(
        queued,
        [
            (answer, "the answer".to_string()),
            (notice, "sorry".to_string()),
            (asked, "Run it?".to_string()),
        ]
    );
    // Nothing to deliver: nothing queued.
    expect_new(stores, &inbound("o-4", "http", None)).await;
    let none = stores
        .inbox
        .complete("o-4", &turn_for(&inbound("o-4", "http", None), "x"))
        .await
        .unwrap();
    assert_eq!(none, None);
}

async fn retention_prunes_in_batches_only_what_is_old_enough(stores: &Stores) {
    use hearth::ports::Prunable;
    let now = hearth::ports::now_ms();
    for id in ["r-1", "r-2", "r-3", "r-waiting"] {
        expect_new(stores, &inbound(id, "telegram", None)).await;
    }
    let mut entries = 0;
    for id in ["r-1", "r-2", "r-3"] {
        let message = inbound(id, "telegram", None);
        let mut turn = turn_for(&message, "done");
        entries += turn.messages.len();
        for entry in &mut turn.messages {
            entry.created_at_ms = now - 10_000;
        }
        turn.outgoing = Some(outgoing("telegram", "family-chat", id));
        let queued = stores.inbox.complete(id, &turn).await.unwrap().unwrap();
        stores.outbox.delivered(queued, None).await.unwrap();
    }
    let retention = &stores.retention;
    // Nothing is that old yet.
    for what in Prunable::ALL {
        assert_eq!(retention.prune(what, now - 60_000, 100).await.unwrap(), 0);
    }
    // Everything finished is old by a cut-off in the future, taken two at a time.
    let later = now + 60_000;
    assert_eq!(
        retention
            .prune(Prunable::FinishedInbox, later, 2)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        retention
            .prune(Prunable::FinishedInbox, later, 2)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        retention
            .prune(Prunable::FinishedInbox, later, 2)
            .await
            .unwrap(),
        0
    );
    for id in ["r-1", "r-2", "r-3"] {
        assert_eq!(stores.inbox.get(id).await.unwrap(), None, "{id}");
    }
    // A message still waiting is never pruned.
    assert!(stores.inbox.get("r-waiting").await.unwrap().is_some());
    assert_eq!(
        retention
            .prune(Prunable::DeliveredOutbox, later, 10)
            .await
            .unwrap(),
        3
    );
    let history = retention
        .prune(Prunable::History, now - 5_000, 100)
        .await
        .unwrap();
    assert_eq!(history, entries, "every entry of the three turns");
    assert!(
        stores
            .memory
            .recent("telegram:family-chat", 10, 0)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn inbox_knows_the_events_it_accepted(stores: &Stores) {
    expect_new(stores, &inbound("k-1", "telegram", Some("1001:7"))).await;
    assert!(
        stores
            .inbox
            .knows_event("telegram", "1001:7")
            .await
            .unwrap()
    );
    assert!(!stores.inbox.knows_event("matrix", "1001:7").await.unwrap());
    assert!(
        !stores
            .inbox
            .knows_event("telegram", "1001:8")
            .await
            .unwrap()
    );
}

async fn pending_answer_twice_unknown_and_expired(stores: &Stores) {
    let twice = suspended(stores, "t-1", "c-t-1", T0).await;
    assert_eq!(
        answer(stores, "c-t-1", "alice", true, T0 + 1_000).await,
        Ok(twice.clone())
    );
    assert_eq!(
        answer(stores, "c-t-1", "alice", true, T0 + 2_000).await,
        Err(AnswerRefused::InProgress)
    );
    assert_eq!(
        answer(stores, "c-t-1", "alice", false, T0 + 3_000).await,
        Err(AnswerRefused::InProgress),
        "a denial cannot overturn an approval"
    );
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[("c-t-1", Some(Decision::Approved))])
    );

    // A denial cannot be turned into an approval either.
    suspended(stores, "t-2", "c-t-2", T0 + 1).await;
    assert!(
        answer(stores, "c-t-2", "alice", false, T0 + 1_000)
            .await
            .is_ok()
    );
    assert_eq!(
        answer(stores, "c-t-2", "alice", true, T0 + 2_000).await,
        Err(AnswerRefused::InProgress)
    );

    for id in ["no-such-confirmation", "", "C-T-1"] {
        assert_eq!(
            answer(stores, id, "alice", true, T0 + 1_000).await,
            Err(AnswerRefused::Unknown),
            "{id:?}"
        );
    }

    // Too late: at its expiry and after it.
    let late = suspended(stores, "t-3", "c-t-3", T0 + 2).await;
    for now_ms in [late.expires_at_ms, late.expires_at_ms + 1, i64::MAX] {
        for approve in [true, false] {
            assert_eq!(
                answer(stores, "c-t-3", "alice", approve, now_ms).await,
                Err(AnswerRefused::Expired),
                "answered at {now_ms}"
            );
        }
    }
    assert_eq!(
        open_decisions(stores).await[..2],
        decisions(&[
            ("c-t-1", Some(Decision::Approved)),
            ("c-t-2", Some(Decision::Denied)),
        ])
    );
    let late_decision = open_decisions(stores).await[2].clone();
    assert_eq!(late_decision.0, "c-t-3");
    assert!(
        matches!(late_decision.1, None | Some(Decision::Expired)),
        "a late answer decides nothing: {late_decision:?}"
    );
    // Once its turn went on with it, it is simply answered.
    stores.pending.consume("c-t-1").await.unwrap();
    assert_eq!(
        answer(stores, "c-t-1", "alice", true, T0 + 3_000).await,
        Err(AnswerRefused::AlreadyAnswered)
    );
}

async fn pending_expire_due_answers_only_the_due_pending_ones(stores: &Stores) {
    // Created in this order; due at T0 + 60_000, T0 + 60_004 and T0 + 65_000.
    let due_first = suspended(stores, "e-1", "c-e-1", T0).await;
    let answered = suspended(stores, "e-2", "c-e-2", T0 + 2).await;
    let mut future = confirmation("c-e-3", "e-3", T0 + 3);
    future.expires_at_ms = T0 + 65_000;
    expect_new(stores, &inbound("e-3", "telegram", None)).await;
    stores.pending.suspend(&future, &[]).await.unwrap();
    let due_last = suspended(stores, "e-4", "c-e-4", T0 + 4).await;
    assert!(
        answer(stores, "c-e-2", "alice", true, T0 + 100)
            .await
            .is_ok()
    );

    assert!(
        stores
            .pending
            .expire_due(T0 + WAIT_MS - 1)
            .await
            .unwrap()
            .is_empty(),
        "nothing is due a millisecond early"
    );
    // Due exactly at its expiry, like `answer`'s refusal.
    let now_ms = due_last.expires_at_ms;
    assert_eq!(
        stores.pending.expire_due(now_ms).await.unwrap(),
        [due_first.clone(), due_last.clone()]
    );
    assert_eq!(
        open_confirmations(stores).await,
        [
            open_one(&due_first, Some(Decision::Expired)),
            open_one(&answered, Some(Decision::Approved)),
            open_one(&future, None),
            open_one(&due_last, Some(Decision::Expired)),
        ]
    );

    // Expired is final, whatever the clock says.
    for at_ms in [T0 + 1, now_ms + 1] {
        assert_eq!(
            answer(stores, "c-e-1", "alice", true, at_ms).await,
            Err(AnswerRefused::Expired),
            "answered at {at_ms}"
        );
    }
    assert!(stores.pending.expire_due(now_ms).await.unwrap().is_empty());
    assert!(
        stores
            .pending
            .expire_due(future.expires_at_ms - 1)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        stores
            .pending
            .expire_due(future.expires_at_ms)
            .await
            .unwrap(),
        [future.clone()]
    );
    assert!(
        stores
            .pending
            .expire_due(i64::MAX)
            .await
            .unwrap()
            .is_empty()
    );

    // The expired turns resume with `Expired`; the answered one keeps its decision.
    assert_eq!(
        stores.pending.consume("c-e-1").await.unwrap(),
        Some(Decision::Expired)
    );
    assert_eq!(
        stores.pending.consume("c-e-2").await.unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[
            ("c-e-3", Some(Decision::Expired)),
            ("c-e-4", Some(Decision::Expired)),
        ])
    );
    // Expiring never touches the inbox.
    for id in ["e-1", "e-2", "e-3", "e-4"] {
        assert_eq!(record_of(stores, id).await.status, InboxStatus::Suspended);
    }
}

async fn pending_consume_returns_the_decision_once(stores: &Stores) {
    suspended(stores, "k-1", "c-k-1", T0).await;
    suspended(stores, "k-2", "c-k-2", T0 + 1).await;
    let waiting = suspended(stores, "k-3", "c-k-3", T0 + 2).await;
    assert!(
        answer(stores, "c-k-1", "alice", true, T0 + 10)
            .await
            .is_ok()
    );
    assert!(
        answer(stores, "c-k-2", "alice", false, T0 + 10)
            .await
            .is_ok()
    );

    // Nothing to resume with while it waits.
    assert_eq!(stores.pending.consume("c-k-3").await.unwrap(), None);
    assert_eq!(stores.pending.consume("no-such-id").await.unwrap(), None);

    assert_eq!(
        stores.pending.consume("c-k-1").await.unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(stores.pending.consume("c-k-1").await.unwrap(), None);
    assert_eq!(
        stores.pending.consume("c-k-2").await.unwrap(),
        Some(Decision::Denied)
    );
    assert_eq!(stores.pending.consume("c-k-2").await.unwrap(), None);
    assert_eq!(open_confirmations(stores).await, [open_one(&waiting, None)]);

    // A consumed confirmation stays answered: it cannot be answered again.
    assert_eq!(
        answer(stores, "c-k-1", "alice", false, T0 + 20).await,
        Err(AnswerRefused::AlreadyAnswered)
    );
    assert_eq!(
        answer(stores, "c-k-1", "bob", false, T0 + 20).await,
        Err(AnswerRefused::NotYours)
    );
    assert_eq!(
        stores.pending.expire_due(i64::MAX - 1).await.unwrap(),
        [waiting]
    );
    assert_eq!(stores.pending.consume("c-k-1").await.unwrap(), None);

    // The one that waited expired meanwhile, and is consumed like the others.
    assert_eq!(
        stores.pending.consume("c-k-3").await.unwrap(),
        Some(Decision::Expired)
    );
    assert_eq!(stores.pending.consume("c-k-3").await.unwrap(), None);
    assert!(open_confirmations(stores).await.is_empty());
}

async fn pending_racing_answers_and_consumes_have_one_winner(stores: &Stores) {
    suspended(stores, "r-1", "c-r-1", T0).await;

    let mut answers = Vec::new();
    for n in 0..40 {
        let pending = stores.pending.clone();
        let approve = n % 2 == 0;
        answers.push(tokio::spawn(async move {
            let outcome = pending
                .answer(
                    "c-r-1",
                    "alice",
                    &AnswerPlace::new("telegram", None),
                    approve,
                    T0 + 1_000,
                )
                .await
                .unwrap();
            (approve, outcome)
        }));
    }
    let mut winners = Vec::new();
    for answer in answers {
        match answer.await.unwrap() {
            (approve, Ok(_)) => winners.push(approve),
            // Answered and not yet taken by its turn: being worked on.
            (_, Err(refused)) => assert_eq!(refused, AnswerRefused::InProgress),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one answer wins");
    let decision = if winners[0] {
        Decision::Approved
    } else {
        Decision::Denied
    };
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[("c-r-1", Some(decision))])
    );

    let mut consumes = Vec::new();
    for _ in 0..40 {
        let pending = stores.pending.clone();
        consumes.push(tokio::spawn(async move {
            pending.consume("c-r-1").await.unwrap()
        }));
    }
    let mut resumed = Vec::new();
    for consume in consumes {
        if let Some(decision) = consume.await.unwrap() {
            resumed.push(decision);
        }
    }
    assert_eq!(resumed, [decision], "the turn resumes exactly once");
    assert!(open_confirmations(stores).await.is_empty());
}

async fn pending_complete_after_consume_answers_the_suspended_message(stores: &Stores) {
    let message = inbound("d-1", "telegram", None);
    expect_new(stores, &message).await;
    stores
        .pending
        .suspend(&confirmation("c-d-1", "d-1", T0), &[])
        .await
        .unwrap();
    assert!(answer(stores, "c-d-1", "alice", true, T0 + 5).await.is_ok());
    assert_eq!(
        stores.pending.consume("c-d-1").await.unwrap(),
        Some(Decision::Approved)
    );

    let turn = turn_for(&message, "Deleted, and Bob and Carol know.");
    stores.inbox.complete("d-1", &turn).await.unwrap();

    let record = record_of(stores, "d-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(
        record.reply.as_deref(),
        Some("Deleted, and Bob and Carol know.")
    );
    assert_eq!(record.error, None);
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());
    let history = stores
        .memory
        .recent(&message.conversation_key(), 50, 0)
        .await
        .unwrap();
    assert_eq!(
        history,
        [turn.messages[0].clone(), turn.messages[3].clone()],
        "user question and final answer, in order"
    );

    // Finished: neither completed again nor suspended again.
    let again = stores
        .inbox
        .complete("d-1", &turn_for(&message, "again"))
        .await;
    assert!(again.is_err(), "completing an answered message: {again:?}");
    let result = stores
        .pending
        .suspend(&confirmation("c-d-2", "d-1", T0 + 10), &[])
        .await;
    assert!(
        result.is_err(),
        "suspending an answered message: {result:?}"
    );
    assert!(open_confirmations(stores).await.is_empty());
    assert_eq!(record_of(stores, "d-1").await.status, InboxStatus::Answered);
}

/// A turn resumed after one confirmation may need another before it finishes.
async fn pending_a_resumed_turn_can_ask_again(stores: &Stores) {
    let message = inbound("g-1", "telegram", None);
    expect_new(stores, &message).await;
    let first = confirmation("c-g-1", "g-1", T0);
    stores.pending.suspend(&first, &[]).await.unwrap();
    assert!(answer(stores, "c-g-1", "alice", true, T0 + 5).await.is_ok());
    assert_eq!(
        stores.pending.consume("c-g-1").await.unwrap(),
        Some(Decision::Approved)
    );

    let second = confirmation("c-g-2", "g-1", T0 + 10);
    stores.pending.suspend(&second, &[]).await.unwrap();
    assert_eq!(
        record_of(stores, "g-1").await.status,
        InboxStatus::Suspended
    );
    assert_eq!(open_confirmations(stores).await, [open_one(&second, None)]);
    assert!(
        answer(stores, "c-g-2", "alice", false, T0 + 15)
            .await
            .is_ok()
    );
    assert_eq!(
        stores.pending.consume("c-g-2").await.unwrap(),
        Some(Decision::Denied)
    );
    stores
        .inbox
        .complete("g-1", &turn_for(&message, "Done, but I kept the event."))
        .await
        .unwrap();
    assert_eq!(record_of(stores, "g-1").await.status, InboxStatus::Answered);
}

/// A confirmation id names one confirmation: suspending under an id already stored is
/// refused, and the refused suspension leaves its message accepted (on SQLite the
/// primary key refuses it and the savepoint rolls the inbox update back).
async fn pending_suspend_refuses_a_used_confirmation_id(stores: &Stores) {
    let first = suspended(stores, "x-1", "c-x", T0).await;
    expect_new(stores, &inbound("x-2", "telegram", None)).await;

    let result = stores
        .pending
        .suspend(&confirmation("c-x", "x-2", T0 + 1), &[])
        .await;
    assert!(result.is_err(), "suspending under a used id: {result:?}");
    assert_eq!(record_of(stores, "x-2").await.status, InboxStatus::Accepted);
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["x-2"]);
    assert_eq!(open_confirmations(stores).await, [open_one(&first, None)]);
    assert_eq!(
        answer(stores, "c-x", "alice", true, T0 + 10).await,
        Ok(first.clone())
    );
}

/// `open` lists confirmations oldest first by `created_at_ms`, even when concurrent
/// turns suspended them in another order.
async fn pending_open_lists_oldest_first_by_creation_time(stores: &Stores) {
    suspended(stores, "o-1", "c-o-newer", T0 + 500).await;
    suspended(stores, "o-2", "c-o-older", T0 + 100).await;
    suspended(stores, "o-3", "c-o-newest", T0 + 900).await;
    assert_eq!(
        open_decisions(stores).await,
        decisions(&[
            ("c-o-older", None),
            ("c-o-newer", None),
            ("c-o-newest", None),
        ])
    );
}

// ---------------------------------------------------------------------------
// TelemetrySink
// ---------------------------------------------------------------------------

fn llm_call(at_ms: i64) -> LlmCallRecord {
    LlmCallRecord {
        at_ms,
        llm_name: "main".to_string(),
        model: "gpt-test".to_string(),
        backend: "openai".to_string(),
        wire: "chat_completions".to_string(),
        profile_id: Some("family".to_string()),
        conversation_key: Some("http:kitchen".to_string()),
        attempt: 2,
        outcome: "ok".to_string(),
        input_tokens: 1_234,
        output_tokens: 56,
        latency_ms: 789,
        cost_usd: 0.0125,
    }
}

fn stage_event(at_ms: i64) -> TelemetryEvent {
    TelemetryEvent::Stage {
        at_ms,
        conversation_key: "http:kitchen".to_string(),
        stage: "prompt_built".to_string(),
        payload: json!({"messages": 3, "profile": "family"}),
    }
}

async fn telemetry_record_never_fails(stores: &Stores) {
    // `record` is fire-and-forget: it neither blocks nor fails, whatever the adapter.
    for at_ms in 0..100 {
        stores
            .telemetry
            .record(TelemetryEvent::LlmCall(llm_call(at_ms)));
        stores.telemetry.record(stage_event(at_ms));
    }
    stores.inbox.ping().await.unwrap();
}

// ---------------------------------------------------------------------------
// ShoppingLists
// ---------------------------------------------------------------------------

fn shopping_item(name: &str, quantity: u32, added_by: &str, added_at_ms: i64) -> ShoppingItem {
    ShoppingItem {
        name: name.to_string(),
        quantity,
        added_by: added_by.to_string(),
        added_at_ms,
    }
}

async fn item_names(stores: &Stores, list: &str) -> Vec<String> {
    let items = stores.shopping_lists.list(list).await.unwrap();
    items.into_iter().map(|item| item.name).collect()
}

async fn shopping_add_merges_the_same_item_whatever_its_case(stores: &Stores) {
    let lists = &stores.shopping_lists;
    let milk = lists
        .add("groceries", "Milk", 2, "alice", T0)
        .await
        .unwrap();
    assert_eq!(milk, shopping_item("Milk", 2, "alice", T0));
    // Another spelling, member and time: the item first added grows, and keeps its
    // spelling, who added it and when.
    let merged = lists
        .add("groceries", "  mILK \n", 3, "bob", T0 + 1)
        .await
        .unwrap();
    assert_eq!(merged, shopping_item("Milk", 5, "alice", T0));
    // Beyond ASCII too, where SQLite's own NOCASE would not see one item.
    lists
        .add("groceries", " Äpfel", 1, "bob", T0 + 2)
        .await
        .unwrap();
    let apples = lists
        .add("groceries", "äPFEL", 2, "alice", T0 + 3)
        .await
        .unwrap();
    assert_eq!(apples, shopping_item("Äpfel", 3, "bob", T0 + 2));
    // List names are compared the same way.
    assert_eq!(
        lists.list(" Groceries ").await.unwrap(),
        vec![
            shopping_item("Milk", 5, "alice", T0),
            shopping_item("Äpfel", 3, "bob", T0 + 2),
        ]
    );
}

async fn shopping_lists_items_in_the_order_first_added(stores: &Stores) {
    let lists = &stores.shopping_lists;
    assert!(lists.list("groceries").await.unwrap().is_empty());
    // Times against the order of adding: only the adding explains the listing.
    for (n, name) in ["bread", "eggs", "milk", "butter"].into_iter().enumerate() {
        let at_ms = T0 - i64::try_from(n).unwrap();
        lists
            .add("groceries", name, 1, "alice", at_ms)
            .await
            .unwrap();
    }
    lists
        .add("groceries", "EGGS", 6, "bob", T0 + 9)
        .await
        .unwrap();
    assert_eq!(
        item_names(stores, "groceries").await,
        ["bread", "eggs", "milk", "butter"],
        "adding more keeps an item's place"
    );
    // Removed and added again: added anew, so last.
    assert!(lists.remove("groceries", "bread").await.unwrap());
    lists.add("groceries", "Bread", 1, "bob", T0).await.unwrap();
    assert_eq!(
        item_names(stores, "groceries").await,
        ["eggs", "milk", "butter", "Bread"]
    );
}

async fn shopping_remove_by_name_reports_whether_it_was_there(stores: &Stores) {
    let lists = &stores.shopping_lists;
    lists
        .add("groceries", "Bread", 2, "alice", T0)
        .await
        .unwrap();
    lists
        .add("groceries", "Milk", 1, "alice", T0)
        .await
        .unwrap();
    lists.add("hardware", "bread", 1, "bob", T0).await.unwrap();
    assert!(lists.remove("groceries", " BREAD ").await.unwrap());
    assert!(!lists.remove("groceries", "bread").await.unwrap(), "gone");
    assert!(!lists.remove("groceries", "cheese").await.unwrap());
    assert!(!lists.remove("never-made", "bread").await.unwrap());
    assert_eq!(item_names(stores, "groceries").await, ["Milk"]);
    assert_eq!(item_names(stores, "hardware").await, ["bread"]);
}

async fn shopping_lists_are_independent_and_clear_counts(stores: &Stores) {
    let lists = &stores.shopping_lists;
    for name in ["milk", "tape", "eggs"] {
        lists.add("groceries", name, 1, "alice", T0).await.unwrap();
    }
    let tape = lists
        .add("hardware", "Tape", 4, "bob", T0 + 1)
        .await
        .unwrap();
    assert_eq!(tape, shopping_item("Tape", 4, "bob", T0 + 1), "not merged");
    lists
        .add("hardware", "nails", 1, "bob", T0 + 2)
        .await
        .unwrap();

    assert_eq!(lists.clear("groceries").await.unwrap(), 3);
    assert!(lists.list("groceries").await.unwrap().is_empty());
    assert_eq!(lists.clear("groceries").await.unwrap(), 0);
    assert_eq!(lists.clear("never-made").await.unwrap(), 0);
    assert_eq!(
        lists.list("hardware").await.unwrap(),
        vec![
            shopping_item("Tape", 4, "bob", T0 + 1),
            shopping_item("nails", 1, "bob", T0 + 2),
        ]
    );
    // A cleared list starts afresh.
    let milk = lists
        .add("groceries", "milk", 1, "bob", T0 + 5)
        .await
        .unwrap();
    assert_eq!(milk, shopping_item("milk", 1, "bob", T0 + 5));
}

async fn shopping_refuses_blank_names_and_zero_quantity(stores: &Stores) {
    let lists = &stores.shopping_lists;
    let refused = |result: Result<ShoppingItem, StorageError>, what: &str| match result {
        Err(StorageError::Invalid(message)) => {
            assert!(message.contains(what), "{message} names {what}")
        }
        other => panic!("{what}: expected Invalid, got {other:?}"),
    };
    refused(lists.add("groceries", "milk", 0, "alice", T0).await, "0");
    refused(
        lists.add("groceries", " \t", 1, "alice", T0).await,
        "shopping item",
    );
    refused(
        lists.add("  ", "milk", 1, "alice", T0).await,
        "shopping list",
    );
    assert!(lists.list("groceries").await.unwrap().is_empty());
    // The quantity stops at the most the port can carry.
    lists
        .add("groceries", "rice", u32::MAX - 1, "alice", T0)
        .await
        .unwrap();
    let rice = lists
        .add("groceries", "rice", 5, "alice", T0)
        .await
        .unwrap();
    assert_eq!(rice.quantity, u32::MAX);
}

// ---------------------------------------------------------------------------
// PendingPluginCalls
// ---------------------------------------------------------------------------

/// A call waiting for `member_id` in `conversation_key`, with parameters awkward enough
/// that only an exact round trip keeps them equal.
fn plugin_call(
    conversation_key: &str,
    member_id: &str,
    question: &str,
    expires_at_ms: i64,
) -> PendingPluginCall {
    let parameters = json!({
        "item": "milk \"whole\"",
        "count": 2,
        "options": {"organic": true, "brands": ["Ü", null]},
    });
    PendingPluginCall {
        conversation_key: conversation_key.to_string(),
        member_id: member_id.to_string(),
        plugin_id: "buy".to_string(),
        capability_id: "place_order".to_string(),
        parameters: parameters.as_object().unwrap().clone(),
        missing: vec!["address".to_string(), "phone".to_string()],
        question: question.to_string(),
        created_at_ms: expires_at_ms - WAIT_MS,
        expires_at_ms,
    }
}

async fn plugin_call_put_replaces_the_earlier_one(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let first = plugin_call("telegram:1", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&first).await.unwrap();
    let second = PendingPluginCall {
        capability_id: "cancel_order".to_string(),
        parameters: serde_json::Map::new(),
        missing: vec!["order_id".to_string()],
        ..plugin_call("telegram:1", "alice", "Which order?", T0 + 2 * WAIT_MS)
    };
    calls.put(&second).await.unwrap();
    assert_eq!(
        calls.peek("telegram:1", "alice", T0).await.unwrap(),
        Some(second.clone())
    );
    // Another member, or the same member elsewhere, has a call of their own.
    let bobs = plugin_call("telegram:1", "bob", "Bob, which address?", T0 + WAIT_MS);
    let elsewhere = plugin_call("matrix:!room", "alice", "Where?", T0 + WAIT_MS);
    calls.put(&bobs).await.unwrap();
    calls.put(&elsewhere).await.unwrap();
    assert_eq!(
        calls.take_valid("telegram:1", "alice", T0).await.unwrap(),
        Some(second)
    );
    assert_eq!(
        calls.peek("telegram:1", "bob", T0).await.unwrap(),
        Some(bobs)
    );
    assert_eq!(
        calls.peek("matrix:!room", "alice", T0).await.unwrap(),
        Some(elsewhere)
    );
    assert_eq!(calls.peek("telegram:1", "carol", T0).await.unwrap(), None);
}

async fn plugin_call_take_valid_hands_it_out_once(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let call = plugin_call("http:kitchen", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&call).await.unwrap();
    // Valid until just before `expires_at_ms`.
    assert_eq!(
        calls
            .take_valid("http:kitchen", "alice", T0 + WAIT_MS - 1)
            .await
            .unwrap(),
        Some(call)
    );
    assert_eq!(
        calls.take_valid("http:kitchen", "alice", T0).await.unwrap(),
        None,
        "taken already"
    );
    assert_eq!(calls.peek("http:kitchen", "alice", T0).await.unwrap(), None);
}

async fn plugin_call_take_valid_drops_an_expired_call(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let call = plugin_call("http:kitchen", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&call).await.unwrap();
    assert_eq!(
        calls
            .take_valid("http:kitchen", "alice", T0 + WAIT_MS)
            .await
            .unwrap(),
        None,
        "expired at expires_at_ms"
    );
    // Removed, not just hidden: it is gone even for an earlier clock.
    assert_eq!(calls.peek("http:kitchen", "alice", T0).await.unwrap(), None);
    assert!(!calls.clear("http:kitchen", "alice").await.unwrap());
}

async fn plugin_call_peek_leaves_it_and_clear_removes_it(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    let call = plugin_call("http:kitchen", "alice", "Which address?", T0 + WAIT_MS);
    calls.put(&call).await.unwrap();
    for _ in 0..2 {
        assert_eq!(
            calls.peek("http:kitchen", "alice", T0).await.unwrap(),
            Some(call.clone())
        );
    }
    // Past its expiry peek shows nothing, and removes nothing either.
    assert_eq!(
        calls
            .peek("http:kitchen", "alice", T0 + WAIT_MS)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        calls.peek("http:kitchen", "alice", T0).await.unwrap(),
        Some(call)
    );
    // Clearing also removes an expired call, and says it was there.
    assert!(calls.clear("http:kitchen", "alice").await.unwrap());
    assert!(!calls.clear("http:kitchen", "alice").await.unwrap());
    assert_eq!(calls.peek("http:kitchen", "alice", T0).await.unwrap(), None);
}

async fn plugin_call_expire_due_removes_only_the_due_ones(stores: &Stores) {
    let calls = &stores.pending_plugin_calls;
    assert_eq!(calls.expire_due(T0).await.unwrap(), 0);
    for (member, expires_at_ms) in [("alice", T0 + 1), ("bob", T0 + 2), ("carol", T0 + 10)] {
        let call = plugin_call("telegram:1", member, "Which address?", expires_at_ms);
        calls.put(&call).await.unwrap();
    }
    assert_eq!(calls.expire_due(T0 + 2).await.unwrap(), 2);
    assert_eq!(calls.expire_due(T0 + 2).await.unwrap(), 0);
    for member in ["alice", "bob"] {
        assert_eq!(calls.peek("telegram:1", member, T0).await.unwrap(), None);
    }
    assert_eq!(
        calls.peek("telegram:1", "carol", T0).await.unwrap(),
        Some(plugin_call(
            "telegram:1",
            "carol",
            "Which address?",
            T0 + 10
        ))
    );
}

// ---------------------------------------------------------------------------
// RegisteredPlugins
// ---------------------------------------------------------------------------

fn manifest(id: &str, url: &str) -> serde_json::Value {
    json!({
        "id": id,
        "name": format!("{id} plugin"),
        "type": "http",
        "url": url,
        "timeout_seconds": 20,
        "capabilities": [{
            "id": "run",
            "parameters": [{"name": "item", "type": "string", "required": true}],
        }],
    })
}

async fn registered_plugins_upsert_get_list_remove(stores: &Stores) {
    let plugins = &stores.registered_plugins;
    assert!(plugins.list().await.unwrap().is_empty());
    assert_eq!(plugins.get("weather").await.unwrap(), None);
    let weather = manifest("weather", "http://127.0.0.1:9101/run");
    plugins.upsert("weather", &weather, T0).await.unwrap();
    plugins
        .upsert("buy", &manifest("buy", "http://old.example/run"), T0 + 1)
        .await
        .unwrap();
    // Registering again replaces the manifest and the time.
    let buy = manifest("buy", "http://127.0.0.1:9100/run");
    plugins.upsert("buy", &buy, T0 + 2).await.unwrap();

    let buy = RegisteredPlugin {
        plugin_id: "buy".to_string(),
        manifest: buy,
        registered_at_ms: T0 + 2,
    };
    let weather = RegisteredPlugin {
        plugin_id: "weather".to_string(),
        manifest: weather,
        registered_at_ms: T0,
    };
    assert_eq!(plugins.get("buy").await.unwrap(), Some(buy.clone()));
    assert_eq!(
        plugins.list().await.unwrap(),
        vec![buy.clone(), weather.clone()],
        "by id"
    );
    assert!(plugins.remove("weather").await.unwrap());
    assert!(!plugins.remove("weather").await.unwrap());
    assert!(!plugins.remove("never-registered").await.unwrap());
    assert_eq!(plugins.get("weather").await.unwrap(), None);
    assert_eq!(plugins.list().await.unwrap(), vec![buy]);
}

// ---------------------------------------------------------------------------
// SQLite only
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_telemetry_writer_fills_its_tables() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());
    let stores = open_or_panic(&url).await;

    stores
        .telemetry
        .record(TelemetryEvent::LlmCall(llm_call(1_700_000_000_000)));
    stores.telemetry.record(stage_event(1_700_000_000_001));

    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let calls: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM llm_calls")
            .fetch_one(&pool)
            .await
            .unwrap();
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM telemetry_events")
            .fetch_one(&pool)
            .await
            .unwrap();
        if calls == 1 && events == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "telemetry not written: {calls} llm_calls, {events} telemetry_events"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    let call = sqlx::query(
        "SELECT at_ms, llm_name, model, backend, wire, profile_id, conversation_key, attempt, \
         outcome, input_tokens, output_tokens, latency_ms, cost_usd FROM llm_calls",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(call.get::<i64, _>("at_ms"), 1_700_000_000_000);
    assert_eq!(call.get::<String, _>("llm_name"), "main");
    assert_eq!(call.get::<String, _>("model"), "gpt-test");
    assert_eq!(call.get::<String, _>("backend"), "openai");
    assert_eq!(call.get::<String, _>("wire"), "chat_completions");
    assert_eq!(
        call.get::<Option<String>, _>("profile_id").as_deref(),
        Some("family")
    );
    assert_eq!(
        call.get::<Option<String>, _>("conversation_key").as_deref(),
        Some("http:kitchen")
    );
    assert_eq!(call.get::<i64, _>("attempt"), 2);
    assert_eq!(call.get::<String, _>("outcome"), "ok");
    assert_eq!(call.get::<i64, _>("input_tokens"), 1_234);
    assert_eq!(call.get::<i64, _>("output_tokens"), 56);
    assert_eq!(call.get::<i64, _>("latency_ms"), 789);
    assert!((call.get::<f64, _>("cost_usd") - 0.0125).abs() < 1e-12);

    let event = sqlx::query("SELECT at_ms, conversation_key, stage, payload FROM telemetry_events")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(event.get::<i64, _>("at_ms"), 1_700_000_000_001);
    assert_eq!(event.get::<String, _>("conversation_key"), "http:kitchen");
    assert_eq!(event.get::<String, _>("stage"), "prompt_built");
    let payload: serde_json::Value =
        serde_json::from_str(&event.get::<String, _>("payload")).unwrap();
    assert_eq!(payload, json!({"messages": 3, "profile": "family"}));

    // A burst larger than one batch arrives whole.
    for at_ms in 0..600 {
        stores.telemetry.record(stage_event(at_ms));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM telemetry_events")
            .fetch_one(&pool)
            .await
            .unwrap();
        if events == 601 {
            break;
        }
        assert!(events < 601, "more events than recorded: {events}");
        assert!(
            Instant::now() < deadline,
            "only {events} of 601 events written"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_data_across_reopen() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());

    let answered = inbound("m-1", "http", Some("http-1"));
    let pending = inbound("m-2", "telegram", Some("upd-9"));
    {
        let stores = open_or_panic(&url).await;
        expect_new(&stores, &answered).await;
        expect_new(&stores, &pending).await;
        stores
            .inbox
            .complete("m-1", &turn_for(&answered, "stored answer"))
            .await
            .unwrap();
        stores
            .inbox
            .record_failure("m-2", "timeout", 42_000)
            .await
            .unwrap();
        stores
            .profiles
            .set("alice", "name", Some("Alice"))
            .await
            .unwrap();
        stores
            .memory
            .append("console:local", &[entry(Role::User, "hello", 5)])
            .await
            .unwrap();
    }

    // Each reopen runs the migrations again over the existing schema.
    for round in 0..2 {
        let stores = open_or_panic(&url).await;
        stores.inbox.ping().await.unwrap();

        let record = record_of(&stores, "m-1").await;
        assert_eq!(record.status, InboxStatus::Answered, "round {round}");
        assert_eq!(record.reply.as_deref(), Some("stored answer"));
        let unanswered = stores.inbox.unanswered().await.unwrap();
        assert_eq!(ids(&unanswered), ["m-2"], "the pending message is resumed");
        assert_eq!(unanswered[0].attempts, 1);
        assert_eq!(unanswered[0].next_attempt_at_ms, Some(42_000));
        assert_eq!(unanswered[0].inbound, pending);

        // Deduplication survives the restart too.
        expect_duplicate_of(&stores, &inbound("m-3", "http", Some("http-1")), &answered).await;

        let history = stores
            .memory
            .recent(&answered.conversation_key(), 10, 0)
            .await
            .unwrap();
        assert_eq!(
            contents(&history),
            [answered.text.as_str(), "stored answer"]
        );
        let console = stores.memory.recent("console:local", 10, 0).await.unwrap();
        assert_eq!(contents(&console), ["hello"]);
        assert_eq!(
            stores.profiles.get("alice").await.unwrap(),
            facts(&[("name", "Alice")])
        );
    }

    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/sqlite"))
        .unwrap()
        .filter(|file| {
            file.as_ref()
                .is_ok_and(|file| file.path().extension().is_some_and(|ext| ext == "sql"))
        })
        .count();
    assert_eq!(
        applied,
        i64::try_from(files).unwrap(),
        "each migration recorded once"
    );
    pool.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_suspended_turns_across_reopen() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());

    // The ids sort against the creation order: only `created_at_ms` explains the listing.
    let waiting = confirmation("z-waiting", "p-1", T0);
    let approved = confirmation("m-approved", "p-2", T0 + 1);
    let consumed = confirmation("a-consumed", "p-3", T0 + 2);
    {
        let stores = open_or_panic(&url).await;
        for asked in [&waiting, &approved, &consumed] {
            expect_new(&stores, &inbound(&asked.inbox_id, "telegram", None)).await;
            stores.pending.suspend(asked, &[]).await.unwrap();
        }
        expect_new(&stores, &inbound("p-4", "telegram", None)).await;
        assert!(
            answer(&stores, "m-approved", "alice", true, T0 + 10)
                .await
                .is_ok()
        );
        assert!(
            answer(&stores, "a-consumed", "alice", false, T0 + 10)
                .await
                .is_ok()
        );
        assert_eq!(
            stores.pending.consume("a-consumed").await.unwrap(),
            Some(Decision::Denied)
        );
    }

    // Each reopen runs the migrations again over the existing schema.
    for round in 0..2 {
        let stores = open_or_panic(&url).await;
        for id in ["p-1", "p-2", "p-3"] {
            assert_eq!(
                record_of(&stores, id).await.status,
                InboxStatus::Suspended,
                "{id}, round {round}"
            );
        }
        assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["p-4"]);
        assert_eq!(
            open_confirmations(&stores).await,
            [
                open_one(&waiting, None),
                open_one(&approved, Some(Decision::Approved)),
            ],
            "round {round}"
        );
    }

    // The reopened store carries on where the first one stopped.
    {
        let stores = open_or_panic(&url).await;
        assert_eq!(
            answer(&stores, "m-approved", "alice", false, T0 + 20).await,
            Err(AnswerRefused::InProgress)
        );
        assert_eq!(
            answer(&stores, "a-consumed", "alice", true, T0 + 20).await,
            Err(AnswerRefused::AlreadyAnswered)
        );
        assert_eq!(stores.pending.consume("a-consumed").await.unwrap(), None);
        assert_eq!(
            answer(&stores, "z-waiting", "bob", true, T0 + 20).await,
            Err(AnswerRefused::NotYours)
        );
        assert_eq!(
            answer(&stores, "z-waiting", "alice", true, T0 + 20).await,
            Ok(waiting.clone())
        );
        assert_eq!(
            stores.pending.consume("m-approved").await.unwrap(),
            Some(Decision::Approved)
        );
        let message = record_of(&stores, "p-2").await.inbound;
        stores
            .inbox
            .complete("p-2", &turn_for(&message, "done after a restart"))
            .await
            .unwrap();
    }
    let stores = open_or_panic(&url).await;
    assert_eq!(
        open_confirmations(&stores).await,
        [open_one(&waiting, Some(Decision::Approved))]
    );
    assert!(
        stores
            .pending
            .expire_due(i64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
    let record = record_of(&stores, "p-2").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(record.reply.as_deref(), Some("done after a restart"));
    assert_eq!(
        record_of(&stores, "p-1").await.status,
        InboxStatus::Suspended
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_plugin_storage_across_reopen() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());

    let call = plugin_call("telegram:1", "alice", "Which address?", T0 + WAIT_MS);
    let buy = manifest("buy", "http://127.0.0.1:9100/run");
    {
        let stores = open_or_panic(&url).await;
        for name in ["bread", "Milk", "eggs"] {
            stores
                .shopping_lists
                .add("groceries", name, 1, "alice", T0)
                .await
                .unwrap();
        }
        stores.pending_plugin_calls.put(&call).await.unwrap();
        stores
            .registered_plugins
            .upsert("buy", &buy, T0)
            .await
            .unwrap();
    }

    for round in 0..2 {
        let stores = open_or_panic(&url).await;
        assert_eq!(
            item_names(&stores, "groceries").await,
            ["bread", "Milk", "eggs"],
            "round {round}"
        );
        assert_eq!(
            stores
                .pending_plugin_calls
                .peek("telegram:1", "alice", T0)
                .await
                .unwrap(),
            Some(call.clone())
        );
        assert_eq!(
            stores.registered_plugins.list().await.unwrap(),
            vec![RegisteredPlugin {
                plugin_id: "buy".to_string(),
                manifest: buy.clone(),
                registered_at_ms: T0,
            }]
        );
    }

    // Merging still finds the item stored before the restart.
    let stores = open_or_panic(&url).await;
    let milk = stores
        .shopping_lists
        .add("groceries", "MILK", 2, "bob", T0 + 1)
        .await
        .unwrap();
    assert_eq!(milk, shopping_item("Milk", 3, "alice", T0));
    assert_eq!(
        stores
            .pending_plugin_calls
            .take_valid("telegram:1", "alice", T0)
            .await
            .unwrap(),
        Some(call)
    );
}

fn expect_unsupported(result: Result<Stores, StorageError>, url: &str) {
    match result {
        Err(error @ StorageError::UnsupportedUrl { .. }) => {
            let message = error.to_string();
            // Named, but never with its password.
            assert!(
                message.contains(&hearth::config::redact_url_password(url)),
                "{message}"
            );
            assert!(!message.contains("secret"), "{message}");
            assert!(!message.ends_with(": "), "a reason is given: {message}");
        }
        Err(other) => panic!("{url}: expected UnsupportedUrl, got {other}"),
        Ok(_) => panic!("{url}: opened"),
    }
}

#[tokio::test]
async fn unsupported_database_urls_are_refused_by_name() {
    for url in [
        "postgres://hearth:secret@localhost:5432/hearth",
        "postgresql://localhost/hearth",
        "mysql://x",
        "hearth.db",
        "sqlite::memory:",
    ] {
        expect_unsupported(storage::open(url, 4).await, url);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_creates_a_missing_folder() {
    let folder = tempfile::tempdir().unwrap();
    let nested = folder.path().join("not").join("yet");
    assert!(!nested.exists());
    let url = format!("sqlite://{}", nested.join("t.db").display());

    let stores = open_or_panic(&url).await;
    stores.inbox.ping().await.unwrap();
    expect_new(&stores, &inbound("m-1", "http", None)).await;
    assert!(nested.join("t.db").is_file());
}

// ---------------------------------------------------------------------------
// Known divergence between the adapters
// ---------------------------------------------------------------------------

/// Every inbox write naming a message that was never accepted is an error.
async fn inbox_refuses_unknown_ids(stores: &Stores) {
    let unknown = inbound("ghost", "http", None);
    let result = stores
        .inbox
        .complete("ghost", &turn_for(&unknown, "x"))
        .await;
    assert!(result.is_err(), "complete: {result:?}");
    let result = stores.inbox.record_failure("ghost", "boom", 1).await;
    assert!(result.is_err(), "record_failure: {result:?}");
    let result = stores.inbox.give_up("ghost", "boom", "sorry", None).await;
    assert!(result.is_err(), "give_up: {result:?}");
    assert_eq!(stores.inbox.get("ghost").await.unwrap(), None);
}

#[tokio::test]
async fn in_memory_inbox_refuses_unknown_ids() {
    inbox_refuses_unknown_ids(&open_in_memory().await.stores).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_inbox_refuses_unknown_ids() {
    inbox_refuses_unknown_ids(&open_sqlite().await.stores).await;
}

/// The id of the original a duplicate is reported with, when its id matches one stored
/// message and its platform event id another.
async fn original_of_an_ambiguous_duplicate(stores: &Stores) -> String {
    expect_new(stores, &inbound("a-1", "telegram", Some("event-1"))).await;
    expect_new(stores, &inbound("a-2", "telegram", Some("event-2"))).await;
    match stores
        .inbox
        .accept(&inbound("a-2", "telegram", Some("event-1")))
        .await
        .unwrap()
    {
        Acceptance::Duplicate(original) => original.inbound.id,
        Acceptance::New => panic!("an ambiguous duplicate was accepted as new"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapters_agree_on_the_original_of_an_ambiguous_duplicate() {
    let in_memory = original_of_an_ambiguous_duplicate(&open_in_memory().await.stores).await;
    let sqlite = original_of_an_ambiguous_duplicate(&open_sqlite().await.stores).await;
    assert_eq!(in_memory, sqlite, "in-memory vs sqlite");
}

/// `expire_due` returns the confirmations it expired oldest first by `created_at_ms`,
/// as SQLite sorts them, even when concurrent turns suspended them in another order.
async fn pending_expire_due_lists_oldest_first_by_creation_time(stores: &Stores) {
    suspended(stores, "o-1", "c-o-newer", T0 + 500).await;
    suspended(stores, "o-2", "c-o-older", T0 + 100).await;
    let expired = stores.pending.expire_due(i64::MAX).await.unwrap();
    let expired: Vec<&str> = expired.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(expired, ["c-o-older", "c-o-newer"]);
}

#[tokio::test]
async fn in_memory_pending_expire_due_lists_oldest_first_by_creation_time() {
    pending_expire_due_lists_oldest_first_by_creation_time(&open_in_memory().await.stores).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_pending_expire_due_lists_oldest_first_by_creation_time() {
    pending_expire_due_lists_oldest_first_by_creation_time(&open_sqlite().await.stores).await;
}

async fn pending_interrupted_lists_latest_consumed_of_suspended_messages(stores: &Stores) {
    let message = inbound("int-1", "http", None);
    assert_eq!(
        stores.inbox.accept(&message).await.unwrap(),
        Acceptance::New
    );
    let first = confirmation("c-int-1", "int-1", T0);
    stores.pending.suspend(&first, &[]).await.unwrap();
    assert!(
        stores.pending.interrupted().await.unwrap().is_empty(),
        "pending is not interrupted"
    );
    stores
        .pending
        .answer(
            "c-int-1",
            "alice",
            &AnswerPlace::new("telegram", None),
            true,
            T0,
        )
        .await
        .unwrap()
        .unwrap();
    assert!(
        stores.pending.interrupted().await.unwrap().is_empty(),
        "answered is not interrupted"
    );
    assert_eq!(
        stores.pending.consume("c-int-1").await.unwrap(),
        Some(Decision::Approved)
    );
    assert_eq!(
        stores.pending.interrupted().await.unwrap(),
        vec![first.clone()]
    );

    // The resumed turn asked again: the newer confirmation is the one that counts.
    let second = confirmation("c-int-2", "int-1", T0 + 500);
    stores.pending.suspend(&second, &[]).await.unwrap();
    assert!(stores.pending.interrupted().await.unwrap().is_empty());

    // A finished turn is not interrupted, whatever its confirmations.
    stores
        .pending
        .answer(
            "c-int-2",
            "alice",
            &AnswerPlace::new("telegram", None),
            false,
            T0,
        )
        .await
        .unwrap()
        .unwrap();
    stores.pending.consume("c-int-2").await.unwrap();
    assert_eq!(
        stores.pending.interrupted().await.unwrap(),
        vec![second.clone()]
    );
    let done = TurnRecord {
        conversation_key: message.conversation_key(),
        messages: Vec::new(),
        reply: "done".into(),
        outgoing: None,
    };
    stores.inbox.complete("int-1", &done).await.unwrap();
    assert!(stores.pending.interrupted().await.unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// ScriptWorkflows
// ---------------------------------------------------------------------------

fn workflow(conversation_key: &str, member_id: &str, step: &str, at_ms: i64) -> ScriptWorkflow {
    ScriptWorkflow {
        conversation_key: conversation_key.to_string(),
        member_id: member_id.to_string(),
        state: json!({"selected": "backup_photos", "next_action": step,
                      "final_parameters": {"album": "Ü \"summer\"", "keep_days": 7.5}}),
        updated_at_ms: at_ms,
    }
}

async fn script_workflow_put_replaces_and_is_per_conversation_and_member(stores: &Stores) {
    let workflows = &stores.script_workflows;
    workflows
        .put(&workflow("telegram:1", "alice", "present_parameters", T0))
        .await
        .unwrap();
    let later = workflow("telegram:1", "alice", "confirm_execution", T0 + 5);
    workflows.put(&later).await.unwrap();
    let bobs = workflow("telegram:1", "bob", "ask_for_script_choice", T0);
    let elsewhere = workflow("http:alice", "alice", "summarize_result", T0);
    workflows.put(&bobs).await.unwrap();
    workflows.put(&elsewhere).await.unwrap();
    assert_eq!(
        workflows.get("telegram:1", "alice", 0).await.unwrap(),
        Some(later)
    );
    assert_eq!(
        workflows.get("telegram:1", "bob", 0).await.unwrap(),
        Some(bobs)
    );
    assert_eq!(
        workflows.get("http:alice", "alice", 0).await.unwrap(),
        Some(elsewhere.clone())
    );
    assert_eq!(workflows.get("telegram:1", "carol", 0).await.unwrap(), None);
    assert!(workflows.clear("telegram:1", "alice").await.unwrap());
    assert!(!workflows.clear("telegram:1", "alice").await.unwrap());
    assert_eq!(workflows.get("telegram:1", "alice", 0).await.unwrap(), None);
    assert_eq!(
        workflows.get("http:alice", "alice", 0).await.unwrap(),
        Some(elsewhere)
    );
    let not_an_object = ScriptWorkflow {
        state: json!(["no"]),
        ..workflow("telegram:1", "alice", "none", T0)
    };
    assert!(matches!(
        workflows.put(&not_an_object).await,
        Err(StorageError::Invalid(_))
    ));
}

async fn script_workflow_older_than_the_ttl_is_not_handed_out(stores: &Stores) {
    let workflows = &stores.script_workflows;
    let old = workflow("telegram:1", "alice", "present_parameters", T0);
    let fresh = workflow("telegram:1", "bob", "present_parameters", T0 + 100);
    workflows.put(&old).await.unwrap();
    workflows.put(&fresh).await.unwrap();
    // Fresh from exactly its update on.
    assert_eq!(
        workflows.get("telegram:1", "alice", T0).await.unwrap(),
        Some(old)
    );
    assert_eq!(
        workflows.get("telegram:1", "alice", T0 + 1).await.unwrap(),
        None
    );
    assert_eq!(workflows.expire_stale(T0 + 1).await.unwrap(), 1);
    assert_eq!(workflows.get("telegram:1", "alice", 0).await.unwrap(), None);
    assert_eq!(
        workflows.get("telegram:1", "bob", 0).await.unwrap(),
        Some(fresh)
    );
    assert_eq!(workflows.expire_stale(T0 + 1).await.unwrap(), 0);
}

// ---------------------------------------------------------------------------
// PlanExecutions
// ---------------------------------------------------------------------------

pub(crate) fn plan(
    id: &str,
    member: &str,
    status: hearth::ports::StepStatus,
    created_at_ms: i64,
) -> hearth::ports::PlanExecution {
    use hearth::ports::{PlanStep, StepExecution};
    let mut ask = StepExecution::pending(PlanStep::AskUser {
        param: "order_id".into(),
        prompt: "Which order?".into(),
    });
    ask.status = status;
    hearth::ports::PlanExecution {
        plan_id: id.into(),
        intent_id: "order_status".into(),
        conversation_key: "http:alice".into(),
        member_id: member.into(),
        profile_id: "orders".into(),
        params: [
            ("note".to_string(), serde_json::json!("x")),
            ("amount".to_string(), serde_json::json!(12.5)),
        ]
        .into(),
        steps: vec![
            ask,
            StepExecution::pending(PlanStep::ToolCall {
                tool_name: "check_order_status".into(),
                params: Default::default(),
            }),
        ],
        current_index: 0,
        created_at_ms,
        updated_at_ms: created_at_ms,
        waiting_until_ms: None,
        answer: None,
        version: 0,
    }
}

async fn plans_are_stored_found_open_and_cancelled(stores: &Stores) {
    use hearth::ports::{Prunable, StepStatus};
    let plans = &stores.plans;
    assert_eq!(plans.open_plan("http:alice", "alice").await.unwrap(), None);
    let mut older = plan("p1", "alice", StepStatus::WaitingUser, 1_000);
    let mut newer = plan("p2", "alice", StepStatus::WaitingUser, 2_000);
    let mut done = plan("p3", "alice", StepStatus::Completed, 3_000);
    let mut bobs = plan("p4", "bob", StepStatus::WaitingUser, 4_000);
    for each in [&mut older, &mut newer, &mut done, &mut bobs] {
        plans.save_plan(each).await.unwrap();
        assert_eq!(each.version, 1, "stored as its first version");
    }
    assert_eq!(plans.plan("p3").await.unwrap().as_ref(), Some(&done));
    assert_eq!(plans.plan("nope").await.unwrap(), None);
    // The newest open plan of that member there; not another member's, not a finished one.
    assert_eq!(
        plans.open_plan("http:alice", "alice").await.unwrap(),
        Some(newer.clone())
    );
    assert_eq!(
        plans.open_plan("http:alice", "bob").await.unwrap(),
        Some(bobs.clone())
    );
    assert_eq!(plans.open_plan("telegram:1", "alice").await.unwrap(), None);
    // Saving again replaces: answered, the plan is no longer open.
    let mut answered = newer.clone();
    answered.steps[0].status = StepStatus::Completed;
    answered.current_index = 1;
    plans.save_plan(&mut answered).await.unwrap();
    assert_eq!(
        plans.open_plan("http:alice", "alice").await.unwrap(),
        Some(older.clone())
    );
    assert_eq!(
        plans
            .cancel_open_plans("http:alice", "alice", 9_000)
            .await
            .unwrap(),
        1
    );
    assert_eq!(plans.open_plan("http:alice", "alice").await.unwrap(), None);
    let cancelled = plans.plan("p1").await.unwrap().unwrap();
    assert_eq!(cancelled.status(), StepStatus::Canceled);
    assert_eq!(cancelled.steps[0].ended_at_ms, Some(9_000));
    assert_eq!(cancelled.steps[1].status, StepStatus::Canceled);
    assert_eq!(cancelled.updated_at_ms, 9_000);
    assert_eq!(
        plans
            .cancel_open_plans("http:alice", "alice", 9_500)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        plans.open_plan("http:alice", "bob").await.unwrap(),
        Some(bobs)
    );
    // Finished plans (completed, failed, canceled) go with retention, the oldest first;
    // the others stay.
    let retention = &stores.retention;
    let prune =
        |before_ms: i64, batch: usize| retention.prune(Prunable::FinishedPlans, before_ms, batch);
    assert_eq!(prune(3_000, 10).await.unwrap(), 0);
    assert_eq!(prune(10_000, 1).await.unwrap(), 1);
    assert_eq!(
        plans.plan("p3").await.unwrap(),
        None,
        "the oldest finished first"
    );
    assert_eq!(prune(10_000, 10).await.unwrap(), 1);
    assert_eq!(plans.plan("p1").await.unwrap(), None);
    assert!(plans.plan("p2").await.unwrap().is_some(), "not finished");
    assert!(plans.plan("p4").await.unwrap().is_some(), "still open");
}
