//! The `ConversationMemory` port: history read back bounded (only chat text, the newest
//! `limit`, not older than `since`), per conversation, every field kept.

use hearth::llm::Role;
use hearth::ports::HistoryEntry;
use hearth::storage::Stores;

use super::{
    contents, entry, expect_new, inbound, key, tool_call_entry, tool_result_entry, turn_for,
};

adapter_suite!(
    memory_recent_returns_only_chat_text,
    memory_recent_keeps_the_newest_limit_oldest_first,
    memory_recent_honours_since,
    memory_keys_are_isolated,
    memory_round_trips_every_field,
);

async fn memory_recent_returns_only_chat_text(stores: &Stores) {
    let conversation = key("http:kitchen");
    let entries = [
        entry(Role::User, "what is my name?", 1),
        tool_call_entry(2),
        tool_result_entry(3),
        entry(Role::Assistant, "", 4),
        entry(Role::System, "you are hearth", 5),
        entry(Role::User, "", 6),
        entry(Role::Assistant, "You are Alice.", 7),
    ];
    stores.memory.append(&conversation, &entries).await.unwrap();

    let recent = stores.memory.recent(&conversation, 100, 0).await.unwrap();
    assert_eq!(recent, [entries[0].clone(), entries[6].clone()]);

    // The limit counts chat text only: tool traffic never takes a slot.
    let recent = stores.memory.recent(&conversation, 1, 0).await.unwrap();
    assert_eq!(contents(&recent), ["You are Alice."]);
}

async fn memory_recent_keeps_the_newest_limit_oldest_first(stores: &Stores) {
    let conversation = key("telegram:42");
    // Two appends: order is kept across calls, and tool traffic sits in between.
    stores
        .memory
        .append(
            &conversation,
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
            &conversation,
            &[
                entry(Role::User, "three", 104),
                entry(Role::Assistant, "four", 105),
                entry(Role::User, "five", 106),
            ],
        )
        .await
        .unwrap();

    let all = stores.memory.recent(&conversation, 10, 0).await.unwrap();
    assert_eq!(contents(&all), ["one", "two", "three", "four", "five"]);
    let newest = stores.memory.recent(&conversation, 3, 0).await.unwrap();
    assert_eq!(contents(&newest), ["three", "four", "five"]);
    let newest = stores.memory.recent(&conversation, 1, 0).await.unwrap();
    assert_eq!(contents(&newest), ["five"]);
    assert!(
        stores
            .memory
            .recent(&conversation, 0, 0)
            .await
            .unwrap()
            .is_empty()
    );
    let unbounded = stores
        .memory
        .recent(&conversation, usize::MAX, 0)
        .await
        .unwrap();
    assert_eq!(
        contents(&unbounded),
        ["one", "two", "three", "four", "five"]
    );
}

async fn memory_recent_honours_since(stores: &Stores) {
    let conversation = key("matrix:!room");
    stores
        .memory
        .append(
            &conversation,
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

    let since = stores
        .memory
        .recent(&conversation, 10, 2_000)
        .await
        .unwrap();
    assert_eq!(
        contents(&since),
        ["boundary", "new answer", "newest"],
        "since_ms is inclusive"
    );
    let since = stores.memory.recent(&conversation, 2, 1_000).await.unwrap();
    assert_eq!(contents(&since), ["new answer", "newest"]);
    assert!(
        stores
            .memory
            .recent(&conversation, 10, 3_001)
            .await
            .unwrap()
            .is_empty()
    );
    let all = stores
        .memory
        .recent(&conversation, 10, i64::MIN)
        .await
        .unwrap();
    assert_eq!(all.len(), 5);
}

async fn memory_keys_are_isolated(stores: &Stores) {
    stores
        .memory
        .append(&key("http:a"), &[entry(Role::User, "for a", 1)])
        .await
        .unwrap();
    stores
        .memory
        .append(&key("http:b"), &[entry(Role::User, "for b", 2)])
        .await
        .unwrap();
    stores
        .memory
        .append(
            &key("telegram:a"),
            &[entry(Role::User, "for telegram a", 3)],
        )
        .await
        .unwrap();

    let a = stores.memory.recent(&key("http:a"), 10, 0).await.unwrap();
    assert_eq!(contents(&a), ["for a"]);
    let b = stores.memory.recent(&key("http:b"), 10, 0).await.unwrap();
    assert_eq!(contents(&b), ["for b"]);
    let telegram = stores
        .memory
        .recent(&key("telegram:a"), 10, 0)
        .await
        .unwrap();
    assert_eq!(contents(&telegram), ["for telegram a"]);
    assert!(
        stores
            .memory
            .recent(&key("http:a/session"), 10, 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        stores
            .memory
            .recent(&key("unknown:key"), 10, 0)
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
    let a = stores.memory.recent(&key("http:a"), 10, 0).await.unwrap();
    assert_eq!(contents(&a), ["for a"]);
}

async fn memory_round_trips_every_field(stores: &Stores) {
    let conversation = key("console:local");
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
    stores.memory.append(&conversation, &entries).await.unwrap();
    let recent = stores.memory.recent(&conversation, 10, 0).await.unwrap();
    assert_eq!(recent, entries);

    // An empty append is harmless.
    stores.memory.append(&conversation, &[]).await.unwrap();
    assert_eq!(
        stores.memory.recent(&conversation, 10, 0).await.unwrap(),
        entries
    );
}
