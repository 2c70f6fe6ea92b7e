//! The README's run command on a machine with no model key: the real `hearth` binary with the
//! shipped example configuration and `run --local-model`, without `OPENAI_API_KEY`, answering
//! over HTTP through the small local model (a real llama.cpp serving SmolLM2-135M, installed by
//! `scripts/install-local-llm.sh`); the model's server dying with a `kill -9` of hearth; and
//! the errors that say what to do when the model is not installed or a key is missing.
//!
//! The model is tiny, so nothing is asserted about what it says beyond a real, non-empty
//! answer. Skipped (with a note) when the model is not installed, unless
//! `HEARTH_REQUIRE_REAL_SERVERS=1`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use hearth::config::{LOCAL_MODEL_LLM, LoadOptions, LocalModelUse, load_with_env};
use hearth::tools::LOCAL_TOOL_NAMES;
use serde_json::json;

use crate::support::hearth_app::{API_KEY, Hearth, RunOptions, wait_for_readyz};
use crate::support::real_llm::{local_model_install, skip_without_local_model};

/// The example's model key: the point is that nobody needs it.
const MODEL_KEY: &str = "OPENAI_API_KEY";
/// Loading the model takes a second or two on an idle machine; the suite shares the cores.
const LISTEN_WITHIN: Duration = Duration::from_secs(150);
/// A turn reads the example profile's tools at the model's CPU speed.
const ANSWER_WITHIN: Duration = Duration::from_secs(300);

fn example_config() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("config/hearth.example.yaml")
}

/// The README's environment, plus a database of the test's own and a free port.
fn readme_env(folder: &Path) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("HEARTH_API_KEY".to_owned(), API_KEY.to_owned()),
        (
            "HEARTH__DATABASE_URL".to_owned(),
            format!("sqlite://{}", folder.join("hearth.db").display()),
        ),
        ("HEARTH__HTTP__BIND".to_owned(), "127.0.0.1:0".to_owned()),
        (
            "HEARTH_LOCAL_LLM_DIR".to_owned(),
            local_model_install().dir().display().to_string(),
        ),
    ])
}

/// `hearth run --local-model` on the example configuration, with no model key.
fn spawn_on_local_model(folder: &Path) -> Hearth {
    Hearth::spawn_run(
        Path::new(env!("CARGO_BIN_EXE_hearth")),
        &example_config(),
        &readme_env(folder),
        &RunOptions {
            args: &["--local-model"],
            unset: &[MODEL_KEY],
            listen_within: Some(LISTEN_WITHIN),
        },
    )
}

#[tokio::test]
async fn a_fresh_run_with_no_key_answers_through_the_local_model() {
    if skip_without_local_model("a_fresh_run_with_no_key_answers_through_the_local_model").is_none()
    {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let hearth = spawn_on_local_model(folder.path());
    wait_for_readyz(&reqwest::Client::new(), &hearth.base_url).await;

    let (status, body) = hearth
        .post_json(
            "/inbound",
            json!({"user_id": "alice", "text": "Hello! Please say hi to my family."}),
        )
        .await;
    assert!(
        status == 200 || status == 202,
        "POST /inbound answered {status}: {body}"
    );
    // The HTTP wait may end before a slow machine's turn does; the record has the answer.
    let record = if body["status"] == "answered" {
        body
    } else {
        let id = body["id"].as_str().expect("an accepted message has an id");
        hearth
            .record_when(id, "alice", "answered", ANSWER_WITHIN)
            .await
    };
    let reply = record["reply"].as_str().unwrap_or_default();
    assert!(
        !reply.trim().is_empty(),
        "an empty reply: {record}\nhearth's log:\n{}",
        hearth.log()
    );
    assert!(
        !reply.contains("can't reach my language model"),
        "{reply}\nhearth's log:\n{}",
        hearth.log()
    );
    let log = hearth.log();
    assert!(
        log.contains("very small local model") && log.contains("OPENAI_API_KEY"),
        "start-up never said that a very small model answers and how to use a real one:\n{log}"
    );
}

#[tokio::test]
async fn killing_hearth_leaves_no_local_model_behind() {
    if skip_without_local_model("killing_hearth_leaves_no_local_model_behind").is_none() {
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let hearth = spawn_on_local_model(folder.path());
    let children = children_of(hearth.pid());
    assert!(
        !children.is_empty(),
        "hearth on the local model runs no child process; its log:\n{}",
        hearth.log()
    );

    hearth.kill();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let alive: Vec<u32> = children
            .iter()
            .copied()
            .filter(|pid| is_alive(*pid))
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the local model's processes {alive:?} outlived hearth's kill -9 by 15 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[test]
fn a_missing_local_model_names_the_install_script() {
    let folder = tempfile::tempdir().unwrap();
    let nowhere = folder.path().join("not-installed");
    let mut env = readme_env(folder.path());
    env.insert(
        "HEARTH_LOCAL_LLM_DIR".to_owned(),
        nowhere.display().to_string(),
    );
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(example_config())
        .args(["run", "--local-model"])
        .envs(&env)
        .env_remove(MODEL_KEY)
        .output()
        .expect("hearth runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    let launcher = nowhere.join("bin").join("hearth-local-llm");
    assert!(
        stderr.contains("the local model is not installed")
            && stderr.contains(&launcher.display().to_string())
            && stderr.contains("bash scripts/install-local-llm.sh"),
        "{stderr}"
    );
}

#[test]
fn a_missing_model_key_says_that_local_model_needs_none() {
    let folder = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(example_config())
        .arg("run")
        .envs(&readme_env(folder.path()))
        .env_remove(MODEL_KEY)
        .output()
        .expect("hearth runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains("llms.main.api_key_env: environment variable OPENAI_API_KEY is unset")
            && stderr.contains("--local-model"),
        "{stderr}"
    );
}

#[test]
fn local_model_points_every_profile_at_it_and_needs_no_model_key() {
    let env = BTreeMap::from([
        ("HEARTH_API_KEY".to_owned(), API_KEY.to_owned()),
        ("HOME".to_owned(), "/home/newcomer".to_owned()),
    ]);
    let options = LoadOptions {
        known_local_tools: LOCAL_TOOL_NAMES,
        local_model: true,
    };
    let loaded = load_with_env(&example_config(), &env, &options)
        .unwrap_or_else(|error| panic!("the example does not load with --local-model: {error}"));
    assert_eq!(
        loaded.local_model,
        Some(LocalModelUse {
            install_dir: PathBuf::from("/home/newcomer/.cache/hearth/local-llm"),
            asked: true,
        })
    );
    for profile in &loaded.profiles {
        assert_eq!(
            profile.processing.llm_model, LOCAL_MODEL_LLM,
            "{}",
            profile.id
        );
        assert_eq!(
            profile.processing.llm_fallback_model, None,
            "{}",
            profile.id
        );
    }
    assert!(!loaded.secrets.contains_key(MODEL_KEY));

    // Without the flag, a configuration naming no model answers with it too.
    let folder = tempfile::tempdir().unwrap();
    let config = folder.path().join("hearth.yaml");
    std::fs::write(
        &config,
        "http: { auth_enabled: false }\nfamily: [{ id: alice }]\n",
    )
    .unwrap();
    let env = BTreeMap::from([("HEARTH_LOCAL_LLM_DIR".to_owned(), "/opt/llm".to_owned())]);
    let options = LoadOptions {
        local_model: false,
        ..options
    };
    let loaded = load_with_env(&config, &env, &options)
        .unwrap_or_else(|error| panic!("a config without llms does not load: {error}"));
    assert_eq!(
        loaded.local_model,
        Some(LocalModelUse {
            install_dir: PathBuf::from("/opt/llm"),
            asked: false,
        })
    );
    assert_eq!(loaded.profiles[0].processing.llm_model, LOCAL_MODEL_LLM);
}

/// The processes whose parent is `pid` (Linux's `/proc`).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|candidate| parent_of(*candidate) == Some(pid))
        .collect()
}

/// The parent of `pid`, from `/proc/<pid>/stat` (its fourth field, after the name in parens).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Alive: the process exists and is no zombie waiting to be reaped.
fn is_alive(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|end| stat[end + 1..].split_whitespace().next());
    !matches!(state, Some("Z" | "X"))
}
