//! What `hearth memory status` reads of the `FamilyMemory` port: each kind's sources and
//! chunks, and the chat-text entries after a position of the indexer's cursor (how many,
//! the newest, when the oldest was written), delegated conversations and tool rows left
//! out as the indexer leaves them.

use hearth::ids::ConversationKey;
use hearth::llm::Role;
use hearth::ports::{ChatsBehind, KindCounts, MemoryKind, MemoryReaders, MemorySource};
use hearth::storage::Stores;

use super::{T0, entry, key, member, tool_call_entry, tool_result_entry};

adapter_suite!(family_memory_counts_each_kind_and_the_entries_behind_a_position,);

fn source(
    kind: MemoryKind,
    reference: &str,
    readers: MemoryReaders,
    chunks: &[&str],
) -> MemorySource {
    let chat = kind == MemoryKind::Chat;
    MemorySource {
        kind,
        reference: reference.to_string(),
        title: String::new(),
        readers,
        member: Some(member("kid")),
        conversation: chat.then(|| key("telegram:222")),
        created_at_ms: T0,
        chunks: chunks.iter().map(|chunk| chunk.to_string()).collect(),
    }
}

fn counts(chats: u64, chat_chunks: u64, notes: u64, note_chunks: u64) -> Vec<KindCounts> {
    let of = |kind, sources, chunks| KindCounts {
        kind,
        sources,
        chunks,
    };
    vec![
        of(MemoryKind::Chat, chats, chat_chunks),
        of(MemoryKind::Note, notes, note_chunks),
        of(MemoryKind::Document, 0, 0),
    ]
}

async fn family_memory_counts_each_kind_and_the_entries_behind_a_position(stores: &Stores) {
    let memory = &stores.family_memory;
    assert_eq!(memory.counts_by_kind().await.unwrap(), counts(0, 0, 0, 0));
    assert_eq!(
        memory.chats_behind(0).await.unwrap(),
        ChatsBehind::default()
    );
    let sources = [
        source(
            MemoryKind::Note,
            "1",
            MemoryReaders::Family,
            &["first part", "second part"],
        ),
        source(MemoryKind::Note, "2", MemoryReaders::Member, &[]),
        source(
            MemoryKind::Chat,
            "3",
            MemoryReaders::Conversation,
            &["hello"],
        ),
    ];
    memory.put_sources(&sources, None, T0).await.unwrap();
    assert_eq!(memory.counts_by_kind().await.unwrap(), counts(1, 1, 2, 2));

    let conversation = key("telegram:222");
    let delegated = ConversationKey::delegated(&conversation, "helper", "d-1").unwrap();
    let history = &stores.memory;
    let said = [
        entry(Role::User, "first", T0 + 10),
        tool_call_entry(T0 + 11),
        tool_result_entry(T0 + 12),
        entry(Role::Assistant, "second", T0 + 13),
    ];
    history.append(&conversation, &said).await.unwrap();
    let helper = [entry(Role::User, "look it up", T0 + 14)];
    history.append(&delegated, &helper).await.unwrap();
    let third = [entry(Role::User, "third", T0 + 15)];
    history.append(&conversation, &third).await.unwrap();
    let chats = memory.chats_after(0, i64::MAX, 10).await.unwrap();
    let ids: Vec<i64> = chats.iter().map(|chat| chat.message_id).collect();
    assert_eq!(ids.len(), 3);
    let behind = |entries, oldest_at_ms| ChatsBehind {
        entries,
        newest_id: Some(ids[2]),
        oldest_at_ms: Some(oldest_at_ms),
    };
    assert_eq!(memory.chats_behind(0).await.unwrap(), behind(3, T0 + 10));
    assert_eq!(
        memory.chats_behind(ids[0]).await.unwrap(),
        behind(2, T0 + 13)
    );
    assert_eq!(
        memory.chats_behind(ids[2]).await.unwrap(),
        ChatsBehind::default()
    );
}
