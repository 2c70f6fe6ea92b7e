//! SQLite only: what was stored is there after the database is opened again (messages,
//! suspended turns, plugin storage), a missing folder is created, and database urls hearth
//! cannot use are refused by name, never with their password (PostgreSQL's urls open
//! PostgreSQL: `postgres_only`).

use hearth::llm::Role;
use hearth::ports::{AnswerRefused, Decision, InboxStatus, RegisteredPlugin, StorageError};
use hearth::storage::{self, Stores};

use super::pending_actions::{WAIT_MS, answer, confirmation, open_confirmations, open_one};
use super::plugin_ports::{manifest, plugin_call};
use super::profiles::facts;
use super::shopping_lists::{item_names, shopping_item};
use super::{
    T0, contents, entry, expect_duplicate_of, expect_new, ids, inbound, key, member, open_or_panic,
    record_of, sqlite_url, turn_for,
};

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
            .set(&member("alice"), "name", Some("Alice"))
            .await
            .unwrap();
        stores
            .memory
            .append(&key("console:local"), &[entry(Role::User, "hello", 5)])
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
            .recent(&answered.conversation, 10, 0)
            .await
            .unwrap();
        assert_eq!(
            contents(&history),
            [answered.text.as_str(), "stored answer"]
        );
        let console = stores
            .memory
            .recent(&key("console:local"), 10, 0)
            .await
            .unwrap();
        assert_eq!(contents(&console), ["hello"]);
        assert_eq!(
            stores.profiles.get(&member("alice")).await.unwrap(),
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
            stores
                .pending
                .consume(&"a-consumed".parse().unwrap())
                .await
                .unwrap(),
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
        assert_eq!(
            stores
                .pending
                .consume(&"a-consumed".parse().unwrap())
                .await
                .unwrap(),
            None
        );
        assert_eq!(
            answer(&stores, "z-waiting", "bob", true, T0 + 20).await,
            Err(AnswerRefused::NotYours)
        );
        assert_eq!(
            answer(&stores, "z-waiting", "alice", true, T0 + 20).await,
            Ok(waiting.clone())
        );
        assert_eq!(
            stores
                .pending
                .consume(&"m-approved".parse().unwrap())
                .await
                .unwrap(),
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
                .add("groceries", name, 1, &member("alice"), T0)
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
                .peek(&key("telegram:1"), &member("alice"), T0)
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
        .add("groceries", "MILK", 2, &member("bob"), T0 + 1)
        .await
        .unwrap();
    assert_eq!(milk, shopping_item("Milk", 3, "alice", T0));
    assert_eq!(
        stores
            .pending_plugin_calls
            .take_valid(&key("telegram:1"), &member("alice"), T0)
            .await
            .unwrap(),
        Some(call)
    );
}

pub(super) fn expect_unsupported(result: Result<Stores, StorageError>, url: &str) {
    match result {
        Err(error @ StorageError::UnsupportedUrl { .. }) => {
            let message = error.to_string();
            // Named, but never with its password.
            assert!(
                message.contains(&hearth::redaction::redact_url_password(url)),
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
        "mysql://hearth:secret@localhost:3306/hearth",
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
