//! `hearth doctor` run as the real binary: one line per part the configuration names, ok or
//! what to fix, a non-zero exit when anything failed, and no secret in what it prints; the
//! transcription entry sent a tenth of a second of silence, memory's embedding model a word.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};

use hearth::config::{LlmKind, MatrixConfig, McpServerConfig};

use crate::support::hearth_app::{telegram_family_config, test_env};
use crate::support::llm_server::{EmbeddingStep, ScriptedLlmServer, Step};
use crate::support::mcp::{EVERYTHING, entry_point};
use crate::support::synapse::Synapse;
use crate::support::telegram::{BOT_USERNAME, TelegramServer};
use crate::support::test_config::TestConfig;
use crate::support::transcription_server::{Step as TranscriptionStep, TranscriptionServer};

/// The bot's real token, as the fake Bot API knows it.
const TOKEN: &str = "4839574812:AAFD39kkdpWt3ywyRZergyOLMaJhac60qc";
/// A token of the right shape that the fake refuses.
const WRONG_TOKEN: &str = "4839574812:AAwrongwrongwrongwrongwrongwrongwr";

/// The test config with Telegram on `telegram`, changed by `change`, written in `folder`.
fn config_in(
    folder: &Path,
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
    change: impl FnOnce(TestConfig) -> TestConfig,
) -> std::path::PathBuf {
    let config = telegram_family_config(folder, &llm.base_url(), &telegram.api_url(), 0, 1);
    change(config).write(folder)
}

fn doctor(config: &Path, env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(config)
        .arg("doctor")
        .envs(test_env(env))
        .output()
        .expect("hearth doctor runs")
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A loopback port nobody listens on.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address").port()
}

#[test]
fn doctor_reports_a_wrong_telegram_token_and_a_down_mcp_server() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let web = McpServerConfig {
        url: Some(format!("http://127.0.0.1:{}/mcp", closed_port())),
        ..McpServerConfig::default()
    };
    let quits = ["-c".into(), "echo no config here >&2; exit 1".into()];
    let config = config_in(folder.path(), &llm, &telegram, |config| {
        config
            .with(|config| {
                config.mcp_servers.insert("web".into(), web);
            })
            .mcp_server("quits", "sh", &quits, |_| {})
    });
    let output = doctor(&config, &[("TEST_TELEGRAM_TOKEN", WRONG_TOKEN)]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "FAIL  telegram: the token in TEST_TELEGRAM_TOKEN was refused (401); get a new one \
             from @BotFather\n"
        ),
        "{stdout}"
    );
    let web = stdout
        .lines()
        .find(|line| line.starts_with("FAIL  mcp server \"web\": "))
        .unwrap_or_else(|| panic!("no failure of server web in:\n{stdout}"));
    assert!(web.contains("cannot reach the server"), "{web}");
    assert!(web.contains("check url"), "{web}");
    assert!(web.contains("mcp_servers.web"), "{web}");
    let quits = stdout
        .lines()
        .find(|line| line.starts_with("FAIL  mcp server \"quits\": "))
        .unwrap_or_else(|| panic!("no failure of server quits in:\n{stdout}"));
    assert!(quits.contains("no config here"), "its last words: {quits}");
    assert!(
        quits.contains("check command and args in mcp_servers.quits"),
        "{quits}"
    );
    // What works is still said to work.
    assert!(stdout.contains("ok    model \"main\": "), "{stdout}");
    assert!(stderr.contains("3 checks failed"), "{stderr}");
    for secret in [WRONG_TOKEN, "AAwrongwrongwrong"] {
        assert!(!stdout.contains(secret), "{stdout}");
        assert!(!stderr.contains(secret), "{stderr}");
    }
}

#[test]
fn doctor_passes_a_healthy_setup_and_creates_nothing() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    // A real MCP server too, where the test servers are installed.
    let everything = entry_point(EVERYTHING);
    let config = config_in(folder.path(), &llm, &telegram, |config| {
        if everything.is_file() {
            let args = [everything.display().to_string(), "stdio".into()];
            config.mcp_server("everything", "node", &args, |_| {})
        } else {
            config
        }
    });
    let output = doctor(&config, &[("TEST_TELEGRAM_TOKEN", TOKEN)]);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("FAIL"), "{stdout}");
    let database = folder.path().join("hearth.db");
    for line in [
        format!(
            "ok    config: {} (2 profiles, 2 family members)",
            config.display()
        ),
        format!(
            "ok    database: {} is not there yet; it will be created at the first run",
            database.display()
        ),
        format!("ok    telegram: @{BOT_USERNAME} (getMe)"),
        "-     model \"backup\": skipped (no profile uses it)".to_owned(),
        "-     matrix: skipped (disabled)".to_owned(),
        "-     calendars: none configured".to_owned(),
        "-     family scripts: skipped (no profile enables them)".to_owned(),
    ] {
        assert!(
            stdout.lines().any(|printed| printed == line),
            "{line:?} in:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("ok    model \"main\": scripted-main answered in "),
        "{stdout}"
    );
    if everything.is_file() {
        assert!(
            stdout.contains("ok    mcp server \"everything\": "),
            "{stdout}"
        );
    }
    // One tiny request for the one model in use.
    assert_eq!(llm.requests().len(), 1);
    assert!(!database.exists(), "doctor created the database");
    assert!(!stdout.contains(TOKEN) && !stderr.contains(TOKEN));
}

#[test]
fn doctor_reports_a_refused_model_key_without_showing_it() {
    const KEY: &str = "sk-test-wrong-key-0123456789";
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    llm.push(Step::Error {
        status: 401,
        retry_after: None,
        body: format!("Incorrect API key provided: {KEY}"),
    });
    let folder = tempfile::tempdir().unwrap();
    let config = config_in(folder.path(), &llm, &telegram, |config| config);
    let output = doctor(
        &config,
        &[
            ("TEST_TELEGRAM_TOKEN", TOKEN),
            ("HEARTH__LLMS__MAIN__API_KEY_ENV", "TEST_LLM_KEY"),
            ("TEST_LLM_KEY", KEY),
        ],
    );
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "FAIL  model \"main\": the key in TEST_LLM_KEY was refused (401); put a valid key \
             in TEST_LLM_KEY, or name the right variable in llms.main.api_key_env\n"
        ),
        "{stdout}"
    );
    assert_eq!(
        llm.requests()[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn doctor_reports_a_configuration_that_does_not_load() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = config_in(folder.path(), &llm, &telegram, |config| config);
    // TEST_TELEGRAM_TOKEN is not set.
    let output = doctor(&config, &[]);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "FAIL  config: {}: channels.telegram.token_env: environment variable \
             TEST_TELEGRAM_TOKEN is unset or empty\n",
            config.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("-     everything else: not checked until the configuration loads"),
        "{stdout}"
    );
    assert_eq!(llm.requests().len(), 0);
}

/// The devices of the account `token` belongs to.
async fn devices(synapse: &Synapse, token: &str) -> Vec<String> {
    let answer: serde_json::Value = reqwest::Client::new()
        .get(format!("{}/_matrix/client/v3/devices", synapse.base_url()))
        .bearer_auth(token)
        .send()
        .await
        .expect("devices asked")
        .json()
        .await
        .expect("devices read");
    answer["devices"]
        .as_array()
        .expect("a list of devices")
        .iter()
        .map(|device| device["device_id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_logs_in_to_matrix_and_leaves_no_device_behind() {
    const PASSWORD: &str = "bot-password-0123456789";
    const TEST: &str = "doctor_logs_in_to_matrix";
    let Some(synapse) = Synapse::shared_or_skip(TEST) else {
        return;
    };
    let prefix = Synapse::fresh_prefix(TEST);
    let bot = synapse
        .register(&format!("{prefix}hearth"), PASSWORD, false)
        .await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url())
        .with(|config| {
            config.channels.matrix = MatrixConfig {
                enabled: true,
                homeserver_url: Some(synapse.base_url()),
                user_id: Some(bot.user_id.clone()),
                password_env: Some("TEST_MATRIX_PASSWORD".to_owned()),
                store_path: folder.path().join("matrix").display().to_string(),
                store_passphrase_env: Some("TEST_MATRIX_STORE_PASSPHRASE".to_owned()),
                ..MatrixConfig::default()
            }
        })
        .write(folder.path());
    let run = |env: Vec<(&'static str, String)>| {
        let config = config.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut env: Vec<(&str, &str)> = env
                    .iter()
                    .map(|(name, value)| (*name, value.as_str()))
                    .collect();
                env.push(("TEST_MATRIX_STORE_PASSPHRASE", "store-passphrase-0123"));
                doctor(&config, &env)
            })
            .await
            .unwrap()
        }
    };

    // A password login is a device of its own, logged out again.
    let output = run(vec![("TEST_MATRIX_PASSWORD", PASSWORD.to_owned())]).await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|line| line.starts_with("ok    matrix: "))
        .unwrap_or_else(|| panic!("no matrix line in:\n{stdout}"));
    assert!(
        line.starts_with(&format!(
            "ok    matrix: {} on {}, device ",
            bot.user_id,
            synapse.base_url()
        )),
        "{line}"
    );
    assert!(
        line.ends_with("(a password login, one sync, logged out again)"),
        "{line}"
    );
    assert_eq!(
        devices(synapse, &bot.access_token).await,
        std::slice::from_ref(&bot.device_id)
    );
    assert!(
        !folder.path().join("matrix").exists(),
        "the store is the running bot's to make"
    );

    // An access token (without a password) is checked on its own device.
    let output = run(vec![
        (
            "HEARTH__CHANNELS__MATRIX__ACCESS_TOKEN_ENV",
            "TEST_MATRIX_TOKEN".to_owned(),
        ),
        ("TEST_MATRIX_TOKEN", bot.access_token.clone()),
    ])
    .await;
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "device {} (the access token: whoami and one sync)",
            bot.device_id
        )),
        "{stdout}"
    );
    assert!(!stdout.contains(&bot.access_token), "{stdout}");

    // A wrong password is named with the variable that holds it.
    let output = run(vec![(
        "TEST_MATRIX_PASSWORD",
        "not-the-password-42".to_owned(),
    )])
    .await;
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    let line = stdout
        .lines()
        .find(|line| line.starts_with("FAIL  matrix: "))
        .unwrap_or_else(|| panic!("no matrix failure in:\n{stdout}"));
    assert!(line.contains("the homeserver refused the login"), "{line}");
    assert!(
        line.ends_with("check channels.matrix.user_id and the password in TEST_MATRIX_PASSWORD"),
        "{line}"
    );
    assert!(!stdout.contains("not-the-password-42") && !stderr.contains("not-the-password-42"));
}

#[test]
fn doctor_sends_the_transcription_entry_silence_and_reports_a_refused_key() {
    const KEY: &str = "sk-test-whisper-key-0123456789";
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let whisper = TranscriptionServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = config_in(folder.path(), &llm, &telegram, |config| {
        config.with(|config| {
            // The test config's `main`, on the transcription server as `whisper-1`.
            let mut entry = config.llms["main"].clone();
            entry.kind = LlmKind::Transcription;
            entry.base_url = whisper.base_url();
            entry.model = "whisper-1".into();
            entry.api_key_env = Some("TEST_WHISPER_KEY".into());
            config.llms.insert("whisper".into(), entry);
        })
    });
    let env = [("TEST_TELEGRAM_TOKEN", TOKEN), ("TEST_WHISPER_KEY", KEY)];

    // A server refusing a tenth of a second of silence still answered and took the key.
    whisper.push(TranscriptionStep::Error {
        status: 400,
        retry_after: None,
    });
    let output = doctor(&config, &env);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("ok    model \"whisper\": whisper-1 answered in"),
        "{stdout}"
    );
    let sent = &whisper.received()[0];
    assert_eq!(
        sent.authorization.as_deref(),
        Some(&*format!("Bearer {KEY}")),
        "the transcription entry's own key is sent"
    );
    assert_eq!(sent.file_start, b"RIFF");
    assert_eq!(sent.content_type.as_deref(), Some("audio/wav"));
    assert_eq!(sent.file_size, 44 + 3_200);

    whisper.push(TranscriptionStep::Error {
        status: 401,
        retry_after: None,
    });
    let output = doctor(&config, &env);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "FAIL  model \"whisper\": the key in TEST_WHISPER_KEY was refused (401); put a \
             valid key in TEST_WHISPER_KEY, or name the right variable in \
             llms.whisper.api_key_env\n"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );
}

#[test]
fn doctor_embeds_a_word_on_memory_s_embedding_model_and_reports_a_refused_key() {
    const KEY: &str = "sk-test-embed-key-0123456789";
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let folder = tempfile::tempdir().unwrap();
    let config = config_in(folder.path(), &llm, &telegram, |config| {
        config.with(|config| {
            // The test config's `main`, as embedding models on the same fake server; memory
            // names one of them.
            for name in ["vectors", "other_vectors"] {
                let mut entry = config.llms["main"].clone();
                entry.kind = LlmKind::Embedding;
                entry.model = "nomic-embed-text".into();
                entry.api_key_env = Some("TEST_EMBED_KEY".into());
                config.llms.insert(name.into(), entry);
            }
            config.memory.embedding_model = Some("vectors".into());
        })
    });
    let env = [("TEST_TELEGRAM_TOKEN", TOKEN), ("TEST_EMBED_KEY", KEY)];

    let output = doctor(&config, &env);
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "ok    model \"vectors\": nomic-embed-text answered a vector of 64 numbers in"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "-     model \"other_vectors\": skipped (memory.embedding_model names another)"
        ),
        "{stdout}"
    );
    let sent = llm.embedding_requests();
    assert_eq!(sent.len(), 1, "only memory's model is asked");
    assert_eq!(sent[0].body["input"], serde_json::json!(["ok"]));
    assert_eq!(
        sent[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );

    llm.push_embedding(EmbeddingStep::Error {
        status: 401,
        retry_after: None,
    });
    let output = doctor(&config, &env);
    let (stdout, stderr) = text(&output);
    assert!(!output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "FAIL  model \"vectors\": the key in TEST_EMBED_KEY was refused (401); put a valid \
             key in TEST_EMBED_KEY, or name the right variable in llms.vectors.api_key_env\n"
        ),
        "{stdout}"
    );
    assert!(
        !stdout.contains(KEY) && !stderr.contains(KEY),
        "{stdout}\n{stderr}"
    );

    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(&config)
        .arg("check-config")
        .envs(test_env(&env))
        .output()
        .expect("hearth check-config runs");
    let (stdout, stderr) = text(&output);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("memory: embedded by llms.vectors (nomic-embed-text)\n"),
        "{stdout}"
    );
}
