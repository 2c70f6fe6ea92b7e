//! Two real hearth workers on one PostgreSQL database and a history stored straight into
//! it: only the holder of `memory:indexer` indexes, so every entry is indexed once and no
//! text is embedded twice (the scripted server counts every text it was sent), one worker
//! says it took the indexing, and `hearth memory status` names it.

use std::time::Duration;

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::memory_indexing::{
    embedded_texts, embedded_twice, memory_status, seed_history, wait_until_indexed, with_embedding,
};
use crate::support::postgres::PostgresServer;
use crate::support::test_config::TestConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_workers_index_memory_once_between_them() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = with_embedding(TestConfig::new(folder.path(), &llm.base_url()))
        .database(&database_url)
        .write(folder.path());
    let env = test_env(&[]);
    let workers = [Hearth::spawn(&config, &env), Hearth::spawn(&config, &env)];
    for worker in &workers {
        worker.wait_until_ready().await;
    }

    // Stored while both run: each looks every second, one indexes.
    let stores = hearth::storage::open(&database_url, 2).await.unwrap();
    let seeded = seed_history(&stores, 4, 150).await;
    stores.close().await;
    let status = wait_until_indexed(&database_url, Duration::from_secs(120)).await;
    assert_eq!(
        (status.sources, status.chunks, status.vectors),
        (seeded.entries, seeded.entries, seeded.texts)
    );
    let texts = embedded_texts(&llm);
    assert!(
        embedded_twice(&texts).is_empty(),
        "embedded twice: {:?}",
        embedded_twice(&texts)
    );
    assert_eq!(texts.len() as u64, seeded.texts);
    let indexing: Vec<u32> = workers
        .iter()
        .filter(|worker| {
            worker
                .log()
                .contains("this worker now indexes family memory")
        })
        .map(Hearth::pid)
        .collect();
    assert_eq!(
        indexing.len(),
        1,
        "workers that took the indexing: {indexing:?}"
    );

    let printed = memory_status(&config, &env);
    assert!(
        printed.contains("indexing worker: ") && printed.contains("(holds memory:indexer)"),
        "{printed}"
    );
    assert!(
        printed.contains(": caught up, no chat entry after it"),
        "{printed}"
    );
}
