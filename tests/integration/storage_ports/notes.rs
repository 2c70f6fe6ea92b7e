//! The `Notes` port: added, read, updated and deleted by title or number; titles unique
//! whatever their case (family notes by title, private ones per author and title); another
//! member's private note invisible to get, search, list and delete; search ranked with a
//! title's words above a content's, whatever a member types; and, on SQLite, notes kept
//! across a restart with their index.

use hearth::ports::{Note, NoteRef, NoteVisibility, NoteWrite, Saved, StorageError};
use hearth::storage::Stores;

use super::{T0, member, open_or_panic, sqlite_url};

adapter_suite!(
    notes_are_added_read_updated_and_deleted,
    notes_titles_are_unique_whatever_their_case,
    notes_private_ones_are_invisible_to_other_members,
    notes_search_ranks_a_title_above_a_content,
    notes_search_takes_any_text_as_words,
    notes_list_newest_first_with_the_total,
);

fn write(
    title: &str,
    content: &str,
    visibility: Option<NoteVisibility>,
    writer: &str,
) -> NoteWrite {
    NoteWrite {
        title: title.to_string(),
        content: content.to_string(),
        visibility,
        writer: member(writer),
        at_ms: T0,
    }
}

async fn save(stores: &Stores, write: NoteWrite) -> Saved {
    stores.notes.save(&write).await.unwrap()
}

async fn added(stores: &Stores, write: NoteWrite) -> Note {
    match save(stores, write).await {
        Saved::Added(note) => note,
        other => panic!("expected an added note, got {other:?}"),
    }
}

fn title(text: &str) -> NoteRef {
    NoteRef::Title(text.to_string())
}

fn titles(notes: &[Note]) -> Vec<&str> {
    notes.iter().map(|note| note.title.as_str()).collect()
}

async fn search(stores: &Stores, reader: &str, query: &str) -> Vec<String> {
    let found = stores
        .notes
        .search(&member(reader), query, 10)
        .await
        .unwrap_or_else(|error| panic!("search {query:?}: {error}"));
    found.into_iter().map(|note| note.title).collect()
}

async fn notes_are_added_read_updated_and_deleted(stores: &Stores) {
    let notes = &stores.notes;
    let wifi = added(stores, write(" Wifi ", "hearth-rocks", None, "alice")).await;
    assert_eq!(
        (wifi.title.as_str(), wifi.content.as_str()),
        ("Wifi", "hearth-rocks")
    );
    assert_eq!(wifi.visibility, NoteVisibility::Family, "family by default");
    assert_eq!(
        (wifi.author.as_str(), wifi.updated_by.as_str()),
        ("alice", "alice")
    );
    assert_eq!((wifi.created_at_ms, wifi.updated_at_ms), (T0, T0));
    let alice = member("alice");
    assert_eq!(
        notes.get(&alice, &title("wifi")).await.unwrap(),
        Some(wifi.clone())
    );
    assert_eq!(
        notes.get(&alice, &NoteRef::Id(wifi.id)).await.unwrap(),
        Some(wifi.clone())
    );
    assert_eq!(
        notes
            .get(&alice, &NoteRef::Id(wifi.id + 100))
            .await
            .unwrap(),
        None
    );
    assert_eq!(notes.get(&alice, &title("Garden")).await.unwrap(), None);

    // Bob updates the family note: same number, author and creation; his words and time.
    let update = NoteWrite {
        at_ms: T0 + 5,
        ..write("WIFI", "new password", None, "bob")
    };
    let updated = match save(stores, update).await {
        Saved::Updated(note) => note,
        other => panic!("expected an update, got {other:?}"),
    };
    assert_eq!(updated.id, wifi.id);
    assert_eq!(updated.title, "WIFI", "the title as last written");
    assert_eq!(updated.content, "new password");
    assert_eq!(
        (updated.author.as_str(), updated.updated_by.as_str()),
        ("alice", "bob")
    );
    assert_eq!((updated.created_at_ms, updated.updated_at_ms), (T0, T0 + 5));

    let garden = added(stores, write("Garden", "roses in May", None, "bob")).await;
    assert!(garden.id > wifi.id);
    assert_eq!(
        notes.delete(&alice, &title(" wifi")).await.unwrap(),
        Some(updated)
    );
    assert_eq!(
        notes.delete(&alice, &title("wifi")).await.unwrap(),
        None,
        "gone"
    );
    assert_eq!(
        notes.get(&alice, &NoteRef::Id(wifi.id)).await.unwrap(),
        None
    );
    assert!(
        search(stores, "alice", "password").await.is_empty(),
        "out of the index"
    );
    let last_id = garden.id;
    assert_eq!(
        notes.delete(&alice, &NoteRef::Id(garden.id)).await.unwrap(),
        Some(garden)
    );
    // A number is never given again, not even the last one's.
    let again = added(stores, write("Wifi", "third", None, "alice")).await;
    assert!(again.id > last_id, "{} after {last_id}", again.id);
}

async fn notes_titles_are_unique_whatever_their_case(stores: &Stores) {
    let notes = &stores.notes;
    let family = added(stores, write("Äpfel", "for the cake", None, "alice")).await;
    // Beyond ASCII, where SQLite's own NOCASE would see two titles.
    let again = save(
        stores,
        write(" äPFEL ", "twelve", Some(NoteVisibility::Family), "bob"),
    )
    .await;
    assert_eq!(again.note().id, family.id);
    assert!(matches!(again, Saved::Updated(_)));
    // A private note of that title is another note, the author's own; the author then
    // reads and updates their private one first.
    let private = added(
        stores,
        write("äpfel", "mine", Some(NoteVisibility::Private), "bob"),
    )
    .await;
    assert_ne!(private.id, family.id);
    let bobs = save(stores, write("ÄPFEL", "still mine", None, "bob")).await;
    assert_eq!(
        (bobs.note().id, bobs.note().visibility),
        (private.id, NoteVisibility::Private)
    );
    assert_eq!(
        notes
            .get(&member("bob"), &title("Äpfel"))
            .await
            .unwrap()
            .map(|note| note.id),
        Some(private.id)
    );
    // Alice has no private one: she gets and updates the family's.
    let alices = save(stores, write("äpfel", "ten", None, "alice")).await;
    assert_eq!(alices.note().id, family.id);
    // Alice's private one of the same title is a third note, unique per author.
    let hers = added(
        stores,
        write("ÄPFEL", "hers", Some(NoteVisibility::Private), "alice"),
    )
    .await;
    let hers_again = save(
        stores,
        write(
            "äpfel",
            "hers again",
            Some(NoteVisibility::Private),
            "alice",
        ),
    )
    .await;
    assert_eq!(hers_again.note().id, hers.id);
    let listed = notes.list(&member("carol"), 10).await.unwrap();
    assert_eq!(listed.total, 1, "carol reads the family's only: {listed:?}");
    assert_eq!(listed.notes[0].content, "ten");
    // A blank title could never be asked for again.
    match notes.save(&write(" \n", "x", None, "alice")).await {
        Err(StorageError::Invalid(message)) => assert!(message.contains("blank"), "{message}"),
        other => panic!("a blank title: {other:?}"),
    }
}

async fn notes_private_ones_are_invisible_to_other_members(stores: &Stores) {
    let notes = &stores.notes;
    let code = added(
        stores,
        write(
            "Alarm code",
            "4711 then enter",
            Some(NoteVisibility::Private),
            "alice",
        ),
    )
    .await;
    added(stores, write("Wifi", "code hearth-rocks", None, "alice")).await;
    let bob = member("bob");
    assert_eq!(notes.get(&bob, &title("alarm code")).await.unwrap(), None);
    assert_eq!(notes.get(&bob, &NoteRef::Id(code.id)).await.unwrap(), None);
    assert!(search(stores, "bob", "4711").await.is_empty());
    assert_eq!(search(stores, "bob", "code").await, ["Wifi"]);
    assert_eq!(search(stores, "bob", "alarm").await, Vec::<String>::new());
    let listed = notes.list(&bob, 10).await.unwrap();
    assert_eq!((titles(&listed.notes), listed.total), (vec!["Wifi"], 1));
    assert_eq!(
        notes.delete(&bob, &title("Alarm code")).await.unwrap(),
        None
    );
    assert_eq!(
        notes.delete(&bob, &NoteRef::Id(code.id)).await.unwrap(),
        None
    );
    // Bob writing that title adds a family note beside it; Alice's stays as it was.
    let bobs = save(stores, write("alarm CODE", "ask mum", None, "bob")).await;
    assert!(matches!(&bobs, Saved::Added(note) if note.visibility == NoteVisibility::Family));
    let alice = member("alice");
    assert_eq!(
        notes.get(&alice, &NoteRef::Id(code.id)).await.unwrap(),
        Some(code.clone())
    );
    assert_eq!(
        notes.get(&alice, &title("Alarm Code")).await.unwrap(),
        Some(code)
    );
    assert_eq!(search(stores, "alice", "4711").await, ["Alarm code"]);
    assert_eq!(notes.list(&alice, 10).await.unwrap().total, 3);
}

async fn notes_search_ranks_a_title_above_a_content(stores: &Stores) {
    // Written title-match first, so neither newest-first nor number order explains a pass.
    added(
        stores,
        write("Garden plan", "Roses by the fence.", None, "alice"),
    )
    .await;
    let later = NoteWrite {
        at_ms: T0 + 10,
        ..write(
            "Weekend",
            "Saturday: mow the lawn, then the garden party at Carol's.",
            None,
            "bob",
        )
    };
    added(stores, later).await;
    added(
        stores,
        write("Recipes", "Apple pie; no plants here.", None, "bob"),
    )
    .await;
    assert_eq!(
        search(stores, "alice", "garden").await,
        ["Garden plan", "Weekend"]
    );
    assert_eq!(
        search(stores, "alice", "GARDEN").await,
        ["Garden plan", "Weekend"]
    );
    // The last word also as the start of a word; the others whole.
    assert_eq!(
        search(stores, "alice", "gard").await,
        ["Garden plan", "Weekend"]
    );
    // "gard" is no whole word, so no note holds both: any word, "plan" also in "plants".
    assert_eq!(
        search(stores, "alice", "gard plan").await,
        ["Garden plan", "Recipes"]
    );
    assert_eq!(search(stores, "alice", "plan gard").await, ["Garden plan"]);
    // Notes holding every word come first; only when none does, any of them.
    assert_eq!(search(stores, "alice", "lawn party").await, ["Weekend"]);
    let either = search(stores, "alice", "roses pie").await;
    assert_eq!(either.len(), 2, "{either:?}");
    assert!(either.contains(&"Recipes".to_string()) && either.contains(&"Garden plan".to_string()));
    // Three words or more, none holding all: notes holding all but one, not any one.
    assert_eq!(
        search(stores, "alice", "roses fence pie").await,
        ["Garden plan"]
    );
    let any = search(stores, "alice", "lawn roses pie").await;
    assert_eq!(any.len(), 3, "{any:?}");
    assert!(search(stores, "alice", "tulips").await.is_empty());
    // The limit holds.
    let one = stores
        .notes
        .search(&member("alice"), "garden", 1)
        .await
        .unwrap();
    assert_eq!(titles(&one), ["Garden plan"]);
}

async fn notes_search_takes_any_text_as_words(stores: &Stores) {
    added(
        stores,
        write(
            "Title: near",
            "A OR B, x-ray \"quoted\" star*",
            None,
            "alice",
        ),
    )
    .await;
    for query in [
        "\"quoted",
        "star*",
        "NEAR(",
        "near(title",
        "a OR",
        "-x",
        "title:",
        "x-ray",
        "{title content}: near",
        "^near",
        "NOT near",
    ] {
        let found = search(stores, "bob", query).await;
        assert_eq!(found, ["Title: near"], "search {query:?}");
    }
    for query in ["nothing-like-it", "zzz*", "zzz* -yyy", "AND"] {
        assert!(search(stores, "bob", query).await.is_empty(), "{query:?}");
    }
    for query in ["", "   ", "\"", "*", "-", ":", "()", "\"\" * - :"] {
        match stores.notes.search(&member("bob"), query, 10).await {
            Err(StorageError::Invalid(message)) => {
                assert!(message.contains("no words"), "{query:?}: {message}")
            }
            other => panic!("search {query:?}: expected a clear refusal, got {other:?}"),
        }
    }
}

async fn notes_list_newest_first_with_the_total(stores: &Stores) {
    for (n, name) in ["one", "two", "three", "four"].into_iter().enumerate() {
        let at = NoteWrite {
            at_ms: T0 + i64::try_from(n).unwrap(),
            ..write(name, "words", None, "alice")
        };
        added(stores, at).await;
    }
    let list = stores.notes.list(&member("bob"), 3).await.unwrap();
    assert_eq!(
        (titles(&list.notes), list.total),
        (vec!["four", "three", "two"], 4)
    );
    // An update makes a note the newest.
    let touched = NoteWrite {
        at_ms: T0 + 9,
        ..write("ONE", "more words", None, "bob")
    };
    save(stores, touched).await;
    let list = stores.notes.list(&member("bob"), 10).await.unwrap();
    assert_eq!(titles(&list.notes), ["ONE", "four", "three", "two"]);
    assert!(
        stores
            .notes
            .list(&member("carol"), 0)
            .await
            .unwrap()
            .notes
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_keeps_notes_and_their_index_across_a_restart() {
    let folder = tempfile::tempdir().unwrap();
    let url = sqlite_url(folder.path());
    let (private, family) = {
        let stores = open_or_panic(&url).await;
        let private = added(
            &stores,
            write("Alarm code", "4711", Some(NoteVisibility::Private), "alice"),
        )
        .await;
        let family = added(&stores, write("Garden plan", "roses", None, "bob")).await;
        stores.close().await;
        (private, family)
    };
    let stores = open_or_panic(&url).await;
    let alice = member("alice");
    assert_eq!(
        stores
            .notes
            .get(&alice, &title("alarm code"))
            .await
            .unwrap(),
        Some(private.clone())
    );
    assert_eq!(search(&stores, "alice", "4711").await, ["Alarm code"]);
    assert!(search(&stores, "bob", "4711").await.is_empty());
    assert_eq!(search(&stores, "bob", "roses").await, ["Garden plan"]);
    // Numbers go on after the last one given, across the restart.
    let next = added(&stores, write("Wifi", "hearth", None, "bob")).await;
    assert!(next.id > family.id && next.id > private.id);
    stores.close().await;
}
