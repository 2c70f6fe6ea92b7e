//! Family memory's indexer seen from outside, shared by the tests of the real binary on
//! SQLite and on PostgreSQL: the test config with an embedding model on the scripted
//! server, a history stored straight into the database (many turns in a moment, written
//! long enough ago to be settled), the database read beside the running hearth until the
//! indexer has caught up, `hearth memory status` as a member of the family would run it,
//! and the texts the scripted server was asked to embed.

// The tests each use a different part of this.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use hearth::actors::memory_indexer::CURSOR;
use hearth::config::LlmKind;
use hearth::ids::ConversationKey;
use hearth::llm::Role;
use hearth::ports::{HistoryEntry, MemoryStatus, now_ms};
use hearth::storage::Stores;

use super::llm_server::ScriptedLlmServer;
use super::test_config::TestConfig;

/// The embedding model's entry in `llms`, and the model its vectors are kept under.
pub const EMBEDDING_LLM: &str = "vectors";
pub const EMBEDDING_MODEL: &str = "nomic-embed-text";

/// `config` with the embedding entry `vectors` on the scripted server (twenty dollars a
/// million tokens, so its cost shows) named by `memory.embedding_model`, and the indexer
/// passing every second.
pub fn with_embedding(config: TestConfig) -> TestConfig {
    config.with(|config| {
        let mut entry = config.llms["main"].clone();
        entry.kind = LlmKind::Embedding;
        entry.model = EMBEDDING_MODEL.into();
        entry.cost_per_million_input_tokens = 20.0;
        config.llms.insert(EMBEDDING_LLM.into(), entry);
        config.memory.embedding_model = Some(EMBEDDING_LLM.into());
        config.memory.index_interval_seconds = 1;
    })
}

/// What `seed_history` stored.
pub struct Seeded {
    /// Chat-text entries, each a source of one chunk once indexed.
    pub entries: u64,
    /// Different texts among them: what is embedded, each once.
    pub texts: u64,
}

/// `turns` turns in each of `conversations` HTTP conversations, stored straight into the
/// database a minute ago: the member's words (each different), and hearth's answers (one
/// of seven, so many chunks share a text).
pub async fn seed_history(stores: &Stores, conversations: usize, turns: usize) -> Seeded {
    let at_ms = now_ms() - 60_000;
    let entry = |role, content: String| HistoryEntry {
        role,
        content,
        profile_id: "default_assistant".into(),
        inbox_id: None,
        tool_calls: Vec::new(),
        tool_call_id: None,
        created_at_ms: at_ms,
    };
    for conversation in 0..conversations {
        let key: ConversationKey = format!("http:seed-{conversation}").parse().unwrap();
        let entries: Vec<HistoryEntry> = (0..turns)
            .flat_map(|turn| {
                [
                    entry(
                        Role::User,
                        format!("Entry {turn} of conversation {conversation}: buy apples"),
                    ),
                    entry(Role::Assistant, format!("Noted, list {}.", turn % 7)),
                ]
            })
            .collect();
        stores.memory.append(&key, &entries).await.unwrap();
    }
    let entries = (conversations * turns * 2) as u64;
    Seeded {
        entries,
        texts: (conversations * turns + 7.min(turns)) as u64,
    }
}

/// The database of `database_url` opened read-only, as `hearth memory status` opens it.
pub async fn read_only(database_url: &str) -> Stores {
    hearth::storage::open_read_only(database_url)
        .await
        .unwrap_or_else(|error| panic!("{database_url} cannot be read: {error}"))
}

/// Where the indexer stands: its cursor, and the chat entries after it.
pub async fn behind(stores: &Stores) -> (i64, u64) {
    let memory = &stores.family_memory;
    let cursor = memory.cursor(CURSOR).await.unwrap();
    (cursor, memory.chats_behind(cursor).await.unwrap().entries)
}

/// Read the database beside the running hearth until the indexer has caught up with the
/// history and nothing waits for a vector of the embedding model (panics after `limit`);
/// the memory's counts then.
pub async fn wait_until_indexed(database_url: &str, limit: Duration) -> MemoryStatus {
    let started = Instant::now();
    loop {
        let stores = read_only(database_url).await;
        let (_, entries_behind) = behind(&stores).await;
        let status = (stores.family_memory.status(Some(EMBEDDING_MODEL)))
            .await
            .unwrap();
        stores.close().await;
        if entries_behind == 0 && status.waiting == 0 && status.chunks > 0 {
            return status;
        }
        assert!(
            started.elapsed() < limit,
            "not indexed within {limit:?}: {entries_behind} chat entries behind, {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every text the scripted server was asked to embed, in the order asked.
pub fn embedded_texts(llm: &ScriptedLlmServer) -> Vec<String> {
    llm.embedding_requests()
        .iter()
        .flat_map(|request| {
            let inputs = request.body["input"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            inputs
                .into_iter()
                .map(|text| text.as_str().unwrap_or_default().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The texts asked more than once, with how often.
pub fn embedded_twice(texts: &[String]) -> BTreeMap<String, usize> {
    let mut counted: BTreeMap<String, usize> = BTreeMap::new();
    for text in texts {
        *counted.entry(text.clone()).or_default() += 1;
    }
    counted.retain(|_, count| *count > 1);
    counted
}

/// `hearth memory status` of the real binary on `config`: what it printed, asserting it
/// succeeded.
pub fn memory_status(config: &Path, env: &BTreeMap<String, String>) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(config)
        .args(["memory", "status"])
        .envs(env)
        .output()
        .expect("hearth memory status runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "hearth memory status failed: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}
