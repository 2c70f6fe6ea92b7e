//! A chat over HTTP indexed by the running hearth: each member's words and hearth's
//! answers to them found as that member, never as the other; each text embedded once on
//! the embedding model; and `hearth memory status` beside it saying what is held, that the
//! indexer is caught up, the vectors, and what embedding cost.

use std::time::{Duration, Instant};

use hearth::ids::MemberId;
use hearth::ports::{MemoryFilter, memory_query_words};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::memory_indexing::{
    EMBEDDING_LLM, EMBEDDING_MODEL, embedded_texts, embedded_twice, memory_status, with_embedding,
};

/// The texts `reader` finds for `query`'s words, through the port as the search does.
async fn found(hearth: &Hearth, reader: &str, query: &str) -> Vec<String> {
    let reader: MemberId = reader.parse().unwrap();
    let words = memory_query_words(query);
    let memory = &hearth.app().stores.family_memory;
    let hits = memory
        .search_words(&reader, &words, &MemoryFilter::default(), 10)
        .await
        .unwrap();
    let mut texts: Vec<String> = hits.into_iter().map(|hit| hit.text).collect();
    texts.sort();
    texts
}

#[actix::test]
async fn a_chat_over_http_is_found_by_its_member_alone_and_the_status_says_so() {
    let llm = ScriptedLlmServer::start();
    let hearth = Hearth::start_with(&llm.base_url(), with_embedding, &[]).await;
    let asked = hearth
        .ask("alice", "The wifi password is sonnenblume")
        .await;
    assert_eq!(asked, "echo: The wifi password is sonnenblume");
    hearth.ask("bob", "My locker code is pumpernickel").await;

    // Indexed once settled (5 s) at the next pass (every second).
    let started = Instant::now();
    while found(&hearth, "bob", "pumpernickel").await.len() < 2 {
        assert!(started.elapsed() < Duration::from_secs(30), "never indexed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        found(&hearth, "alice", "sonnenblume").await,
        [
            "The wifi password is sonnenblume",
            "echo: The wifi password is sonnenblume"
        ]
    );
    assert!(found(&hearth, "bob", "sonnenblume").await.is_empty());
    assert!(found(&hearth, "alice", "pumpernickel").await.is_empty());

    let memory = &hearth.app().stores.family_memory;
    let started = Instant::now();
    while memory.status(Some(EMBEDDING_MODEL)).await.unwrap().waiting > 0 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never embedded"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let texts = embedded_texts(&llm);
    assert_eq!(texts.len(), 4, "{texts:?}");
    assert!(embedded_twice(&texts).is_empty(), "{texts:?}");

    // What the status says, read beside the running hearth.
    hearth.app().stores.telemetry.flush().await;
    let env = test_env(&[]);
    let printed = memory_status(&hearth.folder().join("hearth.yaml"), &env);
    let tokens: usize = texts
        .iter()
        .map(|text| text.split_whitespace().count())
        .sum();
    let calls = llm.embedding_requests().len();
    for line in [
        "indexer: on, every 1 s".to_owned(),
        "sources: 4, chunks: 4".to_owned(),
        "  chat:     4 sources, 4 chunks".to_owned(),
        "  note:     0 sources, 0 chunks".to_owned(),
        "  document: 0 sources, 0 chunks".to_owned(),
        format!("vectors of {EMBEDDING_MODEL} ({EMBEDDING_LLM}): 4; chunks waiting for one: 0"),
        format!(
            "embedding cost ({EMBEDDING_LLM}): {:.6} USD for {calls} calls, {tokens} input tokens, since ",
            tokens as f64 * 20.0 / 1_000_000.0
        ),
    ] {
        assert!(printed.contains(&line), "{line:?} not in:\n{printed}");
    }
    assert!(
        printed.contains(": caught up, no chat entry after it"),
        "{printed}"
    );
    hearth.stop().await;
}
