//! Start hearth for a test: a config file written typed (`TestConfig`) to a temporary
//! folder, pointing at a scripted LLM server, and either the whole app in this process or
//! the real `hearth` binary as a child process; one handle, `Hearth`, drives both.

// The integration tests and the benchmark each use a different part of this.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use hearth::app::{self, RunningApp, StartOptions};
use hearth::config::{self, LoadOptions, LoadedConfig, ServiceProfileConfig, TelegramConfig};
use hearth::tools::LOCAL_TOOL_NAMES;

use super::test_config::{TestConfig, telegram_member};

pub const API_KEY: &str = "test-api-key-0123456789";
/// The plugin API's key (`/api/plugins/llm/*`).
pub const PLUGIN_API_KEY: &str = "test-plugin-key-0123456789";
/// The admin key (registering plugins; metrics with `metrics_auth`).
pub const ADMIN_API_KEY: &str = "test-admin-key-0123456789";

/// The test config in `folder` with `chats` more family members, `m0`..., each with the
/// Telegram user id `first_user + n` (and so a private chat of that id), and Telegram on
/// `api_url` with the token in `TEST_TELEGRAM_TOKEN`: many chats for load.
pub fn telegram_family_config(
    folder: &Path,
    llm_base_url: &str,
    api_url: &str,
    chats: i64,
    first_user: i64,
) -> TestConfig {
    let mut config = TestConfig::new(folder, llm_base_url);
    let many = (0..chats).map(|chat| telegram_member(&format!("m{chat}"), "", first_user + chat));
    config.config.family.splice(0..0, many);
    config.config.channels.telegram = TelegramConfig {
        enabled: true,
        token_env: Some("TEST_TELEGRAM_TOKEN".to_owned()),
        api_url: api_url.to_owned(),
        poll_timeout_seconds: 1,
        ..TelegramConfig::default()
    };
    config
}

/// `telegram_family_config`, written in `folder`.
pub fn write_telegram_family_config(
    folder: &Path,
    llm_base_url: &str,
    api_url: &str,
    chats: i64,
    first_user: i64,
) -> PathBuf {
    telegram_family_config(folder, llm_base_url, api_url, chats, first_user).write(folder)
}

/// The environment a test hearth runs with; `extra` adds `HEARTH__...` overrides.
pub fn test_env(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut env: BTreeMap<String, String> = BTreeMap::from([
        ("TEST_HEARTH_API_KEY".to_string(), API_KEY.to_string()),
        (
            "TEST_HEARTH_PLUGIN_KEY".to_string(),
            PLUGIN_API_KEY.to_string(),
        ),
        (
            "TEST_HEARTH_ADMIN_KEY".to_string(),
            ADMIN_API_KEY.to_string(),
        ),
    ]);
    for (key, value) in extra {
        env.insert(key.to_string(), value.to_string());
    }
    env
}

pub fn load(path: &Path, env: &BTreeMap<String, String>) -> LoadedConfig {
    config::load_with_env(
        path,
        env,
        &LoadOptions {
            known_local_tools: LOCAL_TOOL_NAMES,
            local_model: false,
        },
    )
    .unwrap_or_else(|error| panic!("test config does not load: {error}"))
}

/// hearth started for a test, either way: the whole app inside the test's actix System
/// (`start*`) or the real `hearth` binary as a child process (`spawn*`). One handle drives
/// both: ask, send, confirm, wait for a message's record, stop, kill -9 (the binary) and
/// start again on the same configuration and database.
pub struct Hearth {
    pub base_url: String,
    pub client: reqwest::Client,
    /// Its configuration file and environment (to start it again, and for the CLI beside it).
    config: PathBuf,
    env: BTreeMap<String, String>,
    /// The temporary folder of its configuration and database, when the handle owns it.
    folder: Option<tempfile::TempDir>,
    running: Running,
}

/// Where a `Hearth` runs.
enum Running {
    InProcess(Box<RunningApp>),
    Binary {
        process: ChildProcess,
        binary: PathBuf,
        options: OwnedRunOptions,
    },
}

/// How a test runs `hearth run` beyond its config and environment.
#[derive(Default)]
pub struct RunOptions<'a> {
    /// Arguments after `run` (`--local-model`).
    pub args: &'a [&'a str],
    /// Variables of the test's own environment hearth must not see.
    pub unset: &'a [&'a str],
    /// How long hearth may take until it listens; 30 s when `None`.
    pub listen_within: Option<Duration>,
}

/// `RunOptions` kept to start the binary again.
#[derive(Clone, Default)]
struct OwnedRunOptions {
    args: Vec<String>,
    unset: Vec<String>,
    listen_within: Option<Duration>,
}

impl From<&RunOptions<'_>> for OwnedRunOptions {
    fn from(options: &RunOptions<'_>) -> Self {
        OwnedRunOptions {
            args: options.args.iter().map(|arg| arg.to_string()).collect(),
            unset: options.unset.iter().map(|name| name.to_string()).collect(),
            listen_within: options.listen_within,
        }
    }
}

/// The `hearth run` child process and what it logged; killed on drop.
struct ChildProcess {
    child: Child,
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `Hearth` that has stopped (or was killed): what it takes to start it again the same
/// way, on the same configuration, environment and database.
pub struct Stopped {
    config: PathBuf,
    env: BTreeMap<String, String>,
    folder: Option<tempfile::TempDir>,
    /// The binary and its options; `None` for one that ran in process.
    binary: Option<(PathBuf, OwnedRunOptions)>,
}

impl Stopped {
    /// Start it again as it ran before; in process, wait until it is ready.
    pub async fn start(self) -> Hearth {
        match self.binary {
            Some((binary, options)) => {
                let mut hearth = Hearth::spawn_owned(&binary, &self.config, &self.env, options);
                hearth.folder = self.folder;
                hearth
            }
            None => {
                let folder = self.folder.expect("an in-process hearth owns its folder");
                let hearth = Hearth::start_unready_on(folder, &self.config, self.env, None).await;
                hearth.wait_until_ready().await;
                hearth
            }
        }
    }

    /// The folder of its configuration and database (to start from it with other options).
    pub fn folder(self) -> tempfile::TempDir {
        self.folder
            .expect("this hearth was spawned on a folder the test owns")
    }
}

impl Hearth {
    /// In process, on the test config with `overrides` (`HEARTH__...`).
    pub async fn start(llm_base_url: &str, overrides: &[(&str, &str)]) -> Hearth {
        let folder = tempfile::tempdir().expect("temporary folder");
        Self::start_in(folder, llm_base_url, overrides).await
    }

    /// In process, with more service profiles after the test config's.
    pub async fn start_with_profiles(
        llm_base_url: &str,
        profiles: &[ServiceProfileConfig],
        overrides: &[(&str, &str)],
    ) -> Hearth {
        Self::start_with(llm_base_url, |config| config.profiles(profiles), overrides).await
    }

    /// In process, with the test config changed by `change`.
    pub async fn start_with(
        llm_base_url: &str,
        change: impl FnOnce(TestConfig) -> TestConfig,
        overrides: &[(&str, &str)],
    ) -> Hearth {
        let folder = tempfile::tempdir().expect("temporary folder");
        let path = change(TestConfig::new(folder.path(), llm_base_url)).write(folder.path());
        Self::start_from(folder, &path, overrides).await
    }

    /// In process, on an existing folder (and so an existing database).
    pub async fn start_in(
        folder: tempfile::TempDir,
        llm_base_url: &str,
        overrides: &[(&str, &str)],
    ) -> Hearth {
        let path = TestConfig::new(folder.path(), llm_base_url).write(folder.path());
        Self::start_from(folder, &path, overrides).await
    }

    /// In process, from a config file already written in `folder`.
    pub async fn start_from(
        folder: tempfile::TempDir,
        path: &Path,
        overrides: &[(&str, &str)],
    ) -> Hearth {
        let hearth = Self::start_unready_on(folder, path, test_env(overrides), None).await;
        hearth.wait_until_ready().await;
        hearth
    }

    /// `start_from` on `stores` instead of the database the config names (a test wrapping
    /// a port to stop a write at a chosen point).
    pub async fn start_on_stores(
        folder: tempfile::TempDir,
        path: &Path,
        overrides: &[(&str, &str)],
        stores: hearth::storage::Stores,
    ) -> Hearth {
        let hearth = Self::start_unready_on(folder, path, test_env(overrides), Some(stores)).await;
        hearth.wait_until_ready().await;
        hearth
    }

    /// In process on the test config, without waiting for `/readyz` (a component that
    /// cannot become ready).
    pub async fn start_unready(llm_base_url: &str, overrides: &[(&str, &str)]) -> Hearth {
        let folder = tempfile::tempdir().expect("temporary folder");
        let path = TestConfig::new(folder.path(), llm_base_url).write(folder.path());
        Self::start_unready_on(folder, &path, test_env(overrides), None).await
    }

    async fn start_unready_on(
        folder: tempfile::TempDir,
        path: &Path,
        env: BTreeMap<String, String>,
        stores: Option<hearth::storage::Stores>,
    ) -> Hearth {
        let loaded = load(path, &env);
        let running = app::start(
            &loaded,
            StartOptions {
                serve: true,
                extra_channels: Default::default(),
                stores,
            },
        )
        .await
        .unwrap_or_else(|error| panic!("hearth does not start: {error}"));
        let address = running.http.as_ref().expect("http is enabled").1;
        Hearth {
            base_url: format!("http://{address}"),
            client: reqwest::Client::new(),
            config: path.to_path_buf(),
            env,
            folder: Some(folder),
            running: Running::InProcess(Box::new(running)),
        }
    }

    /// The real binary: `hearth --config <config> run`, once its HTTP API listens.
    pub fn spawn(config: &Path, env: &BTreeMap<String, String>) -> Hearth {
        Hearth::spawn_binary(Path::new(env!("CARGO_BIN_EXE_hearth")), config, env)
    }

    /// The same with another build of hearth (the benchmark's HTTP-only one).
    pub fn spawn_binary(binary: &Path, config: &Path, env: &BTreeMap<String, String>) -> Hearth {
        Hearth::spawn_run(binary, config, env, &RunOptions::default())
    }

    /// `hearth --config <config> run` with `options`, once its HTTP API listens.
    pub fn spawn_run(
        binary: &Path,
        config: &Path,
        env: &BTreeMap<String, String>,
        options: &RunOptions,
    ) -> Hearth {
        Hearth::spawn_owned(binary, config, env, options.into())
    }

    fn spawn_owned(
        binary: &Path,
        config: &Path,
        env: &BTreeMap<String, String>,
        options: OwnedRunOptions,
    ) -> Hearth {
        let (process, address) = start_binary(binary, config, env, &options);
        Hearth {
            base_url: format!("http://{address}"),
            client: reqwest::Client::new(),
            config: config.to_path_buf(),
            env: env.clone(),
            folder: None,
            running: Running::Binary {
                process,
                binary: binary.to_path_buf(),
                options,
            },
        }
    }

    /// The app's insides (stores, actors); only in process.
    pub fn app(&self) -> &RunningApp {
        match &self.running {
            Running::InProcess(app) => app,
            Running::Binary { .. } => panic!("the real binary's insides are not reachable"),
        }
    }

    /// The folder of its configuration (and database, unless the config puts it elsewhere).
    pub fn folder(&self) -> &Path {
        match &self.folder {
            Some(folder) => folder.path(),
            None => self
                .config
                .parent()
                .expect("the config file is in a folder"),
        }
    }

    /// Poll `GET /readyz` until it answers 200 (the queue has resumed its inbox).
    pub async fn wait_until_ready(&self) {
        wait_for_readyz(&self.client, &self.base_url).await;
    }

    /// `POST /inbound` with the test API key; returns status and JSON body.
    pub async fn send(&self, body: serde_json::Value) -> (u16, serde_json::Value) {
        self.post_json("/inbound", body).await
    }

    /// Send `text` as `user` and return the reply text, asserting a 200.
    pub async fn ask(&self, user: &str, text: &str) -> String {
        let (status, body) = self
            .send(serde_json::json!({"user_id": user, "text": text}))
            .await;
        assert_eq!(status, 200, "POST /inbound answered {status}: {body}");
        body["reply"].as_str().expect("reply text").to_string()
    }

    /// POST `body` to `path` with the test API key; returns status and JSON body.
    pub async fn post_json(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        post_with_key(&self.client, &format!("{}{path}", self.base_url), &body).await
    }

    pub async fn get(&self, path: &str) -> (u16, String) {
        get_with_key(&self.client, &format!("{}{path}", self.base_url)).await
    }

    /// `GET /inbound/{id}` as `member` until the message's status is `status` (within
    /// `limit`); its record.
    pub async fn record_when(
        &self,
        id: &str,
        member: &str,
        status: &str,
        limit: Duration,
    ) -> serde_json::Value {
        record_when(&self.client, &self.base_url, id, member, status, limit).await
    }

    /// A new API token of `member` (what `hearth token create` makes): from the app's
    /// stores in process, by the real CLI beside the binary.
    pub async fn member_token(&self, member: &str) -> String {
        match &self.running {
            Running::InProcess(running) => {
                let identity =
                    hearth::identity::Identity::new(running.stores.web_access.clone(), 30);
                let member = member.parse().expect("a member id");
                identity
                    .create_token(&member, None, hearth::ports::now_ms())
                    .await
                    .expect("a member token is stored")
                    .0
            }
            Running::Binary { .. } => member_token_by_cli(&self.config, &self.env, member),
        }
    }

    /// `POST /inbound/confirm` with the token of the member `body` names (`user_id`): a
    /// member answers their confirmation with their own token, never the shared key.
    pub async fn confirm(&self, body: serde_json::Value) -> (u16, serde_json::Value) {
        let member = body["user_id"].as_str().expect("the answer names user_id");
        let token = self.member_token(member).await;
        let url = format!("{}/inbound/confirm", self.base_url);
        post_as(&self.client, &url, &token, &body).await
    }

    /// Stop it the way a service manager does (in process: every actor stopped; the
    /// binary: SIGTERM, then waited for, killed after 30 s).
    pub async fn stop(self) -> Stopped {
        let (running, stopped) = self.into_stopped();
        match running {
            Running::InProcess(app) => app.stop().await,
            Running::Binary { mut process, .. } => {
                terminate(&process.child);
                let deadline = std::time::Instant::now() + Duration::from_secs(30);
                while process.child.try_wait().ok().flatten().is_none()
                    && std::time::Instant::now() < deadline
                {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        stopped
    }

    /// kill -9: the hardest stop, nothing flushed (the real binary only).
    pub fn kill(self) -> Stopped {
        let (running, stopped) = self.into_stopped();
        match running {
            Running::Binary { process, .. } => drop(process),
            Running::InProcess(_) => panic!("kill -9 needs the real binary (Hearth::spawn)"),
        }
        stopped
    }

    /// `stop`, then start again the same way on the same configuration and database.
    pub async fn restart(self) -> Hearth {
        self.stop().await.start().await
    }

    fn into_stopped(self) -> (Running, Stopped) {
        let binary = match &self.running {
            Running::InProcess(_) => None,
            Running::Binary {
                binary, options, ..
            } => Some((binary.clone(), options.clone())),
        };
        let stopped = Stopped {
            config: self.config,
            env: self.env,
            folder: self.folder,
            binary,
        };
        (self.running, stopped)
    }

    fn process(&self) -> &ChildProcess {
        match &self.running {
            Running::Binary { process, .. } => process,
            Running::InProcess(_) => panic!("only the real binary has a process"),
        }
    }

    /// What the binary has logged so far.
    pub fn log(&self) -> String {
        self.process().log.lock().unwrap().clone()
    }

    pub fn pid(&self) -> u32 {
        self.process().child.id()
    }

    /// SIGTERM to the binary: the stop a service manager asks for; see `exited` for its end.
    pub fn terminate(&self) {
        terminate(&self.process().child);
    }

    /// Whether the binary has exited, and how (reaping it).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        match &mut self.running {
            Running::Binary { process, .. } => process
                .child
                .try_wait()
                .expect("the hearth process can be waited for"),
            Running::InProcess(_) => panic!("only the real binary has a process"),
        }
    }
}

/// SIGTERM to `child` (not reaped here).
fn terminate(child: &Child) {
    let pid = i32::try_from(child.id()).expect("a pid");
    // SAFETY: kill(2) takes plain integers; the child is not reaped before it is waited for.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
}

/// Start `binary --config <config> run` with `options`; the process and the address it
/// reported once its HTTP API listens.
fn start_binary(
    binary: &Path,
    config: &Path,
    env: &BTreeMap<String, String>,
    options: &OwnedRunOptions,
) -> (ChildProcess, String) {
    let mut command = Command::new(binary);
    command
        .arg("--config")
        .arg(config)
        .arg("run")
        .args(&options.args)
        // The address line is an info log of hearth::app; keep it whatever else is filtered.
        .env("HEARTH_LOG", "info")
        .envs(env);
    for variable in &options.unset {
        command.env_remove(variable);
    }
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("hearth binary starts");
    let stderr = child.stderr.take().expect("stderr is piped");
    let (sender, receiver) = mpsc::channel();
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let written = log.clone();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            {
                let mut written = written.lock().unwrap();
                written.push_str(&line);
                written.push('\n');
            }
            if !sent && let Some(at) = line.find("address=") {
                let address = line[at + "address=".len()..]
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string();
                sent = sender.send(address).is_ok();
            }
            if std::env::var_os("HEARTH_TEST_VERBOSE").is_some() {
                eprintln!("[hearth] {line}");
            }
        }
    });
    let process = ChildProcess { child, log };
    let listen_within = options.listen_within.unwrap_or(Duration::from_secs(30));
    match receiver.recv_timeout(listen_within) {
        Ok(address) => (process, address),
        Err(_) => {
            let log = process.log.lock().unwrap().clone();
            drop(process);
            panic!(
                "hearth did not report its http address within {listen_within:?}; its log:\n{log}"
            )
        }
    }
}

/// POST `body` to `url` with the test API key: the status and the JSON body (null when the
/// body is not JSON).
pub async fn post_with_key(
    client: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    post_as(client, url, API_KEY, body).await
}

/// POST `body` to `url` with `key` (a member's token): the status and the JSON body.
pub async fn post_as(
    client: &reqwest::Client,
    url: &str,
    key: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let response = client
        .post(url)
        .header("X-API-Key", key)
        .json(body)
        .send()
        .await
        .unwrap_or_else(|error| panic!("POST {url} answers: {error}"));
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(serde_json::Value::Null);
    (status, body)
}

/// `hearth token create --user member` of the real binary on `config`: the token printed.
/// It works beside the hearth running on that database.
pub fn member_token_by_cli(config: &Path, env: &BTreeMap<String, String>, member: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(config)
        .args(["token", "create", "--user", member])
        .envs(env)
        .output()
        .expect("hearth token create runs");
    assert!(
        output.status.success(),
        "hearth token create failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("a token is text")
        .trim()
        .to_string()
}

/// GET `url` with the test API key: the status and the body's text.
async fn get_with_key(client: &reqwest::Client, url: &str) -> (u16, String) {
    let response = client
        .get(url)
        .header("X-API-Key", API_KEY)
        .send()
        .await
        .unwrap_or_else(|error| panic!("GET {url} answers: {error}"));
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// `GET {base_url}/inbound/{id}` as `member` until the message's status is `status` (within
/// `limit`); its record.
async fn record_when(
    client: &reqwest::Client,
    base_url: &str,
    id: &str,
    member: &str,
    status: &str,
    limit: Duration,
) -> serde_json::Value {
    let deadline = std::time::Instant::now() + limit;
    loop {
        let url = format!("{base_url}/inbound/{id}?user_id={member}");
        let (_, text) = get_with_key(client, &url).await;
        let record: serde_json::Value =
            serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        if record["status"] == status {
            return record;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "message {id} was never {status}: {record}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Poll `GET {base_url}/readyz` until it answers 200: a `Hearth` has reported its
/// address, but its queue may not have resumed its inbox yet. Panics after 30 s.
pub async fn wait_for_readyz(client: &reqwest::Client, base_url: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::time::Instant::now() < deadline {
        if let Ok(response) = client.get(format!("{base_url}/readyz")).send().await
            && response.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("hearth did not become ready at {base_url}");
}

/// The real binary as a benchmark drives it: spawned on `config` with warnings logged, a
/// two-thread runtime and an HTTP client keeping `connections` idle connections; ready.
pub struct BenchedHearth {
    pub process: Hearth,
    pub runtime: tokio::runtime::Runtime,
    pub client: reqwest::Client,
}

/// The hearth binary a benchmark measures: `HEARTH_BENCH_BINARY` when set (another build,
/// such as the one before a change, measured by the same harness), else this build's.
pub fn benched_binary() -> std::path::PathBuf {
    std::env::var_os("HEARTH_BENCH_BINARY")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_hearth")))
}

impl BenchedHearth {
    pub fn start(config: &Path, connections: usize) -> BenchedHearth {
        let process = Hearth::spawn_binary(
            &benched_binary(),
            config,
            &test_env(&[("HEARTH_LOG", "warn,hearth::app=info")]),
        );
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime");
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(connections)
            .build()
            .expect("http client");
        runtime.block_on(wait_for_readyz(&client, &process.base_url));
        BenchedHearth {
            process,
            runtime,
            client,
        }
    }
}
