//! The `FamilyMemory` port: a source put again replaces its chunks; each reader finds only
//! what is theirs to read (family sources, their own, the conversations they wrote in),
//! within a filter's times and kinds, whatever the accents and case of the words and
//! whatever a member types; the indexer's cursor moves with its write alone; the chat
//! entries and notes still to index; sources whose entry or note went, and a removed
//! member's, removed; each text embedded once per model, vectors ranked by cosine within
//! the same privacy; the counts.

use hearth::ids::ConversationKey;
use hearth::llm::Role;
use hearth::ports::{
    HistoryEntry, Inbound, MemoryFilter, MemoryHit, MemoryKind, MemoryReaders, MemorySource,
    MemoryStatus, NoteRef, NoteWrite, Prunable, Saved, TurnRecord, memory_query_words,
};
use hearth::storage::Stores;

use super::{T0, entry, key, member, tool_call_entry, tool_result_entry};

adapter_suite!(
    family_memory_put_again_replaces_a_sources_chunks,
    family_memory_private_chats_and_member_sources_stay_their_own,
    family_memory_a_group_is_read_by_those_who_wrote_there,
    family_memory_family_sources_are_read_by_everyone,
    family_memory_filters_by_time_and_kind,
    family_memory_finds_words_whatever_their_accents_and_case,
    family_memory_takes_query_syntax_as_words,
    family_memory_moves_its_cursor_only_with_its_write,
    family_memory_lists_settled_chat_text_to_index,
    family_memory_lists_new_and_changed_notes_to_index,
    family_memory_removes_orphans,
    family_memory_removes_a_member,
    family_memory_embeds_each_text_once_per_model,
    family_memory_ranks_vectors_by_cosine_within_privacy,
);

const MODEL: &str = "embedder";

fn source(
    kind: MemoryKind,
    reference: &str,
    readers: MemoryReaders,
    who: Option<&str>,
    conversation: Option<&str>,
    created_at_ms: i64,
    chunks: &[&str],
) -> MemorySource {
    MemorySource {
        kind,
        reference: reference.to_string(),
        title: String::new(),
        readers,
        member: who.map(member),
        conversation: conversation.map(key),
        created_at_ms,
        chunks: chunks.iter().map(|chunk| chunk.to_string()).collect(),
    }
}

/// Chat entry `message` said by `who` (none: the assistant) in `conversation`.
fn chat(message: i64, who: Option<&str>, conversation: &str, text: &str) -> MemorySource {
    let reference = message.to_string();
    let readers = MemoryReaders::Conversation;
    source(
        MemoryKind::Chat,
        &reference,
        readers,
        who,
        Some(conversation),
        T0,
        &[text],
    )
}

/// A family note (`owner`: none) or one member's.
fn note(id: i64, owner: Option<&str>, chunks: &[&str]) -> MemorySource {
    let readers = match owner {
        Some(_) => MemoryReaders::Member,
        None => MemoryReaders::Family,
    };
    let reference = id.to_string();
    source(
        MemoryKind::Note,
        &reference,
        readers,
        owner,
        None,
        T0,
        chunks,
    )
}

fn document(reference: &str, owner: Option<&str>, chunks: &[&str]) -> MemorySource {
    let readers = match owner {
        Some(_) => MemoryReaders::Member,
        None => MemoryReaders::Family,
    };
    source(
        MemoryKind::Document,
        reference,
        readers,
        owner,
        None,
        T0,
        chunks,
    )
}

async fn put(stores: &Stores, sources: &[MemorySource]) {
    let memory = &stores.family_memory;
    memory.put_sources(sources, None, T0).await.unwrap();
}

async fn search(stores: &Stores, reader: &str, query: &str, filter: &MemoryFilter) -> Vec<String> {
    let words = memory_query_words(query);
    let hits = (stores.family_memory)
        .search_words(&member(reader), &words, filter, 20)
        .await
        .unwrap_or_else(|error| panic!("search {query:?}: {error}"));
    texts(&hits)
}

/// The texts `reader` finds for `query`, sorted (ranks differ between the databases).
async fn found(stores: &Stores, reader: &str, query: &str) -> Vec<String> {
    let mut texts = search(stores, reader, query, &MemoryFilter::default()).await;
    texts.sort();
    texts
}

fn texts(hits: &[MemoryHit]) -> Vec<String> {
    hits.iter().map(|hit| hit.text.clone()).collect()
}

fn sorted(texts: &[&str]) -> Vec<String> {
    let mut texts: Vec<String> = texts.iter().map(|text| text.to_string()).collect();
    texts.sort();
    texts
}

async fn family_memory_put_again_replaces_a_sources_chunks(stores: &Stores) {
    let garden = ["roses by the fence", "tulips in spring"];
    put(stores, &[note(1, None, &garden)]).await;
    assert_eq!(found(stores, "mum", "tulips").await, ["tulips in spring"]);
    let hits = (stores.family_memory)
        .search_words(&member("mum"), &["tulips".into()], &Default::default(), 5)
        .await
        .unwrap();
    assert_eq!(
        (
            hits[0].kind,
            hits[0].reference.as_str(),
            hits[0].created_at_ms
        ),
        (MemoryKind::Note, "1", T0)
    );
    assert!(hits[0].score > 0.0, "a hit scores above nothing");

    put(stores, &[note(1, None, &["dahlias by the gate"])]).await;
    put(stores, &[note(1, None, &["dahlias by the gate"])]).await;
    assert!(found(stores, "mum", "tulips").await.is_empty());
    assert!(found(stores, "mum", "roses").await.is_empty());
    assert_eq!(
        found(stores, "mum", "dahlias").await,
        ["dahlias by the gate"]
    );
    let status = stores.family_memory.status(None).await.unwrap();
    assert_eq!(
        status,
        MemoryStatus {
            sources: 1,
            chunks: 1,
            vectors: 0,
            waiting: 0
        }
    );
}

async fn family_memory_private_chats_and_member_sources_stay_their_own(stores: &Stores) {
    put(
        stores,
        &[
            chat(
                1,
                Some("mum"),
                "telegram:111",
                "The allergist is on Tuesday",
            ),
            chat(2, None, "telegram:111", "Noted: allergist on Tuesday"),
            chat(3, Some("kid"), "telegram:222", "My allergist diary"),
            chat(4, None, "telegram:222", "Your allergist diary is safe"),
            note(10, Some("mum"), &["allergist bill paid"]),
            document("letter", Some("kid"), &["allergist letter for the kid"]),
        ],
    )
    .await;
    let mums = [
        "The allergist is on Tuesday",
        "Noted: allergist on Tuesday",
        "allergist bill paid",
    ];
    let kids = [
        "My allergist diary",
        "Your allergist diary is safe",
        "allergist letter for the kid",
    ];
    // A parent and a child alike: neither reads the other's.
    assert_eq!(found(stores, "mum", "allergist").await, sorted(&mums));
    assert_eq!(found(stores, "kid", "allergist").await, sorted(&kids));
    assert!(found(stores, "dad", "allergist").await.is_empty());
    assert!(found(stores, "mum", "diary").await.is_empty());
    assert!(found(stores, "kid", "bill").await.is_empty());
}

async fn family_memory_a_group_is_read_by_those_who_wrote_there(stores: &Stores) {
    let group = "telegram:-100";
    put(
        stores,
        &[
            chat(1, Some("mum"), group, "Picnic on Saturday at the lake"),
            chat(2, None, group, "Picnic noted"),
            chat(3, Some("kid"), group, "Can the dog come to the picnic"),
            // Another group, where only dad wrote.
            chat(
                4,
                Some("dad"),
                "telegram:-200",
                "Picnic gear is in the shed",
            ),
        ],
    )
    .await;
    let group_chunks = sorted(&[
        "Picnic on Saturday at the lake",
        "Picnic noted",
        "Can the dog come to the picnic",
    ]);
    assert_eq!(found(stores, "mum", "picnic").await, group_chunks);
    assert_eq!(found(stores, "kid", "picnic").await, group_chunks);
    assert_eq!(
        found(stores, "dad", "picnic").await,
        ["Picnic gear is in the shed"]
    );
    assert!(found(stores, "grandma", "picnic").await.is_empty());

    // Once dad writes in the group, he reads what was said there.
    put(
        stores,
        &[chat(5, Some("dad"), group, "I will bring a blanket")],
    )
    .await;
    assert_eq!(found(stores, "dad", "picnic").await.len(), 4);
    assert_eq!(
        found(stores, "mum", "blanket").await,
        ["I will bring a blanket"]
    );
    assert!(found(stores, "mum", "shed").await.is_empty());
}

async fn family_memory_family_sources_are_read_by_everyone(stores: &Stores) {
    put(
        stores,
        &[
            note(1, None, &["The wifi password is hearth-rocks"]),
            document("school", None, &["School wifi code 1234"]),
            chat(3, Some("kid"), "telegram:222", "what is the wifi"),
        ],
    )
    .await;
    let family = sorted(&["The wifi password is hearth-rocks", "School wifi code 1234"]);
    for reader in ["mum", "dad", "grandma"] {
        assert_eq!(found(stores, reader, "WIFI").await, family, "{reader}");
    }
    assert_eq!(found(stores, "kid", "wifi").await.len(), 3);
}

async fn family_memory_filters_by_time_and_kind(stores: &Stores) {
    let at = |mut source: MemorySource, at_ms: i64| {
        source.created_at_ms = at_ms;
        source
    };
    put(
        stores,
        &[
            at(
                chat(1, Some("mum"), "telegram:111", "dentist on Monday"),
                T0,
            ),
            at(note(2, None, &["dentist phone number"]), T0 + 1_000),
            at(document("bill", None, &["dentist invoice"]), T0 + 2_000),
        ],
    )
    .await;
    let filtered = async |filter: MemoryFilter| {
        let mut texts = search(stores, "mum", "dentist", &filter).await;
        texts.sort();
        texts
    };
    let times = |since_ms, until_ms| MemoryFilter {
        since_ms,
        until_ms,
        kinds: Vec::new(),
    };
    assert_eq!(
        filtered(times(Some(T0 + 1_000), None)).await,
        ["dentist invoice", "dentist phone number"]
    );
    assert_eq!(
        filtered(times(None, Some(T0 + 1_000))).await,
        ["dentist on Monday"]
    );
    assert_eq!(
        filtered(times(Some(T0 + 1_000), Some(T0 + 2_000))).await,
        ["dentist phone number"]
    );
    assert!(filtered(times(Some(T0 + 5_000), None)).await.is_empty());
    let kinds = |kinds: &[MemoryKind]| MemoryFilter {
        kinds: kinds.to_vec(),
        ..MemoryFilter::default()
    };
    assert_eq!(
        filtered(kinds(&[MemoryKind::Chat, MemoryKind::Document])).await,
        ["dentist invoice", "dentist on Monday"]
    );
    assert_eq!(
        filtered(kinds(&[MemoryKind::Note])).await,
        ["dentist phone number"]
    );
    assert_eq!(filtered(kinds(&[])).await.len(), 3, "no kinds: every kind");
}

async fn family_memory_finds_words_whatever_their_accents_and_case(stores: &Stores) {
    let said = [
        "Herr Müller kommt am Montag",
        "L'école reprend en septembre",
        "Mañana vamos al médico con el niño",
        "Die Straße ist gesperrt",
        "CRÈME BRÛLÉE for dessert",
    ];
    let sources: Vec<MemorySource> = (said.iter().enumerate())
        .map(|(id, text)| note(id as i64 + 1, None, &[text]))
        .collect();
    put(stores, &sources).await;
    for (query, expected) in [
        ("muller", said[0]),
        ("MÜLLER", said[0]),
        ("Müller", said[0]),
        ("montag", said[0]),
        ("ECOLE", said[1]),
        ("école", said[1]),
        ("Septembre", said[1]),
        ("manana", said[2]),
        ("MÉDICO", said[2]),
        ("nino", said[2]),
        ("straße", said[3]),
        ("STRAẞE", said[3]),
        ("creme brulee", said[4]),
    ] {
        assert_eq!(found(stores, "kid", query).await, [expected], "{query:?}");
    }
    // Folding takes accents away; it does not spell them out.
    assert!(found(stores, "kid", "mueller").await.is_empty());
}

async fn family_memory_takes_query_syntax_as_words(stores: &Stores) {
    let garage = "the garage door code is 4711";
    put(stores, &[note(1, None, &[garage, "a house by the lake"])]).await;
    for query in [
        "\"garage",
        "garage*",
        "NEAR(garage, door)",
        "-garage",
        "code:4711",
        "garage OR",
        "\"garage\" AND (door",
        "garage^2 {door}",
        "'garage' & !door | <->",
    ] {
        assert_eq!(found(stores, "mum", query).await, [garage], "{query:?}");
    }
    for query in ["\"", "*", "NEAR(", ":", "-", "()"] {
        let words = memory_query_words(query);
        let hits = (stores.family_memory)
            .search_words(&member("mum"), &words, &Default::default(), 5)
            .await
            .unwrap_or_else(|error| panic!("{query:?}: {error}"));
        assert!(hits.is_empty(), "{query:?} found {hits:?}");
    }
    // Words handed over as they are: whatever is in them only separates words.
    let raw: Vec<String> = ["\"garage*", "NEAR(", "code:4711", "'", "\\"]
        .map(String::from)
        .to_vec();
    let hits = (stores.family_memory)
        .search_words(&member("mum"), &raw, &Default::default(), 5)
        .await
        .unwrap();
    assert_eq!(texts(&hits), [garage]);
}

async fn family_memory_moves_its_cursor_only_with_its_write(stores: &Stores) {
    let memory = &stores.family_memory;
    assert_eq!(memory.cursor("chats").await.unwrap(), 0);
    let first = chat(1, Some("mum"), "telegram:111", "first words");
    memory
        .put_sources(&[first], Some(("chats", 1)), T0)
        .await
        .unwrap();
    assert_eq!(memory.cursor("chats").await.unwrap(), 1);

    // A source no adapter may store fails the whole write: neither the source before it
    // nor the cursor moves.
    let second = chat(2, Some("mum"), "telegram:111", "second words");
    let not_a_row = chat(3, Some("mum"), "telegram:111", "third words");
    let not_a_row = MemorySource {
        reference: "three".into(),
        ..not_a_row
    };
    let failed = memory
        .put_sources(&[second.clone(), not_a_row], Some(("chats", 3)), T0)
        .await;
    assert!(
        failed.is_err(),
        "a chat entry's reference is its row's number"
    );
    let ownerless = MemorySource {
        member: None,
        ..note(4, Some("mum"), &["fourth words"])
    };
    let failed = (memory.put_sources(&[second.clone(), ownerless], Some(("chats", 4)), T0)).await;
    assert!(failed.is_err(), "a member's source names its member");
    assert_eq!(memory.cursor("chats").await.unwrap(), 1);
    assert!(found(stores, "mum", "second").await.is_empty());
    assert_eq!(memory.status(None).await.unwrap().sources, 1);

    // A write of nothing but the cursor moves it; each cursor is its own.
    memory
        .put_sources(&[], Some(("chats", 7)), T0)
        .await
        .unwrap();
    assert_eq!(memory.cursor("chats").await.unwrap(), 7);
    assert_eq!(memory.cursor("other").await.unwrap(), 0);
    memory.put_sources(&[second], None, T0).await.unwrap();
    assert_eq!(memory.cursor("chats").await.unwrap(), 7);
    assert_eq!(found(stores, "mum", "second").await, ["second words"]);
}

fn with_inbox(mut entry: HistoryEntry, inbox_id: &str) -> HistoryEntry {
    entry.inbox_id = Some(inbox_id.to_string());
    entry
}

async fn family_memory_lists_settled_chat_text_to_index(stores: &Stores) {
    let private = key("telegram:111");
    let message = Inbound {
        id: "m-1".into(),
        conversation: private.clone(),
        member_id: member("mum"),
        text: "When is the dentist?".into(),
        platform_event_id: None,
        received_at_ms: T0,
        extras: Default::default(),
    };
    stores.inbox.accept(&message).await.unwrap();
    let turn = TurnRecord {
        conversation_key: private.clone(),
        messages: vec![
            with_inbox(entry(Role::User, "When is the dentist?", T0), "m-1"),
            with_inbox(tool_call_entry(T0 + 1), "m-1"),
            with_inbox(tool_result_entry(T0 + 2), "m-1"),
            with_inbox(entry(Role::Assistant, "On Tuesday.", T0 + 3), "m-1"),
        ],
        reply: "On Tuesday.".into(),
        outgoing: None,
    };
    stores.inbox.complete("m-1", &turn).await.unwrap();
    let delegated = ConversationKey::delegated(&private, "helper", "d-1").unwrap();
    let memory = &stores.memory;
    (memory.append(&delegated, &[entry(Role::User, "look it up", T0 + 4)]))
        .await
        .unwrap();
    // A topic of a group: its key holds a '/', and it is no delegation.
    let topic = key("telegram:-100/7");
    let topic_entries = [
        entry(Role::User, "Topic question", T0 + 5),
        entry(Role::System, "you are hearth", T0 + 6),
        entry(Role::Assistant, "Topic answer", T0 + 7),
    ];
    memory.append(&topic, &topic_entries).await.unwrap();
    // Still being written when asked (created after the settled time), and one after it.
    let late = [
        entry(Role::User, "Just now", T0 + 60_000),
        entry(Role::Assistant, "Earlier but stored later", T0 + 8),
    ];
    memory.append(&topic, &late).await.unwrap();

    let settled = T0 + 30_000;
    let chats = stores
        .family_memory
        .chats_after(0, settled, 100)
        .await
        .unwrap();
    let seen: Vec<(String, Role, &str, Option<String>, i64)> = (chats.iter())
        .map(|chat| {
            let who = chat.member.as_ref().map(|member| member.to_string());
            let key = chat.conversation_key.to_string();
            (key, chat.role, chat.text.as_str(), who, chat.created_at_ms)
        })
        .collect();
    let text = |key: &str, role, text: &'static str, who: Option<&str>, at| {
        (key.to_string(), role, text, who.map(str::to_string), at)
    };
    assert_eq!(
        seen,
        [
            text(
                "telegram:111",
                Role::User,
                "When is the dentist?",
                Some("mum"),
                T0
            ),
            text("telegram:111", Role::Assistant, "On Tuesday.", None, T0 + 3),
            text(
                "telegram:-100/7",
                Role::User,
                "Topic question",
                None,
                T0 + 5
            ),
            text(
                "telegram:-100/7",
                Role::Assistant,
                "Topic answer",
                None,
                T0 + 7
            ),
        ]
    );
    let ids: Vec<i64> = chats.iter().map(|chat| chat.message_id).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");

    let after_first = (stores.family_memory.chats_after(ids[0], settled, 2))
        .await
        .unwrap();
    let after_first: Vec<i64> = after_first.iter().map(|chat| chat.message_id).collect();
    assert_eq!(after_first, ids[1..3]);
    let after_last = (stores.family_memory.chats_after(ids[3], settled, 10))
        .await
        .unwrap();
    assert!(after_last.is_empty(), "nothing past an unsettled entry");

    // Once settled, the rest follows in the order stored.
    let later = (stores.family_memory.chats_after(ids[3], T0 + 90_000, 10))
        .await
        .unwrap();
    let later: Vec<&str> = later.iter().map(|chat| chat.text.as_str()).collect();
    assert_eq!(later, ["Just now", "Earlier but stored later"]);
}

async fn family_memory_lists_new_and_changed_notes_to_index(stores: &Stores) {
    let save = async |title: &str, content: &str, at_ms: i64| {
        let write = NoteWrite {
            title: title.into(),
            content: content.into(),
            visibility: None,
            writer: member("mum"),
            at_ms,
        };
        match stores.notes.save(&write).await.unwrap() {
            Saved::Added(note) | Saved::Updated(note) => note,
        }
    };
    let memory = &stores.family_memory;
    let titles = async |limit: usize| -> Vec<String> {
        let notes = memory.notes_to_index(limit).await.unwrap();
        notes.into_iter().map(|note| note.title).collect()
    };
    let wifi = save("Wifi", "hearth-rocks", T0).await;
    let garden = save("Garden", "roses", T0 + 1).await;
    assert_eq!(titles(10).await, ["Wifi", "Garden"]);
    let indexed = [
        note(wifi.id, None, &[wifi.content.as_str()]),
        note(garden.id, None, &[garden.content.as_str()]),
    ];
    memory.put_sources(&indexed, None, T0 + 10).await.unwrap();
    assert!(
        titles(10).await.is_empty(),
        "unchanged notes wait for nothing"
    );

    let changed = save("Wifi", "hearth-rocks-2", T0 + 20).await;
    assert_eq!(changed.id, wifi.id);
    save("Alarm", "1234", T0 + 30).await;
    assert_eq!(titles(10).await, ["Wifi", "Alarm"]);
    assert_eq!(titles(1).await, ["Wifi"]);
    let notes = memory.notes_to_index(1).await.unwrap();
    assert_eq!(notes[0].content, "hearth-rocks-2");
}

async fn family_memory_removes_orphans(stores: &Stores) {
    let conversation = key("telegram:111");
    let said = [
        entry(Role::User, "keep this in mind", T0),
        entry(Role::Assistant, "kept in mind", T0 + 1),
    ];
    stores.memory.append(&conversation, &said).await.unwrap();
    let memory = &stores.family_memory;
    let chats = memory.chats_after(0, T0 + 10_000, 10).await.unwrap();
    let (first, second) = (chats[0].message_id, chats[1].message_id);
    let write = |title: &str| NoteWrite {
        title: title.into(),
        content: "mind the note".into(),
        visibility: None,
        writer: member("mum"),
        at_ms: T0,
    };
    let kept = stores.notes.save(&write("Kept")).await.unwrap();
    let gone = stores.notes.save(&write("Gone")).await.unwrap();
    let (kept, gone) = (kept.note().id, gone.note().id);
    stores
        .notes
        .delete(&member("mum"), &NoteRef::Id(gone))
        .await
        .unwrap();
    put(
        stores,
        &[
            chat(first, Some("mum"), "telegram:111", "keep this in mind"),
            chat(second, None, "telegram:111", "kept in mind"),
            chat(
                second + 1_000,
                Some("mum"),
                "telegram:111",
                "never stored mind",
            ),
            note(kept, None, &["mind the note"]),
            note(gone, None, &["mind the gone note"]),
            document("manual", None, &["mind the manual"]),
        ],
    )
    .await;
    assert_eq!(memory.remove_orphans(10).await.unwrap(), 2);
    assert_eq!(
        found(stores, "mum", "mind").await,
        sorted(&[
            "keep this in mind",
            "kept in mind",
            "mind the note",
            "mind the manual"
        ])
    );
    assert_eq!(memory.remove_orphans(10).await.unwrap(), 0);

    stores
        .notes
        .delete(&member("mum"), &NoteRef::Id(kept))
        .await
        .unwrap();
    stores
        .retention
        .prune(Prunable::History, T0 + 10_000, 100)
        .await
        .unwrap();
    // In batches of `limit`.
    assert_eq!(memory.remove_orphans(2).await.unwrap(), 2);
    assert_eq!(memory.remove_orphans(2).await.unwrap(), 1);
    assert_eq!(found(stores, "mum", "mind").await, ["mind the manual"]);

    // A vector no chunk's text has any more goes too.
    let missing = memory.vectors_missing(MODEL, 10).await.unwrap();
    let vectors: Vec<(String, Vec<f32>)> = (missing.iter())
        .map(|(hash, _)| (hash.clone(), vec![1.0, 0.0]))
        .collect();
    memory.put_vectors(MODEL, &vectors).await.unwrap();
    assert!(memory.remove(MemoryKind::Document, "manual").await.unwrap());
    assert!(!memory.remove(MemoryKind::Document, "manual").await.unwrap());
    assert_eq!(memory.remove_orphans(10).await.unwrap(), 1);
    assert_eq!(
        memory.status(Some(MODEL)).await.unwrap(),
        MemoryStatus::default()
    );
}

async fn family_memory_removes_a_member(stores: &Stores) {
    let group = "telegram:-100";
    put(
        stores,
        &[
            note(1, Some("kid"), &["kid's secret diary"]),
            document("drawing", Some("kid"), &["kid's secret drawing"]),
            note(2, Some("mum"), &["mum's secret recipe"]),
            chat(3, Some("kid"), group, "secret: the party is on Friday"),
            chat(4, Some("mum"), group, "keep the party secret"),
            chat(5, Some("kid"), "telegram:222", "my own secret"),
        ],
    )
    .await;
    let memory = &stores.family_memory;
    // Two sources, and two listings as a conversation's reader.
    assert_eq!(memory.remove_member(&member("kid")).await.unwrap(), 4);
    assert!(found(stores, "kid", "secret").await.is_empty());
    assert_eq!(
        found(stores, "mum", "secret").await,
        sorted(&[
            "mum's secret recipe",
            "secret: the party is on Friday",
            "keep the party secret"
        ])
    );
    assert_eq!(memory.status(None).await.unwrap().sources, 4);
    assert_eq!(memory.remove_member(&member("kid")).await.unwrap(), 0);
}

/// The hash of each text waiting for a vector of `model`.
async fn missing(stores: &Stores, model: &str) -> Vec<(String, String)> {
    let mut missing = (stores.family_memory.vectors_missing(model, 10))
        .await
        .unwrap();
    missing.sort_by(|a, b| a.1.cmp(&b.1));
    missing
}

async fn family_memory_embeds_each_text_once_per_model(stores: &Stores) {
    put(
        stores,
        &[
            note(1, None, &["alpha text", "beta text"]),
            document("copy", Some("kid"), &["alpha text"]),
        ],
    )
    .await;
    let waiting = missing(stores, MODEL).await;
    let waiting_texts: Vec<&str> = waiting.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(waiting_texts, ["alpha text", "beta text"], "once per text");
    assert_ne!(waiting[0].0, waiting[1].0);
    assert!(waiting.iter().all(|(hash, _)| hash.len() == 64));
    let first = stores
        .family_memory
        .vectors_missing(MODEL, 1)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    let status = stores.family_memory.status(Some(MODEL)).await.unwrap();
    assert_eq!((status.vectors, status.waiting), (0, 3));

    let vectors: Vec<(String, Vec<f32>)> = (waiting.iter())
        .map(|(hash, _)| (hash.clone(), vec![0.5, 0.5]))
        .collect();
    stores
        .family_memory
        .put_vectors(MODEL, &vectors)
        .await
        .unwrap();
    assert!(missing(stores, MODEL).await.is_empty());
    assert_eq!(missing(stores, "other-model").await, waiting);

    // The same text in another source needs no vector of its own.
    put(stores, &[note(3, None, &["alpha text"])]).await;
    assert!(missing(stores, MODEL).await.is_empty());
    let status = |model| async move { stores.family_memory.status(model).await.unwrap() };
    let counted = |sources, chunks, vectors, waiting| MemoryStatus {
        sources,
        chunks,
        vectors,
        waiting,
    };
    assert_eq!(status(Some(MODEL)).await, counted(3, 4, 2, 0));
    assert_eq!(status(Some("other-model")).await, counted(3, 4, 0, 4));
    assert_eq!(status(None).await, counted(3, 4, 0, 0));
}

async fn family_memory_ranks_vectors_by_cosine_within_privacy(stores: &Stores) {
    let later = MemorySource {
        created_at_ms: T0 + 5_000,
        ..document("map", None, &["northish"])
    };
    put(
        stores,
        &[
            note(1, None, &["north"]),
            note(2, None, &["east"]),
            note(3, Some("kid"), &["north by east, kid's"]),
            chat(4, Some("kid"), "telegram:222", "due north, kid said"),
            later,
        ],
    )
    .await;
    let directions = [
        ("north", [1.0, 0.0]),
        ("east", [0.0, 1.0]),
        ("north by east, kid's", [1.0, 0.2]),
        ("due north, kid said", [1.0, 0.05]),
        ("northish", [0.8, 0.4]),
    ];
    let vectors: Vec<(String, Vec<f32>)> = (missing(stores, MODEL).await.into_iter())
        .map(|(hash, text)| {
            let (_, vector) = directions.iter().find(|(said, _)| *said == text).unwrap();
            (hash, vector.to_vec())
        })
        .collect();
    stores
        .family_memory
        .put_vectors(MODEL, &vectors)
        .await
        .unwrap();
    let nearest = async |reader: &str, query: &[f32], filter: MemoryFilter, model: &str| {
        (stores.family_memory)
            .search_vector(&member(reader), model, query, &filter, 10)
            .await
            .unwrap()
    };
    let north = [1.0, 0.0];
    let hits = nearest("mum", &north, MemoryFilter::default(), MODEL).await;
    assert_eq!(texts(&hits), ["north", "northish", "east"]);
    assert!((hits[0].score - 1.0).abs() < 1e-6, "{}", hits[0].score);
    assert!((hits[1].score - 0.8 / 0.8_f64.hypot(0.4)).abs() < 1e-6);
    assert!(hits[2].score.abs() < 1e-6);
    assert_eq!(
        (
            hits[1].kind,
            hits[1].reference.as_str(),
            hits[1].created_at_ms
        ),
        (MemoryKind::Document, "map", T0 + 5_000)
    );
    let kids = nearest("kid", &north, MemoryFilter::default(), MODEL).await;
    assert_eq!(
        texts(&kids),
        [
            "north",
            "due north, kid said",
            "north by east, kid's",
            "northish",
            "east"
        ]
    );
    let documents = MemoryFilter {
        kinds: vec![MemoryKind::Document],
        ..MemoryFilter::default()
    };
    assert_eq!(
        texts(&nearest("kid", &north, documents, MODEL).await),
        ["northish"]
    );
    let before = MemoryFilter {
        until_ms: Some(T0 + 5_000),
        ..MemoryFilter::default()
    };
    assert_eq!(
        texts(&nearest("dad", &north, before, MODEL).await),
        ["north", "east"]
    );
    let limited = (stores.family_memory)
        .search_vector(&member("kid"), MODEL, &north, &Default::default(), 2)
        .await
        .unwrap();
    assert_eq!(texts(&limited), ["north", "due north, kid said"]);
    assert!(
        nearest("mum", &north, MemoryFilter::default(), "other-model")
            .await
            .is_empty()
    );
    let other_length = [1.0, 0.0, 0.0];
    assert!(
        nearest("mum", &other_length, MemoryFilter::default(), MODEL)
            .await
            .is_empty()
    );
}
