//! PostgreSQL only: a url whose server or database is not there fails by name, never with
//! its password; workers opening one fresh database together all start and migrate it once
//! (sqlx's advisory lock); the telemetry writer fills its tables; stores of several
//! workers on one database spend a sign-in code or link once however they race; and
//! `copy-store` moves family memory from SQLite (its vectors' bytes, its search computed
//! anew, its ids never given twice).

use hearth::ports::{
    MemoryFilter, MemoryKind, MemoryReaders, MemorySource, SignInCheck, TelemetryEvent,
    memory_query_words,
};
use hearth::redaction::redact_url_password;
use hearth::storage::{self, Stores};
use sqlx::Row;

use super::telemetry::{llm_call, stage_event};
use super::{T0, member, open_or_panic};
use crate::support::postgres::PostgresServer;

const MINUTE: i64 = 60_000;

/// A fresh database of the test process's cluster; `None` when PostgreSQL is missing.
async fn fresh_url() -> Option<(&'static PostgresServer, String)> {
    let server = PostgresServer::shared()?;
    let url = server.fresh_database().await;
    Some((server, url))
}

/// `url` with the password `secret` in it.
fn with_password(url: &str) -> String {
    url.replacen("postgres://hearth@", "postgres://hearth:secret@", 1)
}

fn expect_refused_by_name(result: Result<Stores, hearth::ports::StorageError>, url: &str) {
    let error = match result {
        Err(error) => error.to_string(),
        Ok(_) => panic!("{url}: opened"),
    };
    assert!(error.contains(&redact_url_password(url)), "{error}");
    assert!(!error.contains("secret"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_missing_database_or_server_is_named_without_its_password() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let missing = with_password(&server.url("no_such_database"));
    expect_refused_by_name(storage::open(&missing, 2).await, &missing);
    // No server at all: a name that never resolves.
    let nowhere = "postgres://hearth:secret@hearth-database.invalid:5432/hearth";
    expect_refused_by_name(storage::open(nowhere, 2).await, nowhere);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_workers_opening_one_fresh_database_together_migrate_it_once() {
    let Some((_server, url)) = fresh_url().await else {
        return;
    };
    let opened = open_together(&url, 4).await;
    for stores in &opened {
        stores.inbox.ping().await.unwrap();
    }
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&pool)
            .await
            .unwrap();
    let files = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))
        .unwrap()
        .filter(|file| {
            file.as_ref()
                .is_ok_and(|file| file.path().extension().is_some_and(|ext| ext == "sql"))
        })
        .count();
    assert_eq!(
        applied.len(),
        files,
        "each migration recorded once: {applied:?}"
    );
    pool.close().await;
    for stores in opened {
        stores.close().await;
    }
}

/// `count` stores opened on `url` at the same time, each on a task of its own.
async fn open_together(url: &str, count: usize) -> Vec<Stores> {
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(count));
    let opening: Vec<_> = (0..count)
        .map(|_| {
            let (url, barrier) = (url.to_string(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                storage::open(&url, 2).await
            })
        })
        .collect();
    let mut opened = Vec::new();
    for open in opening {
        match open.await.unwrap() {
            Ok(stores) => opened.push(stores),
            Err(error) => panic!("a worker failed to open {url}: {error}"),
        }
    }
    opened
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_telemetry_writer_fills_its_tables() {
    let Some((_server, url)) = fresh_url().await else {
        return;
    };
    let stores = open_or_panic(&url).await;
    let mut call = llm_call(T0);
    call.member_id = Some(member("alice"));
    stores.telemetry.record(TelemetryEvent::LlmCall(call));
    stores.telemetry.record(stage_event(T0 + 1));
    // A burst larger than one batch arrives whole.
    for at_ms in 0..600 {
        stores.telemetry.record(stage_event(at_ms));
    }
    stores.telemetry.flush().await;

    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let row = sqlx::query(
        "SELECT at_ms, llm_name, model, backend, wire, profile_id, conversation_key, attempt, \
         outcome, input_tokens, output_tokens, latency_ms, cost_usd, member_id FROM llm_calls",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(row.get::<i64, _>("at_ms"), T0);
    assert_eq!(row.get::<String, _>("llm_name"), "main");
    assert_eq!(row.get::<String, _>("model"), "gpt-test");
    assert_eq!(row.get::<String, _>("backend"), "openai");
    assert_eq!(row.get::<String, _>("wire"), "chat_completions");
    assert_eq!(
        row.get::<Option<String>, _>("profile_id").as_deref(),
        Some("family")
    );
    assert_eq!(
        row.get::<Option<String>, _>("conversation_key").as_deref(),
        Some("http:kitchen")
    );
    assert_eq!(row.get::<i64, _>("attempt"), 2);
    assert_eq!(row.get::<String, _>("outcome"), "ok");
    assert_eq!(row.get::<i64, _>("input_tokens"), 1_234);
    assert_eq!(row.get::<i64, _>("output_tokens"), 56);
    assert_eq!(row.get::<i64, _>("latency_ms"), 789);
    assert!((row.get::<f64, _>("cost_usd") - 0.0125).abs() < 1e-12);
    assert_eq!(
        row.get::<Option<String>, _>("member_id").as_deref(),
        Some("alice")
    );

    let first = sqlx::query(
        "SELECT at_ms, conversation_key, stage, payload FROM telemetry_events ORDER BY id LIMIT 1",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(first.get::<i64, _>("at_ms"), T0 + 1);
    assert_eq!(first.get::<String, _>("conversation_key"), "http:kitchen");
    assert_eq!(first.get::<String, _>("stage"), "prompt_built");
    let payload: serde_json::Value =
        serde_json::from_str(&first.get::<String, _>("payload")).unwrap();
    assert_eq!(
        payload,
        serde_json::json!({"messages": 3, "profile": "family"})
    );
    let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM telemetry_events")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(events, 601);
    pool.close().await;
    stores.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_copy_store_moves_family_memory() {
    let Some((_server, url)) = fresh_url().await else {
        return;
    };
    let folder = tempfile::tempdir().unwrap();
    let on_sqlite = open_or_panic(&super::sqlite_url(folder.path())).await;
    let garden = MemorySource {
        kind: MemoryKind::Note,
        reference: "1".into(),
        title: "Garden".into(),
        readers: MemoryReaders::Family,
        member: Some(member("alice")),
        conversation: None,
        created_at_ms: T0,
        chunks: vec!["Müller's roses by the fence".into(), "tulips".into()],
    };
    let gone = MemorySource {
        kind: MemoryKind::Document,
        reference: "gone".into(),
        chunks: vec!["gone".into()],
        ..garden.clone()
    };
    let memory = &on_sqlite.family_memory;
    let cursor = Some(("chats", 42));
    memory
        .put_sources(&[garden, gone], cursor, T0)
        .await
        .unwrap();
    // Ids SQLite gave to rows deleted since are not given again on PostgreSQL.
    assert!(memory.remove(MemoryKind::Document, "gone").await.unwrap());
    let missing = memory.vectors_missing("embedder", 10).await.unwrap();
    let vectors: Vec<(String, Vec<f32>)> = (missing.iter())
        .map(|(hash, text)| match text.as_str() {
            "tulips" => (hash.clone(), vec![0.0, 1.0]),
            _ => (hash.clone(), vec![1.0, 0.0]),
        })
        .collect();
    memory.put_vectors("embedder", &vectors).await.unwrap();
    on_sqlite.close().await;

    let on_postgres = open_or_panic(&url).await;
    let from = storage::sqlite::SqliteStore::connect(&super::sqlite_url(folder.path()), 1)
        .await
        .unwrap();
    let copied = storage::copy::copy_store(&from, on_postgres.postgres.as_ref().unwrap(), |_| {})
        .await
        .unwrap();
    let rows = |table: &str| {
        copied
            .iter()
            .find(|copied| copied.table == table)
            .unwrap()
            .rows
    };
    assert_eq!((rows("memory_sources"), rows("memory_chunks")), (1, 2));
    assert_eq!((rows("memory_vectors"), rows("memory_cursors")), (2, 1));
    assert!(
        copied
            .iter()
            .all(|copied| !copied.table.starts_with("memory_fts"))
    );

    let memory = &on_postgres.family_memory;
    assert_eq!(memory.cursor("chats").await.unwrap(), 42);
    let words = memory_query_words("MULLER");
    let filter = MemoryFilter::default();
    let found = memory
        .search_words(&member("bob"), &words, &filter, 5)
        .await;
    let found: Vec<String> = found.unwrap().into_iter().map(|hit| hit.text).collect();
    assert_eq!(found, ["Müller's roses by the fence"]);
    let query = [2.0, 0.0];
    let bob = member("bob");
    let nearest = memory.search_vector(&bob, "embedder", &query, &filter, 5);
    let nearest = nearest.await.unwrap();
    assert_eq!(nearest[0].text, "Müller's roses by the fence");
    assert!(
        (nearest[0].score - 1.0).abs() < 1e-6,
        "{}",
        nearest[0].score
    );
    assert_eq!(memory.vectors_missing("embedder", 10).await.unwrap(), []);
    // A source added on PostgreSQL takes an id past the copied ones.
    let more = MemorySource {
        kind: MemoryKind::Document,
        reference: "manual".into(),
        title: String::new(),
        readers: MemoryReaders::Family,
        member: None,
        conversation: None,
        created_at_ms: T0,
        chunks: vec!["tulips manual".into()],
    };
    memory.put_sources(&[more], None, T0).await.unwrap();
    let tulips = memory_query_words("tulips");
    let hits = memory
        .search_words(&member("bob"), &tulips, &filter, 5)
        .await
        .unwrap();
    let ids: Vec<i64> = hits.iter().map(|hit| hit.chunk_id).collect();
    assert_eq!(ids.len(), 2);
    assert!(
        ids.iter().any(|id| *id > 3),
        "{ids:?}: the new chunk after the deleted one"
    );
    from.close().await;
    on_postgres.close().await;
}

/// Two workers on one database: what one writes the other sees at once, and the right code
/// or a link used from both at the same moment opens one session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_workers_spend_a_code_or_a_link_once() {
    let Some((_server, url)) = fresh_url().await else {
        return;
    };
    let workers = [open_or_panic(&url).await, open_or_panic(&url).await];
    let alice = member("alice");
    for round in 0..5 {
        let (code_hash, link_hash) = (format!("h{round}"), format!("l{round}"));
        // A day apart: the wrong tries of a round count no more in the next.
        let start = T0 + round * 2 * 24 * 60 * MINUTE;
        workers[0]
            .web_access
            .put_sign_in_code(&hearth::ports::NewSignInCode {
                member_id: alice.clone(),
                code_hash: code_hash.clone(),
                created_at_ms: start,
                expires_at_ms: start + 10 * MINUTE,
            })
            .await
            .unwrap();
        workers[1]
            .web_access
            .put_sign_in_link(&link_hash, &alice, start, start + 10 * MINUTE)
            .await
            .unwrap();
        let tries: Vec<_> = (0..8)
            .map(|n| {
                let web = workers[n % 2].web_access.clone();
                let (alice, code_hash, link_hash) =
                    (alice.clone(), code_hash.clone(), link_hash.clone());
                tokio::spawn(async move {
                    let attempt = hearth::ports::SignInAttempt {
                        member_id: alice,
                        code_hash,
                        address: format!("192.0.2.{n}"),
                        now_ms: start + MINUTE,
                        max_wrong: 3,
                    };
                    let code = web.try_sign_in_code(&attempt).await.unwrap().check;
                    let link = web
                        .use_sign_in_link(&link_hash, start + MINUTE)
                        .await
                        .unwrap();
                    (code, link)
                })
            })
            .collect();
        let mut results = Vec::new();
        for try_ in tries {
            results.push(try_.await.unwrap());
        }
        let accepted = results
            .iter()
            .filter(|(code, _)| *code == SignInCheck::Accepted)
            .count();
        assert_eq!(accepted, 1, "{results:?}");
        assert!(
            results.iter().all(|(code, _)| matches!(
                code,
                SignInCheck::Accepted | SignInCheck::NoCode | SignInCheck::Limited(_)
            )),
            "{results:?}"
        );
        let linked = results.iter().filter(|(_, link)| link.is_some()).count();
        assert_eq!(linked, 1, "{results:?}");
    }
    // Codes stored by both at once: one stays open, and both count.
    let puts: Vec<_> = (0..4)
        .map(|n| {
            let web = workers[n % 2].web_access.clone();
            let alice = alice.clone();
            tokio::spawn(async move {
                web.put_sign_in_code(&hearth::ports::NewSignInCode {
                    member_id: alice,
                    code_hash: format!("raced{n}"),
                    created_at_ms: T0 + 20 * 24 * 60 * MINUTE,
                    expires_at_ms: T0 + 20 * 24 * 60 * MINUTE + 10 * MINUTE,
                })
                .await
            })
        })
        .collect();
    for put in puts {
        put.await.unwrap().unwrap();
    }
    let made = workers[1]
        .web_access
        .sign_in_codes_since(&alice, T0 + 20 * 24 * 60 * MINUTE)
        .await
        .unwrap();
    assert_eq!(made, 4);
    let pool = sqlx::PgPool::connect(&url).await.unwrap();
    let open: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM sign_in_codes WHERE NOT replaced")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(open, 1);
    pool.close().await;
    for stores in workers {
        stores.close().await;
    }
}
