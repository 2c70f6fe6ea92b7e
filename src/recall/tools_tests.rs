//! `search_memory`'s arguments, its answers as the asking member reads them, and the
//! snippets of `recall: auto`, on the in-memory store.

use chrono::TimeZone;

use super::*;
use crate::config::{FamilyMember, FamilyRole};
use crate::ids::{ConversationKey, MemberId};
use crate::ports::{FamilyMemory, MemoryReaders, MemorySource};
use crate::storage::in_memory::InMemoryStore;

fn member(id: &str, name: &str, timezone: Option<&str>) -> FamilyMember {
    FamilyMember {
        id: id.parse().unwrap(),
        name: Some(name.into()),
        telegram_user_id: None,
        matrix_user_id: None,
        role: FamilyRole::Parent,
        timezone: timezone.map(str::to_owned),
    }
}

fn context(member: &str) -> ToolContext {
    ToolContext {
        member_id: member.parse().unwrap(),
        conversation_key: format!("telegram:{member}").parse().unwrap(),
        profile_id: "default".into(),
        question_timeout: std::time::Duration::from_secs(60),
        idempotency_key: None,
    }
}

fn berlin() -> ZoneName {
    ZoneName::parse("Europe/Berlin").unwrap()
}

fn refusal(arguments: Value) -> String {
    match read_arguments(&arguments, berlin()) {
        Ok(read) => panic!("{arguments} was read: {read:?}"),
        Err(error) => error.to_string(),
    }
}

fn at(day: u32, hour: u32) -> i64 {
    chrono::Utc
        .with_ymd_and_hms(2026, 3, day, hour, 0, 0)
        .unwrap()
        .timestamp_millis()
}

#[test]
fn arguments_are_refused_naming_the_value() {
    assert!(refusal(json!({})).contains("`query` is missing"));
    assert!(refusal(json!({"query": "  "})).contains("`query` is missing"));
    assert!(refusal(json!({"query": 5})).contains("`query` must be a string, got 5"));
    let long = refusal(json!({"query": "w".repeat(MAX_QUERY_CHARS + 1)}));
    assert!(long.contains("longer than 300 characters"), "{long}");
    for day in ["last week", "tomorrow", "2026-3-1", "2026-02-30"] {
        let refused = refusal(json!({"query": "x", "since": day}));
        assert!(
            refused.contains(&format!(
                "`since` must be a day written YYYY-MM-DD, got {day:?}"
            )),
            "{refused}"
        );
    }
    let backwards = refusal(json!({"query": "x", "since": "2026-03-05", "until": "2026-03-01"}));
    assert!(
        backwards.contains("`since` 2026-03-05 is after `until` 2026-03-01"),
        "{backwards}"
    );
    let source = refusal(json!({"query": "x", "source": "email"}));
    assert!(
        source.contains("`source` \"email\" is none of chat, note, document"),
        "{source}"
    );
}

#[test]
fn days_are_the_member_s_whole_days_in_their_zone() {
    // The night clocks go forward in Berlin: the day starts at 23:00 UTC the day before,
    // and the next at 22:00 UTC.
    let read = read_arguments(
        &json!({"query": " dentist ", "since": "2026-03-29", "until": "2026-03-29", "source": "Note"}),
        berlin(),
    )
    .unwrap();
    assert_eq!(read.query, "dentist");
    assert_eq!(
        read.filter,
        MemoryFilter {
            since_ms: Some(at(28, 23)),
            until_ms: Some(at(29, 22)),
            kinds: vec![MemoryKind::Note],
        }
    );
    assert_eq!(read.scope, " among notes from 2026-03-29 to 2026-03-29");
    let open = read_arguments(
        &json!({"query": "x", "until": "2026-03-01", "source": null}),
        berlin(),
    )
    .unwrap();
    assert_eq!(open.filter.since_ms, None);
    assert_eq!(open.filter.until_ms, Some(at(1, 23)));
    assert!(open.filter.kinds.is_empty());
    assert_eq!(open.scope, " until 2026-03-01");
    let blank =
        read_arguments(&json!({"query": "x", "since": "", "source": ""}), berlin()).unwrap();
    assert_eq!(blank.filter, MemoryFilter::default());
    assert_eq!(blank.scope, "");
}

fn chat(
    reference: i64,
    conversation: &str,
    member: Option<&str>,
    text: &str,
    at_ms: i64,
) -> MemorySource {
    MemorySource {
        kind: MemoryKind::Chat,
        reference: reference.to_string(),
        title: String::new(),
        readers: MemoryReaders::Conversation,
        member: member.map(|id| id.parse().unwrap()),
        conversation: Some(conversation.parse::<ConversationKey>().unwrap()),
        created_at_ms: at_ms,
        chunks: vec![text.into()],
    }
}

fn note(
    reference: i64,
    title: &str,
    owner: &str,
    private: bool,
    text: &str,
    at_ms: i64,
) -> MemorySource {
    MemorySource {
        kind: MemoryKind::Note,
        reference: reference.to_string(),
        title: title.into(),
        readers: if private {
            MemoryReaders::Member
        } else {
            MemoryReaders::Family
        },
        member: Some(owner.parse::<MemberId>().unwrap()),
        conversation: None,
        created_at_ms: at_ms,
        chunks: vec![text.into()],
    }
}

/// Alice (Berlin) and Bob (New York) in their own chats and one group; notes of both.
async fn toolset(auto: bool) -> MemoryToolset {
    let store = Arc::new(InMemoryStore::default());
    let sources = [
        chat(
            1,
            "telegram:alice",
            Some("alice"),
            "The alarm code is 4711",
            at(2, 9),
        ),
        chat(
            2,
            "telegram:alice",
            None,
            "Noted, the alarm code is 4711.",
            at(2, 9),
        ),
        chat(
            3,
            "telegram:bob",
            Some("bob"),
            "My alarm rings at 6 on school days",
            at(3, 9),
        ),
        chat(
            4,
            "telegram:group",
            Some("bob"),
            "The garage alarm beeps when the door is open",
            at(4, 9),
        ),
        chat(
            5,
            "telegram:group",
            Some("alice"),
            "Who took the ladder?",
            at(4, 10),
        ),
        note(
            6,
            "Alarm",
            "alice",
            true,
            "Spare alarm key under the pot",
            at(5, 9),
        ),
        note(
            7,
            "Alarm company",
            "bob",
            false,
            "Call SecureHome if the alarm fails",
            at(6, 9),
        ),
    ];
    store.put_sources(&sources, None, at(7, 0)).await.unwrap();
    let family = Family::new(&[
        member("alice", "Alice", Some("Europe/Berlin")),
        member("bob", "Bob", Some("America/New_York")),
        member("carol", "Carol", None),
    ]);
    MemoryToolset::new(
        Arc::new(MemorySearch::new(store, None)),
        Arc::new(family),
        ZoneName::parse("UTC").unwrap(),
        auto,
    )
}

async fn search(tools: &MemoryToolset, who: &str, arguments: Value) -> String {
    match tools.call(SEARCH_MEMORY, &arguments, &context(who)).await {
        Ok(text) => text,
        Err(error) => format!("error: {error}"),
    }
}

#[tokio::test]
async fn each_member_finds_what_is_theirs_to_read_and_nothing_else() {
    let tools = toolset(false).await;
    let alices = search(&tools, "alice", json!({"query": "alarm"})).await;
    for seen in [
        "chat in this conversation, you, Mon 2 Mar 2026: “The alarm code is 4711”",
        "chat on telegram, Bob, Wed 4 Mar 2026: “The garage alarm beeps",
        "note \"Alarm\", you, Thu 5 Mar 2026: “Spare alarm key under the pot”",
        "note \"Alarm company\", Bob, Fri 6 Mar 2026: “Call SecureHome",
    ] {
        assert!(alices.contains(seen), "{seen} not in {alices}");
    }
    assert!(!alices.contains("rings at 6"), "{alices}");
    // Hearth's answer in Alice's chat is found too, said by hearth, but one chunk per
    // source and at most six.
    assert!(alices.lines().count() <= 1 + TOOL_HITS, "{alices}");

    let bobs = search(&tools, "bob", json!({"query": "alarm code 4711 key pot"})).await;
    let (_, found) = bobs.split_once('\n').unwrap();
    assert!(
        !found.contains("4711") && !found.contains("Spare"),
        "{bobs}"
    );
    assert!(
        bobs.contains("you, Tue 3 Mar 2026: “My alarm rings at 6"),
        "{bobs}"
    );
    assert!(
        bobs.contains("chat on telegram, you, Wed 4 Mar 2026: “The garage"),
        "{bobs}"
    );

    // Carol wrote nowhere: the family's note alone.
    let carols = search(&tools, "carol", json!({"query": "alarm"})).await;
    assert_eq!(carols.lines().count(), 2, "{carols}");
    assert!(carols.contains("note \"Alarm company\", Bob"), "{carols}");

    let nothing = search(&tools, "carol", json!({"query": "4711"})).await;
    assert_eq!(nothing, "Nothing you can read in memory matches \"4711\".");
    let common = search(&tools, "carol", json!({"query": "the and of"})).await;
    assert!(common.contains("only words too common"), "{common}");
    // The reader is the context's: an argument naming another member changes nothing.
    let posing = search(
        &tools,
        "carol",
        json!({"query": "4711", "member_id": "alice"}),
    )
    .await;
    assert!(posing.starts_with("Nothing"), "{posing}");
}

#[tokio::test]
async fn the_source_and_the_days_narrow_a_search() {
    let tools = toolset(false).await;
    let notes = search(&tools, "alice", json!({"query": "alarm", "source": "note"})).await;
    assert!(
        notes.starts_with("From memory for \"alarm\" among notes, best first"),
        "{notes}"
    );
    assert_eq!(notes.lines().count(), 3, "{notes}");
    // 4 March in Alice's zone: the group's chat alone.
    let day = search(
        &tools,
        "alice",
        json!({"query": "alarm", "since": "2026-03-04", "until": "2026-03-04"}),
    )
    .await;
    assert_eq!(day.lines().count(), 2, "{day}");
    assert!(day.contains("The garage alarm"), "{day}");
    let none = search(
        &tools,
        "alice",
        json!({"query": "alarm", "source": "document", "since": "2026-03-01"}),
    )
    .await;
    assert_eq!(
        none,
        "Nothing you can read in memory matches \"alarm\" among documents since 2026-03-01."
    );
}

#[tokio::test]
async fn auto_gives_the_best_few_with_a_message_and_tool_gives_none() {
    let auto = toolset(true).await;
    let note = auto
        .message_note(&context("bob"), "when does the alarm ring?")
        .await
        .unwrap();
    assert!(note.starts_with("(From hearth's memory"), "{note}");
    assert!(note.lines().count() <= 1 + AUTO_HITS, "{note}");
    assert!(note.contains("My alarm rings at 6"), "{note}");
    assert!(!note.contains("4711"), "{note}");
    assert_eq!(auto.message_note(&context("bob"), "  ").await, None);
    assert_eq!(auto.message_note(&context("bob"), "zebra").await, None);
    let tool = toolset(false).await;
    assert_eq!(
        tool.message_note(&context("bob"), "when does the alarm ring?")
            .await,
        None
    );
}
