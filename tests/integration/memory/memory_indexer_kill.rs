//! The real binary killed with kill -9 while it indexes a long history (stored straight
//! into its database before it starts), at a random point of it (`support::seed`: the
//! first time its cursor is past a message chosen among the first two thirds), then
//! started again: every chat entry ends up indexed exactly once (one source and one chunk
//! each, none missing, none read again after the restart), and no text is embedded twice
//! (the scripted server counts every text it was sent); `hearth memory status` then says
//! so.

use std::time::{Duration, Instant};

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::memory_indexing::{
    EMBEDDING_LLM, EMBEDDING_MODEL, behind, embedded_texts, embedded_twice, memory_status,
    read_only, seed_history, wait_until_indexed, with_embedding,
};
use crate::support::seed::seeded;
use crate::support::test_config::TestConfig;

/// Chat entries still behind when the kill comes, at least: several batches, so the kill
/// lands while the history is read, before any text is embedded.
const BEHIND_AT_KILL: u64 = 1_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_while_indexing_leaves_every_entry_indexed_once_and_no_text_embedded_twice() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config =
        with_embedding(TestConfig::new(folder.path(), &llm.base_url())).write(folder.path());
    let database_url = format!("sqlite://{}", folder.path().join("hearth.db").display());
    let stores = hearth::storage::open(&database_url, 2).await.unwrap();
    let history = seed_history(&stores, 20, 150).await;
    stores.close().await;
    assert_eq!(history.entries, 6_000);

    let mut rng = seeded("memory_indexer_kill");
    let kill_past = rng.i64(1..=(history.entries as i64 * 2 / 3));
    let env = test_env(&[]);
    let first = Hearth::spawn(&config, &env);
    let reader = read_only(&database_url).await;
    let started = Instant::now();
    let (cursor, entries_behind) = loop {
        let (cursor, entries_behind) = behind(&reader).await;
        if cursor >= kill_past {
            break (cursor, entries_behind);
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the indexer never began"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    assert!(
        entries_behind >= BEHIND_AT_KILL,
        "the history was read too fast to kill the indexer within it ({entries_behind} behind)"
    );
    let stopped = first.kill();
    eprintln!(
        "killed with the cursor at {cursor} (past {kill_past}), {entries_behind} chat entries behind"
    );
    let status = reader.family_memory.status(None).await.unwrap();
    reader.close().await;
    assert!(status.sources < history.entries, "{status:?}");
    assert!(
        embedded_texts(&llm).is_empty(),
        "killed while the history was read, before any text was embedded"
    );

    let indexed_before_kill = status.sources;
    let second = stopped.start().await;
    let status = wait_until_indexed(&database_url, Duration::from_secs(180)).await;
    assert_eq!(
        (status.sources, status.chunks, status.vectors),
        (history.entries, history.entries, history.texts),
        "each entry indexed once"
    );
    // What was indexed before the kill was not read again: the cursor moved with it.
    let (_, metrics) = second.get("/metrics").await;
    let indexed_after = format!(
        "hearth_memory_chunks_indexed_total{{kind=\"chat\"}} {}\n",
        history.entries - indexed_before_kill
    );
    assert!(
        metrics.contains(&indexed_after),
        "{indexed_after:?} not in\n{metrics}"
    );
    let texts = embedded_texts(&llm);
    assert!(
        embedded_twice(&texts).is_empty(),
        "embedded twice: {:?}",
        embedded_twice(&texts)
    );
    assert_eq!(texts.len() as u64, history.texts);

    let printed = memory_status(&config, &env);
    for line in [
        format!("  chat:     {0} sources, {0} chunks", history.entries),
        format!(
            "vectors of {EMBEDDING_MODEL} ({EMBEDDING_LLM}): {}; chunks waiting for one: 0",
            history.texts
        ),
    ] {
        assert!(printed.contains(&line), "{line:?} not in:\n{printed}");
    }
    assert!(
        printed.contains(": caught up, no chat entry after it"),
        "{printed}"
    );
    drop(second);
}
