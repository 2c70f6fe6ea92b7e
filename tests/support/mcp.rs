//! The real MCP servers the MCP tests talk to: the reference servers
//! `@modelcontextprotocol/server-everything` (stdio, or streamable HTTP on a loopback port)
//! and `@modelcontextprotocol/server-filesystem`, run with node from
//! `$HEARTH_TEST_CACHE/mcp` (default `~/.cache/hearth-test/mcp`), where
//! `scripts/install-test-mcp.sh` installs them. With `HEARTH_REQUIRE_REAL_SERVERS=1` a missing
//! install fails the test, otherwise the test skips. Also: a scripted elicitation handler,
//! process helpers (is a pid alive, kill it) for the crash and no-orphan tests, server
//! configs loaded from a real file (for the `*_env` secrets), and hearth started with every
//! server's tools (`app_with_everything`).

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hearth::config::{LoadOptions, LoadedConfig, McpServerConfig, load_with_env};
use hearth::tools::{
    ElicitationAnswer, ElicitationHandler, ElicitationRequest, LOCAL_TOOL_NAMES, McpOptions,
    McpServers, ServerState, ToolContext, ToolsProvider,
};

use super::hearth_app::Hearth;
use super::llm_server::ScriptedLlmServer;
use super::real_llm::require_real_servers;
use super::test_config::{ProfileParts, TestConfig, profile};

pub const EVERYTHING: &str = "server-everything";
pub const FILESYSTEM: &str = "server-filesystem";
/// server-everything's tool that asks the member a question (elicitation), as hearth names it.
pub const ELICITATION_TOOL: &str = "everything__trigger-elicitation-request";

/// `$HEARTH_TEST_CACHE/mcp`, the cache defaulting to `~/.cache/hearth-test` (an empty
/// variable counts as unset, as in the install script).
pub fn mcp_dir() -> PathBuf {
    let cache = match std::env::var_os("HEARTH_TEST_CACHE") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache")
            .join("hearth-test"),
    };
    cache.join("mcp")
}

/// The entry point of an installed reference server package.
pub fn entry_point(package: &str) -> PathBuf {
    mcp_dir()
        .join("node_modules")
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist")
        .join("index.js")
}

/// The package's entry point, or `None` (after a note) when it is not installed. Panics
/// when it is missing while `HEARTH_REQUIRE_REAL_SERVERS=1`.
#[track_caller]
pub fn installed_or_skip(test: &str, package: &str) -> Option<PathBuf> {
    let entry = entry_point(package);
    if entry.is_file() {
        return Some(entry);
    }
    if require_real_servers() {
        panic!(
            "{test}: the MCP test server {package} is not installed ({} is missing) and \
             HEARTH_REQUIRE_REAL_SERVERS=1; run scripts/install-test-mcp.sh",
            entry.display()
        );
    }
    eprintln!(
        "SKIPPED {test}: the MCP test server {package} is not installed ({} is missing); run \
         scripts/install-test-mcp.sh to enable this test, or set HEARTH_REQUIRE_REAL_SERVERS=1 \
         to make its absence an error",
        entry.display()
    );
    None
}

fn node(args: Vec<String>) -> McpServerConfig {
    McpServerConfig {
        command: Some("node".to_owned()),
        args,
        ..McpServerConfig::default()
    }
}

/// server-everything over stdio.
#[track_caller]
pub fn everything_stdio_or_skip(test: &str) -> Option<McpServerConfig> {
    let entry = installed_or_skip(test, EVERYTHING)?;
    Some(node(vec![entry.display().to_string(), "stdio".to_owned()]))
}

/// server-filesystem over stdio, allowed to read and write `allowed` only.
#[track_caller]
pub fn filesystem_or_skip(test: &str, allowed: &Path) -> Option<McpServerConfig> {
    let entry = installed_or_skip(test, FILESYSTEM)?;
    Some(node(vec![
        entry.display().to_string(),
        allowed.display().to_string(),
    ]))
}

/// A fresh folder (deleted on drop), e.g. the one server-filesystem may use.
pub fn temp_folder() -> tempfile::TempDir {
    tempfile::tempdir().expect("create a temporary folder")
}

/// One server config as the `mcp_servers` map.
pub fn servers(entries: &[(&str, McpServerConfig)]) -> BTreeMap<String, McpServerConfig> {
    entries
        .iter()
        .map(|(id, config)| (id.to_string(), config.clone()))
        .collect()
}

/// A configuration loaded as at start-up, from a real file holding `mcp_servers_yaml` after an
/// LLM and the HTTP API without auth, with `env` as the whole environment: the way to get
/// server configs whose `*_env` secrets are read.
pub fn load_config(mcp_servers_yaml: &str, env: &[(&str, &str)]) -> LoadedConfig {
    let folder = temp_folder();
    let path = folder.path().join("hearth.yaml");
    let text = format!(
        "http: {{ auth_enabled: false }}\nllms:\n  main: {{ provider: openai, base_url: \"http://127.0.0.1:9/v1\", model: m }}\n{mcp_servers_yaml}"
    );
    std::fs::write(&path, text).expect("write the config file");
    let env = env
        .iter()
        .map(|(name, value)| (name.to_string(), value.to_string()))
        .collect();
    let options = LoadOptions {
        known_local_tools: LOCAL_TOOL_NAMES,
        local_model: false,
    };
    load_with_env(&path, &env, &options).unwrap_or_else(|error| panic!("{error}"))
}

/// `McpServers` with the one server `id`.
pub async fn start_one(id: &str, config: McpServerConfig, options: McpOptions) -> McpServers {
    McpServers::start(&servers(&[(id, config)]), options).await
}

pub fn with_handler(handler: Arc<ScriptedElicitation>) -> McpOptions {
    McpOptions {
        elicitation: Some(handler),
        ..McpOptions::default()
    }
}

pub fn state(servers: &McpServers, id: &str) -> ServerState {
    servers.states()[id].clone()
}

/// A family member's tool context.
pub fn member(id: &str) -> ToolContext {
    ToolContext {
        member_id: id.parse().unwrap(),
        conversation_key: hearth::ids::ConversationKey::new("http", id).unwrap(),
        profile_id: "default_assistant".to_owned(),
        question_timeout: std::time::Duration::from_secs(300),
        idempotency_key: None,
    }
}

/// A call for alice that must not fail as a Rust error.
pub async fn call(
    provider: &Arc<dyn ToolsProvider>,
    name: &str,
    arguments: serde_json::Value,
) -> String {
    call_as(provider, "alice", name, arguments).await
}

pub async fn call_as(
    provider: &Arc<dyn ToolsProvider>,
    member_id: &str,
    name: &str,
    arguments: serde_json::Value,
) -> String {
    provider
        .call(name, &arguments, &member(member_id))
        .await
        .unwrap_or_else(|error| panic!("{name}: {error}"))
}

/// The tool result of a call to a server hearth cannot reach.
#[track_caller]
pub fn assert_unavailable(text: &str, server_id: &str) {
    let expected = format!("error: tool server {server_id} is unavailable right now: ");
    assert!(
        text.starts_with(&expected),
        "{text:?} does not start with {expected:?}"
    );
}

/// server-everything serving streamable HTTP at `url` (`http://127.0.0.1:PORT/mcp`) as a
/// child process of the test; killed when dropped.
pub struct EverythingHttpServer {
    child: Child,
    pub url: String,
    port: u16,
}

/// `node server-everything streamableHttp` on `port`, once it accepts connections.
fn spawn_http(port: u16) -> Child {
    let mut child = Command::new("node")
        .arg(entry_point(EVERYTHING))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(if verbose() {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .spawn()
        .expect("start node with server-everything streamableHttp");
    let address = SocketAddr::from(([127, 0, 0, 1], port));
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("server-everything streamableHttp on port {port} exited at start: {status}");
        }
        assert!(
            Instant::now() < deadline,
            "server-everything streamableHttp is not listening on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

impl EverythingHttpServer {
    #[track_caller]
    pub fn start_or_skip(test: &str) -> Option<EverythingHttpServer> {
        installed_or_skip(test, EVERYTHING)?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
            .expect("find a free loopback port");
        Some(EverythingHttpServer {
            child: spawn_http(port),
            url: format!("http://127.0.0.1:{port}/mcp"),
            port,
        })
    }

    /// Kills the server, as a crash would, and waits for it to be gone.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts a fresh server process on the same port (its sessions are new).
    pub fn start_again(&mut self) {
        self.crash();
        self.child = spawn_http(self.port);
    }

    pub fn config(&self, headers: &[(&str, &str)]) -> McpServerConfig {
        McpServerConfig {
            url: Some(self.url.clone()),
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            ..McpServerConfig::default()
        }
    }
}

impl Drop for EverythingHttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn verbose() -> bool {
    std::env::var("HEARTH_TEST_VERBOSE").is_ok_and(|value| value.trim() == "1")
}

/// An elicitation handler that gives one scripted answer (optionally after a delay, like a
/// person thinking) and remembers every question.
pub struct ScriptedElicitation {
    answer: ElicitationAnswer,
    delay: Duration,
    requests: Mutex<Vec<ElicitationRequest>>,
}

impl ScriptedElicitation {
    pub fn answering(answer: ElicitationAnswer) -> Arc<ScriptedElicitation> {
        Self::answering_after(answer, Duration::ZERO)
    }

    pub fn answering_after(answer: ElicitationAnswer, delay: Duration) -> Arc<ScriptedElicitation> {
        Arc::new(ScriptedElicitation {
            answer,
            delay,
            requests: Mutex::new(Vec::new()),
        })
    }

    pub fn requests(&self) -> Vec<ElicitationRequest> {
        self.requests.lock().unwrap().clone()
    }
}

#[async_trait]
impl ElicitationHandler for ScriptedElicitation {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        self.requests.lock().unwrap().push(request);
        tokio::time::sleep(self.delay).await;
        self.answer.clone()
    }
}

/// Whether process `pid` exists and is not a zombie.
pub fn process_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name: "pid (comm) S ...".
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

/// SIGKILL, as a crash would.
pub fn kill_hard(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -KILL {pid} failed: {status}");
}

/// Polls `check` every 20 ms until it holds; panics naming `what` after `limit`.
pub async fn eventually(what: &str, limit: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// hearth with the `/tools` profile on server-everything, or `None` (skipped) without npm.
pub async fn app_with_everything(test: &str, llm: &ScriptedLlmServer) -> Option<Hearth> {
    app_with_everything_and(test, llm, &[]).await
}

/// `config` with the `/tools` profile on server-everything over stdio, and the server;
/// `None` (the test skipped) when not installed.
pub fn toolbox_on_everything(config: TestConfig, test: &str) -> Option<TestConfig> {
    let everything = everything_stdio_or_skip(test)?;
    let command = everything.command.clone().unwrap();
    Some(
        config
            .profile(
                profile("toolbox")
                    .command("/tools")
                    .description("Signs people up.")
                    .processing(&[("delegation_security_level", "unrestricted".into())])
                    .mcp_servers(&["everything"]),
            )
            .mcp_server("everything", &command, &everything.args, |_| {}),
    )
}

pub async fn app_with_everything_and(
    test: &str,
    llm: &ScriptedLlmServer,
    overrides: &[(&str, &str)],
) -> Option<Hearth> {
    // Skipped before hearth is started when the server is not installed.
    everything_stdio_or_skip(test)?;
    let with_toolbox = |config| toolbox_on_everything(config, test).expect("installed");
    Some(Hearth::start_with(&llm.base_url(), with_toolbox, overrides).await)
}
