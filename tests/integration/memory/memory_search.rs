//! `search_memory` over HTTP with the scripted model calling the real tool: the source and
//! the days (the member's, in their zone) narrow a search; with an embedding model the
//! query's vector (the scripted server's `/v1/embeddings`) finds a note sharing no word with
//! it, and with the model unreachable the words still find theirs; `recall: auto` gives the
//! best snippets with the member's message, after the history and never kept in it, `tool`
//! only offers the tool, and `off` offers nothing.

use chrono::TimeZone;
use serde_json::{Value, json};

use crate::support::family_memory::{
    chat_requests, embedded, give_vectors, remember_everything, search_as, with_embeddings,
    write_note,
};
use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{EmbeddingStep, ScriptedLlmServer, Step};
use crate::support::test_config::{ProfileParts, TestConfig, profile};

/// hearth over HTTP with `search_memory` offered, its configuration changed by `change`.
async fn start(llm: &ScriptedLlmServer, change: impl FnOnce(TestConfig) -> TestConfig) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let config =
        TestConfig::new(folder.path(), &llm.base_url()).default_tools("profile_get, search_memory");
    let path = change(config).write(folder.path());
    Hearth::start_from(folder, &path, &[]).await
}

fn at(year: i32, month: u32, day: u32, hour: u32, minute: u32) -> i64 {
    chrono::Utc
        .with_ymd_and_hms(year, month, day, hour, minute, 0)
        .unwrap()
        .timestamp_millis()
}

/// The hits of a tool answer (its lines after the first).
fn hits(answer: &str) -> Vec<&str> {
    answer.lines().skip(1).collect()
}

#[actix::test]
async fn the_source_and_the_member_s_days_narrow_a_search() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, |config| config).await;
    assert_eq!(
        app.ask("alice", "The garden hose is in the shed").await,
        "echo: The garden hose is in the shed"
    );
    write_note(
        &app,
        "alice",
        "Roses",
        "Prune the garden roses",
        false,
        at(2026, 1, 10, 12, 0),
    )
    .await;
    // 23:30 UTC on 31 January is 1 February in Alice's zone (the profile's, Europe/Berlin).
    let late = at(2026, 1, 31, 23, 30);
    write_note(&app, "alice", "Peas", "Sow the garden peas", false, late).await;
    remember_everything(&app).await;

    let all = search_as(&app, &llm, "alice", json!({"query": "garden"})).await;
    assert_eq!(hits(&all).len(), 4, "{all}");
    let notes = search_as(
        &app,
        &llm,
        "alice",
        json!({"query": "garden", "source": "note"}),
    )
    .await;
    assert!(
        notes.starts_with("From memory for \"garden\" among notes, best first"),
        "{notes}"
    );
    assert_eq!(hits(&notes).len(), 2, "{notes}");
    let chats = search_as(
        &app,
        &llm,
        "alice",
        json!({"query": "garden", "source": "chat"}),
    )
    .await;
    assert_eq!(hits(&chats).len(), 2, "{chats}");
    // Asked in the same conversation over HTTP, the chat is this one.
    for said in [
        "chat in this conversation, you, ",
        "“The garden hose is in the shed”",
        "chat in this conversation, hearth, ",
        "“echo: The garden hose is in the shed”",
    ] {
        assert!(chats.contains(said), "{said} not in {chats}");
    }
    let january = search_as(
        &app,
        &llm,
        "alice",
        json!({"query": "garden", "since": "2026-01-01", "until": "2026-01-31"}),
    )
    .await;
    assert_eq!(
        hits(&january),
        ["1. note \"Roses\", you, Sat 10 Jan 2026: “Prune the garden roses”"],
        "{january}"
    );
    let february = search_as(
        &app,
        &llm,
        "alice",
        json!({"query": "garden", "since": "2026-02-01", "until": "2026-02-28"}),
    )
    .await;
    assert_eq!(
        hits(&february),
        ["1. note \"Peas\", you, Sun 1 Feb 2026: “Sow the garden peas”"],
        "{february}"
    );
    let none = search_as(
        &app,
        &llm,
        "alice",
        json!({"query": "garden", "source": "document"}),
    )
    .await;
    assert_eq!(
        none,
        "Nothing you can read in memory matches \"garden\" among documents."
    );
    let refused = search_as(
        &app,
        &llm,
        "alice",
        json!({"query": "garden", "since": "2026-13-01"}),
    )
    .await;
    assert!(
        refused.contains("`since` must be a day written YYYY-MM-DD, got \"2026-13-01\""),
        "{refused}"
    );
    app.stop().await;
}

/// Two family notes put in memory, and their vectors: the embedding model knows Dr Okafor
/// is the family's tooth doctor; the other note's vector is its own text's.
async fn dentist_and_eyes(app: &Hearth, question: &str) {
    let now = hearth::clock::now_ms();
    let dentist = write_note(
        app,
        "alice",
        "Dentist",
        "Dr Okafor on Linden Street, Thursdays at four",
        false,
        now,
    )
    .await;
    let eyes = write_note(
        app,
        "alice",
        "Eyes",
        "The doctor said Max needs glasses",
        false,
        now,
    )
    .await;
    remember_everything(app).await;
    give_vectors(app, &[&dentist, &eyes], |chunk| {
        if chunk.contains("Okafor") {
            question.to_owned()
        } else {
            chunk.to_owned()
        }
    })
    .await;
}

const QUESTION: &str = "who is our tooth doctor";

#[actix::test]
async fn the_query_s_vector_finds_a_note_sharing_no_word_with_it() {
    let llm = ScriptedLlmServer::start();
    let base_url = llm.base_url();
    let app = start(&llm, |config| with_embeddings(config, &base_url)).await;
    dentist_and_eyes(&app, QUESTION).await;

    // "tooth" and "doctor" are the query's words; only the eye doctor's note holds one.
    let found = search_as(&app, &llm, "bob", json!({ "query": QUESTION })).await;
    assert_eq!(hits(&found).len(), 2, "{found}");
    assert!(
        found.contains("note \"Dentist\", Alice, ") && found.contains("“Dr Okafor on Linden"),
        "{found}"
    );
    assert!(
        found.contains("“The doctor said Max needs glasses”"),
        "{found}"
    );
    assert_eq!(embedded(&llm, QUESTION), 1);
    let asked = llm.embedding_requests();
    let asked = asked
        .iter()
        .find(|request| request.body["input"] == json!([QUESTION]))
        .unwrap();
    assert_eq!(asked.body["model"], "scripted-embedding");
    app.stop().await;
}

#[actix::test]
async fn the_words_alone_answer_when_the_embeddings_endpoint_fails() {
    let llm = ScriptedLlmServer::start();
    // An embeddings server of its own refusing every call (400: not tried again), and a
    // port nothing listens on.
    let refusing = ScriptedLlmServer::start();
    for _ in 0..20 {
        refusing.push_embedding(EmbeddingStep::Error {
            status: 400,
            retry_after: None,
        });
    }
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unreachable = format!(
        "http://127.0.0.1:{}/v1",
        closed.local_addr().unwrap().port()
    );
    drop(closed);
    for (embeddings, outcome) in [
        (refusing.base_url(), "http_error"),
        (unreachable, "connect"),
    ] {
        let app = start(&llm, |config| with_embeddings(config, &embeddings)).await;
        dentist_and_eyes(&app, QUESTION).await;
        let words_only = search_as(&app, &llm, "bob", json!({ "query": QUESTION })).await;
        assert!(
            words_only.starts_with(&format!("From memory for \"{QUESTION}\", best first")),
            "{outcome}: {words_only}"
        );
        assert_eq!(hits(&words_only).len(), 1, "{outcome}: {words_only}");
        assert!(
            words_only.contains("note \"Eyes\", Alice, ")
                && words_only.contains("“The doctor said Max needs glasses”"),
            "{outcome}: {words_only}"
        );
        // The query was tried on the embedding model, and failed.
        let failed = app.app().metrics.value(
            "hearth_llm_calls_total",
            &[
                ("backend", "cloud"),
                ("llm", "vectors"),
                ("outcome", outcome),
            ],
        );
        assert!(failed >= 1.0, "{outcome}: {failed}");
        app.stop().await;
    }
    assert!(embedded(&refusing, QUESTION) >= 1);
}

/// The content of the last user message of chat request `request`, and whether the tools
/// offered name `search_memory`.
fn asked(request: &Value) -> (String, bool) {
    let user = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_owned();
    let offered = request["tools"].to_string().contains("\"search_memory\"");
    (user, offered)
}

#[actix::test]
async fn recall_auto_gives_snippets_with_the_message_tool_only_offers_and_off_offers_nothing() {
    let llm = ScriptedLlmServer::start();
    let app = start(&llm, |config| {
        config
            .default_processing("recall", "auto".into())
            .profile(
                profile("plain")
                    .command("/plain")
                    .processing(&[("recall", "tool".into())]),
            )
            .profile(
                profile("quiet")
                    .command("/quiet")
                    .processing(&[("recall", "off".into())]),
            )
    })
    .await;
    app.ask("alice", "The piano lesson moved to Thursday").await;
    remember_everything(&app).await;

    llm.push(Step::Reply("On Thursday.".into()));
    assert_eq!(
        app.ask("alice", "when is the piano lesson?").await,
        "On Thursday."
    );
    let request = chat_requests(&llm).last().unwrap().body.clone();
    let (user, offered) = asked(&request);
    assert!(offered);
    assert!(
        user.starts_with(
            "when is the piano lesson?\n\n(From hearth's memory, found for this message"
        ),
        "{user}"
    );
    assert!(
        user.contains("chat in this conversation, you, ")
            && user.contains("“The piano lesson moved to Thursday”"),
        "{user}"
    );
    assert!(user.lines().count() <= 3 + 3, "{user}");
    let system = request["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("hearth's memory"), "{system}");

    // The history keeps the member's words alone; a message memory knows nothing of gets
    // nothing.
    llm.push(Step::Reply("You're welcome.".into()));
    app.ask("alice", "thanks").await;
    let request = chat_requests(&llm).last().unwrap().body.clone();
    let texts: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["content"].as_str())
        .collect();
    assert!(texts.contains(&"when is the piano lesson?"), "{texts:?}");
    assert_eq!(asked(&request).0, "thanks");
    assert_eq!(
        texts
            .iter()
            .filter(|text| text.contains("hearth's memory"))
            .count(),
        0
    );

    // Bob's message finds nothing of Alice's chat.
    llm.push(Step::Reply("I don't know.".into()));
    app.ask("bob", "when is the piano lesson?").await;
    assert_eq!(
        asked(&chat_requests(&llm).last().unwrap().body).0,
        "when is the piano lesson?"
    );

    // `tool`: offered, nothing given with the message; `off`: neither, though the profile's
    // enable_local_tools names it.
    for (command, offers) in [("/plain", true), ("/quiet", false)] {
        llm.push(Step::Reply("Thursday.".into()));
        app.ask("alice", &format!("{command} when is the piano lesson?"))
            .await;
        let (user, offered) = asked(&chat_requests(&llm).last().unwrap().body);
        assert_eq!(user, "when is the piano lesson?", "{command}");
        assert_eq!(offered, offers, "{command}");
    }
    app.stop().await;
}
