//! `search_memory` shows each member only what is theirs to read, on SQLite and on
//! PostgreSQL: Alice (a parent) and Bob (a child) each talked to hearth in their private
//! Telegram chat and wrote in a family group; Alice keeps a private note, Bob wrote a
//! family note; Carol (a parent) wrote nowhere. Asked over HTTP, the model calls the real
//! tool through the real OpenAI provider, and what the tool told it is checked: a member's
//! own chat and the family's note, never the other's private chat or note (a parent asking
//! about a child's chat and a child about a parent's), the group only for who wrote there.

use serde_json::json;

use crate::support::family_memory::{remember_everything, search_as, write_note};
use crate::support::hearth_app::Hearth;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::postgres::PostgresServer;
use crate::support::telegram::{TelegramServer, TgChat};
use crate::support::telegram_family::{
    TOKEN, alice, bob, bot_says, start_written, telegram_family,
};

/// hearth on the fake Telegram (and `database`, else SQLite), the family's chats and notes
/// written and put in memory.
async fn family_that_talked(
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
    database: Option<&str>,
) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let mut config = telegram_family(folder.path(), llm, telegram)
        .named("carol", "Carol")
        .parent("alice")
        .child("bob")
        .parent("carol")
        .default_tools("profile_get, search_memory");
    if let Some(database) = database {
        config = config.database(database);
    }
    let path = config.write(folder.path());
    let app = start_written(folder, &path, &[]).await;

    // The scripted model echoes each message: hearth's answers are in memory too.
    telegram.push_private_text(&alice(), "The piano lesson moved to Thursday");
    bot_says(telegram, 1001, "echo: The piano lesson").await;
    telegram.push_private_text(&bob(), "I hid the present for mum under the bed");
    bot_says(telegram, 1002, "echo: I hid the present").await;
    let group = TgChat::group(-5001, "Family");
    telegram.push_group_text(&group, &bob(), "Who wants birthday cake on Saturday?", None);
    bot_says(telegram, -5001, "echo: Who wants").await;
    telegram.push_group_text(&group, &alice(), "I will bake the birthday cake", None);
    bot_says(telegram, -5001, "echo: I will bake").await;
    let now = hearth::clock::now_ms();
    write_note(
        &app,
        "alice",
        "Present ideas",
        "A piano songbook",
        true,
        now,
    )
    .await;
    write_note(
        &app,
        "bob",
        "Birthday party",
        "Party games in the garden",
        false,
        now,
    )
    .await;
    remember_everything(&app).await;
    app
}

/// The lines of a tool answer after its first (the hits).
fn hits(answer: &str) -> Vec<&str> {
    answer.lines().skip(1).collect()
}

async fn each_member_reads_only_what_is_theirs(database: Option<&str>) {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = family_that_talked(&llm, &telegram, database).await;
    let everything = json!({"query": "piano bed party games"});

    // Alice: her chat (her words and hearth's), her private note, the family's note; never
    // what her child said in his own chat.
    let alices = search_as(&app, &llm, "alice", everything.clone()).await;
    let found = hits(&alices);
    assert_eq!(found.len(), 4, "{alices}");
    for seen in [
        "chat on telegram, you, ",
        "“The piano lesson moved to Thursday”",
        "chat on telegram, hearth, ",
        "note \"Present ideas\", you, ",
        "note \"Birthday party\", Bob, ",
    ] {
        assert!(alices.contains(seen), "{seen} not in {alices}");
    }
    assert!(!alices.contains("under the bed"), "{alices}");

    // Bob: his chat and the family's note; never his parent's chat or private note.
    let bobs = search_as(&app, &llm, "bob", everything.clone()).await;
    assert_eq!(hits(&bobs).len(), 3, "{bobs}");
    assert!(
        bobs.contains("you, ") && bobs.contains("“I hid the present for mum under the bed”"),
        "{bobs}"
    );
    assert!(bobs.contains("note \"Birthday party\", you, "), "{bobs}");
    assert!(!hits(&bobs).concat().contains("iano"), "{bobs}");
    for (who, query) in [("bob", "piano songbook"), ("alice", "bed mum hid")] {
        let nothing = search_as(&app, &llm, who, json!({ "query": query })).await;
        assert_eq!(
            nothing,
            format!("Nothing you can read in memory matches \"{query}\"."),
            "{who}"
        );
    }

    // The group: found by both who wrote there, with who said what; not by Carol.
    for (who, own, other) in [
        ("alice", "I will bake", "Who wants birthday cake"),
        ("bob", "Who wants birthday cake", "I will bake"),
    ] {
        let cake = search_as(&app, &llm, who, json!({"query": "cake"})).await;
        let line = |needle: &str| {
            hits(&cake)
                .into_iter()
                .find(|line| line.contains(needle) && !line.contains("echo"))
                .unwrap_or_else(|| panic!("{needle} not in {cake}"))
                .to_owned()
        };
        assert!(line(own).contains("chat on telegram, you, "), "{cake}");
        assert!(!line(other).contains(", you, "), "{cake}");
    }
    let carols = search_as(
        &app,
        &llm,
        "carol",
        json!({"query": "cake piano bed games"}),
    )
    .await;
    assert_eq!(hits(&carols).len(), 1, "{carols}");
    assert!(
        carols.contains("note \"Birthday party\", Bob, ")
            && carols.contains("“Party games in the garden”"),
        "{carols}"
    );
    app.stop().await;
}

#[actix::test]
async fn each_member_reads_only_what_is_theirs_on_sqlite() {
    each_member_reads_only_what_is_theirs(None).await;
}

#[actix::test]
async fn each_member_reads_only_what_is_theirs_on_postgres() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database = server.fresh_database().await;
    each_member_reads_only_what_is_theirs(Some(&database)).await;
}
