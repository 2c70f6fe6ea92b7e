//! `docker/hearth.compose.yaml`, the configuration `docker/compose.yaml` gives its workers,
//! with the environment compose passes them: it passes `check-config`, and two real hearth
//! processes run on it on one PostgreSQL database, each answering and each listing both
//! workers in `/readyz`. Containers cannot run here, so the image's paths are moved into a
//! temporary folder and the HTTP API onto loopback; everything else is the file as shipped.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::hearth_app::{API_KEY, Hearth, post_with_key};
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::postgres::PostgresServer;

/// The compose configuration with the image's folders under `folder`.
fn compose_config(folder: &Path) -> PathBuf {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("docker/hearth.compose.yaml");
    let text = std::fs::read_to_string(&shipped).unwrap();
    let data = folder.join("var-lib-hearth");
    let etc = folder.join("etc-hearth");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::create_dir_all(&etc).unwrap();
    let text = text
        .replace("/var/lib/hearth", data.to_str().unwrap())
        .replace("/etc/hearth", etc.to_str().unwrap());
    let path = folder.join("hearth.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// What `docker/compose.yaml` sets for a worker, with no chat turned on; the model is the
/// scripted one and `alice` a member, since the file ships with an empty family.
fn compose_env(database_url: &str, llm_base_url: &str) -> BTreeMap<String, String> {
    [
        ("HEARTH__DATABASE_URL", database_url),
        ("OPENAI_API_KEY", "sk-compose-test"),
        ("HEARTH_API_KEY", API_KEY),
        ("HEARTH__CHANNELS__TELEGRAM__ENABLED", ""),
        ("TELEGRAM_BOT_TOKEN", ""),
        ("HEARTH__CHANNELS__MATRIX__ENABLED", ""),
        (
            "HEARTH__CHANNELS__MATRIX__USER_ID",
            "@hearth:matrix.localhost",
        ),
        ("MATRIX_PASSWORD", ""),
        ("MATRIX_STORE_PASSPHRASE", ""),
        ("HEARTH__HTTP__BIND", "127.0.0.1:0"),
        ("HEARTH__LLMS__MAIN__BASE_URL", llm_base_url),
        ("HEARTH__FAMILY__0__ID", "alice"),
        ("HEARTH__FAMILY__0__NAME", "Alice"),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value.to_string()))
    .collect()
}

async fn readyz(base_url: &str) -> Value {
    reqwest::get(format!("{base_url}/readyz"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_compose_configuration_runs_two_workers_on_one_database() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = compose_config(folder.path());
    let env = compose_env(&database_url, &llm.base_url());

    let checked = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(&config)
        .arg("check-config")
        .envs(&env)
        .output()
        .unwrap();
    assert!(
        checked.status.success(),
        "check-config refused the compose configuration:\n{}",
        String::from_utf8_lossy(&checked.stderr)
    );

    let workers = [Hearth::spawn(&config, &env), Hearth::spawn(&config, &env)];
    for (index, worker) in workers.iter().enumerate() {
        let text = format!("hello worker {index}");
        let (status, body) = post_with_key(
            &reqwest::Client::new(),
            &format!("{}/inbound", worker.base_url),
            &json!({"user_id": "alice", "text": text}),
        )
        .await;
        assert_eq!(
            (status, body["reply"].as_str()),
            (200, Some(format!("echo: {text}").as_str())),
            "{body}"
        );
    }
    // Each worker's view of the others is refreshed by its beats (every 2 s).
    for worker in &workers {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let ready = readyz(&worker.base_url).await;
            assert_eq!(ready["ready"], true, "{ready}");
            let listed = ready["components"]["workers"]["detail"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let unlisted: Vec<u32> = workers
                .iter()
                .map(Hearth::pid)
                .filter(|pid| !listed.contains(&format!("pid {pid} ")))
                .collect();
            if unlisted.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "workers {unlisted:?} are not listed by pid {}: {listed}",
                worker.pid()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
