//! One configured MCP server, supervised: connect (a stdio child process or streamable
//! HTTP) within the init timeout, keep its tool list fresh on `tools/list_changed`, and when
//! it fails or dies, reconnect with exponential backoff (1 s doubling to 60 s) until hearth
//! stops, which closes the connection and ends the child.
//!
//! A stdio server's death shows as the end of its connection. An HTTP server's does not (the
//! client keeps a session that a restarted server no longer knows), so the connection is
//! pinged every 30 s and right after a call failed at the transport or timed out; a ping
//! without an answer ends the connection and a new one is made.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rmcp::model::{ClientRequest, PingRequest, Tool};
use rmcp::service::{QuitReason, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{Peer, RoleClient, serve_client};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::{Notify, oneshot, watch};
use tokio::time::Instant;

use super::client::HearthClient;
use super::elicitation::CallTracker;
use super::stdio::{MAX_MESSAGE_BYTES, StdioServer};
use super::transport::{ConnectError, child_command, headers};
use super::{McpOptions, ServerState};
use crate::backoff::{Backoff, Doubling};
use crate::config::{McpServerConfig, namespaced_tool_name};
use crate::llm::ToolSpec;

/// Reconnecting: 1 s doubling to 60 s.
const RECONNECTS: Doubling = Doubling::new(Duration::from_secs(1), Duration::from_secs(60));
/// A connection that lived this long was healthy: the next failure retries quickly again.
const STABLE_CONNECTION: Duration = Duration::from_secs(60);
/// How long a closing connection may take (rmcp closes stdin, waits, then SIGTERM, SIGKILL).
pub(super) const CLOSE_GRACE: Duration = Duration::from_secs(10);
/// How often an idle connection is checked, and how long a ping may take (at most the init
/// timeout).
const HEALTH_CHECK_INTERVAL: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(10);
/// A tool as the model sees it, and the name its server knows it by.
#[derive(Debug, Clone)]
pub(super) struct McpTool {
    pub spec: ToolSpec,
    pub mcp_name: String,
}

/// What every part (supervisor, client handler, providers) shares about one server.
pub(super) struct ServerShared {
    pub id: String,
    pub config: McpServerConfig,
    pub options: McpOptions,
    pub calls: Arc<CallTracker>,
    status: Mutex<Status>,
    /// Set by `tools/list_changed`; the supervisor lists the tools again.
    refresh: Notify,
    /// Set when a call failed at the transport or timed out; the supervisor pings.
    suspect: Notify,
}

#[derive(Default)]
struct Status {
    peer: Option<Peer<RoleClient>>,
    /// The last known tools, kept while disconnected so their calls answer "unavailable".
    tools: Arc<Vec<McpTool>>,
    /// `tools` is the server's current list: false before the first listing, after
    /// `tools/list_changed` until a listing succeeds again, and while disconnected.
    /// Calls of an unlisted server's tools always ask the member first.
    listed: bool,
    /// `tools/list_changed` notifications so far: a listing counts as current only if
    /// none arrived while it ran.
    changes: u64,
    detail: String,
    pid: Option<u32>,
    connections: u64,
    tool_list_refreshes: u64,
    /// The last line the stdio server wrote to stderr, logged with failures.
    last_stderr: Option<String>,
}

impl ServerShared {
    pub(super) fn new(id: &str, config: &McpServerConfig, mut options: McpOptions) -> Self {
        // The server's own timeouts, where its config sets them.
        if let Some(seconds) = config.init_timeout_seconds {
            options.init_timeout = std::time::Duration::from_secs(seconds);
        }
        if let Some(seconds) = config.call_timeout_seconds {
            options.call_timeout = std::time::Duration::from_secs(seconds);
        }
        ServerShared {
            id: id.to_owned(),
            config: config.clone(),
            options,
            calls: Arc::default(),
            status: Mutex::new(Status {
                detail: "starting".to_owned(),
                ..Status::default()
            }),
            refresh: Notify::new(),
            suspect: Notify::new(),
        }
    }

    pub(super) fn state(&self) -> ServerState {
        let status = self.lock();
        ServerState {
            connected: status.peer.is_some(),
            detail: status.detail.clone(),
            tools: status.tools.len(),
            pid: status.pid,
            connections: status.connections,
            tool_list_refreshes: status.tool_list_refreshes,
        }
    }

    pub(super) fn tools(&self) -> Arc<Vec<McpTool>> {
        self.lock().tools.clone()
    }

    /// The live connection, or why there is none.
    pub(super) fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let status = self.lock();
        status.peer.clone().ok_or_else(|| status.detail.clone())
    }

    /// Whether `tools()` is the server's current list (see `Status::listed`).
    pub(super) fn listed(&self) -> bool {
        self.lock().listed
    }

    pub(super) fn tool_list_changed(&self) {
        tracing::debug!(server = %self.id, "mcp server tool list changed");
        let mut status = self.lock();
        status.listed = false;
        status.changes += 1;
        drop(status);
        // One stored permit: a burst of notifications costs one listing.
        self.refresh.notify_one();
    }

    /// A call failed in a way a dead connection would explain: check it now.
    pub(super) fn connection_suspect(&self) {
        self.suspect.notify_one();
    }

    fn lock(&self) -> MutexGuard<'_, Status> {
        self.status
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn set_disconnected(&self, detail: String) {
        let mut status = self.lock();
        status.peer = None;
        status.pid = None;
        status.listed = false;
        status.detail = detail;
    }

    pub(super) fn last_stderr(&self) -> Option<String> {
        self.lock().last_stderr.clone()
    }

    fn namespaced(&self, tools: Vec<Tool>) -> Vec<McpTool> {
        let mut seen = BTreeMap::new();
        let mut mapped = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = namespaced_tool_name(&self.id, &tool.name);
            if let Some(first) = seen.insert(name.clone(), tool.name.to_string()) {
                tracing::warn!(server = %self.id, tool = %tool.name, other = %first, name = %name, "two mcp tools map to one name; keeping the first");
                seen.insert(name, first);
                continue;
            }
            let description = tool
                .description
                .as_deref()
                .or(tool.title.as_deref())
                .unwrap_or_default()
                .to_owned();
            mapped.push(McpTool {
                spec: ToolSpec {
                    name,
                    description,
                    parameters: serde_json::Value::Object((*tool.input_schema).clone()),
                },
                mcp_name: tool.name.to_string(),
            });
        }
        mapped
    }
}

/// A connection that finished `initialize` and its first `tools/list`.
pub(super) struct Connection {
    pub(super) running: RunningService<RoleClient, HearthClient>,
    pub(super) tools: Vec<Tool>,
    pid: Option<u32>,
    /// `Status::changes` when the listing started.
    changes: u64,
}

enum Ended {
    Stopped,
    Lost(String),
}

/// Runs server `shared` until `stop` turns true or its sender is dropped; `first_attempt`
/// fires once the first connection attempt has succeeded or failed.
pub(super) async fn supervise(
    shared: Arc<ServerShared>,
    mut stop: watch::Receiver<bool>,
    first_attempt: oneshot::Sender<()>,
) {
    let mut first_attempt = Some(first_attempt);
    // Counts failures to connect and connections lost early; a connection that held for
    // `STABLE_CONNECTION` starts the count again.
    let mut backoff = Backoff::new(RECONNECTS);
    let mut failures = 0u32;
    loop {
        let attempt = tokio::select! {
            attempt = connect(&shared) => attempt,
            () = stopped(&mut stop) => break,
        };
        match attempt {
            Ok(connection) => {
                failures = 0;
                let since = Instant::now();
                let ended = run_connection(&shared, connection, &mut first_attempt, &mut stop);
                match ended.await {
                    Ended::Stopped => break,
                    Ended::Lost(reason) => {
                        if since.elapsed() >= STABLE_CONNECTION {
                            backoff.reset();
                        }
                        let delay = backoff.next_wait();
                        tracing::warn!(server = %shared.id, reason = %reason, retry_in_s = delay.as_secs(), last_stderr = ?shared.last_stderr(), "mcp server connection lost; reconnecting");
                        shared.set_disconnected(format!(
                            "{reason}; reconnecting in {}s",
                            delay.as_secs()
                        ));
                    }
                }
            }
            Err(error) => {
                failures += 1;
                let delay = backoff.next_wait();
                tracing::warn!(server = %shared.id, error = %error, attempt = failures, retry_in_s = delay.as_secs(), last_stderr = ?shared.last_stderr(), "mcp server unavailable; retrying");
                shared.set_disconnected(format!(
                    "{error} (attempt {failures}, next in {}s)",
                    delay.as_secs()
                ));
            }
        }
        if let Some(done) = first_attempt.take() {
            let _ = done.send(());
        }
        tokio::select! {
            () = tokio::time::sleep(backoff.failed()) => {}
            () = stopped(&mut stop) => break,
        }
    }
    if let Some(done) = first_attempt.take() {
        let _ = done.send(());
    }
    shared.set_disconnected("stopped: hearth is shutting down".to_owned());
    tracing::debug!(server = %shared.id, "mcp server supervisor stopped");
}

/// Resolves once hearth stops (the flag is set, or every sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}

async fn run_connection(
    shared: &Arc<ServerShared>,
    connection: Connection,
    first_attempt: &mut Option<oneshot::Sender<()>>,
    stop: &mut watch::Receiver<bool>,
) -> Ended {
    let Connection {
        running,
        tools,
        pid,
        changes,
    } = connection;
    let tools = shared.namespaced(tools);
    {
        let mut status = shared.lock();
        status.connections += 1;
        status.peer = Some(running.peer().clone());
        status.pid = pid;
        status.detail = "connected".to_owned();
        status.tools = Arc::new(tools);
        status.listed = status.changes == changes;
        tracing::info!(server = %shared.id, tools = status.tools.len(), pid = ?pid, "mcp server connected");
    }
    if let Some(done) = first_attempt.take() {
        let _ = done.send(());
    }

    let closer = running.cancellation_token();
    let peer = running.peer().clone();
    let finished = running.waiting();
    tokio::pin!(finished);
    let mut health = tokio::time::interval_at(
        Instant::now() + HEALTH_CHECK_INTERVAL,
        HEALTH_CHECK_INTERVAL,
    );
    health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let ended = loop {
        tokio::select! {
            quit = &mut finished => {
                let reason = match quit {
                    Ok(QuitReason::Closed) => "the server closed the connection".to_owned(),
                    Ok(other) => format!("the connection ended ({other:?})"),
                    Err(error) => format!("the connection task failed: {error}"),
                };
                shared.set_disconnected(reason.clone());
                return Ended::Lost(reason);
            }
            () = shared.refresh.notified() => refresh_tools(shared, &peer).await,
            () = shared.suspect.notified() => {
                if let Err(reason) = ping(shared, &peer).await {
                    break Ended::Lost(reason);
                }
            }
            _ = health.tick() => {
                if let Err(reason) = ping(shared, &peer).await {
                    break Ended::Lost(reason);
                }
            }
            () = stopped(stop) => break Ended::Stopped,
        }
    };
    // Calls from now on answer "unavailable" instead of reaching a closing connection.
    shared.set_disconnected(match &ended {
        Ended::Stopped => "stopping: hearth is shutting down".to_owned(),
        Ended::Lost(reason) => format!("closing the connection: {reason}"),
    });
    closer.cancel();
    if tokio::time::timeout(CLOSE_GRACE, &mut finished)
        .await
        .is_err()
    {
        tracing::warn!(server = %shared.id, "mcp server did not close in time; its process is killed when dropped");
    }
    ended
}

/// Whether the server still answers on this connection.
async fn ping(shared: &ServerShared, peer: &Peer<RoleClient>) -> Result<(), String> {
    let limit = PING_TIMEOUT.min(shared.options.init_timeout);
    let request = ClientRequest::PingRequest(PingRequest::default());
    match tokio::time::timeout(limit, peer.send_request(request)).await {
        // Any answer, even a refusal, shows the server is there.
        Ok(Ok(_)) | Ok(Err(ServiceError::McpError(_))) => Ok(()),
        Ok(Err(error)) => Err(format!(
            "the server stopped answering ({})",
            short_reason(&error)
        )),
        Err(_) => Err(format!(
            "the server did not answer a ping within {}s",
            limit.as_secs()
        )),
    }
}

/// Why a request failed, for people and the model: without rmcp's transport type names.
pub(super) fn short_reason(error: &ServiceError) -> String {
    match error {
        ServiceError::TransportSend(error) => format!("the connection failed: {}", error.error),
        ServiceError::TransportClosed => "the connection closed".to_owned(),
        other => other.to_string(),
    }
}

async fn refresh_tools(shared: &ServerShared, peer: &Peer<RoleClient>) {
    let changes = shared.lock().changes;
    match tokio::time::timeout(shared.options.init_timeout, peer.list_all_tools()).await {
        Ok(Ok(tools)) => {
            let tools = shared.namespaced(tools);
            let mut status = shared.lock();
            status.tool_list_refreshes += 1;
            tracing::info!(server = %shared.id, tools = tools.len(), "mcp server tool list refreshed");
            status.tools = Arc::new(tools);
            // A change announced meanwhile is listed by the next refresh, already due.
            status.listed = status.changes == changes;
        }
        Ok(Err(error)) => {
            tracing::warn!(server = %shared.id, error = %error, "listing changed mcp tools failed; keeping the old list");
        }
        Err(_) => {
            tracing::warn!(server = %shared.id, timeout_s = shared.options.init_timeout.as_secs(), "listing changed mcp tools timed out; keeping the old list");
        }
    }
}

/// Starts or reaches the server, runs `initialize` and the first `tools/list`, all within
/// the init timeout (a child that misses it is killed when its transport is dropped).
pub(super) async fn connect(shared: &Arc<ServerShared>) -> Result<Connection, ConnectError> {
    let timeout = shared.options.init_timeout;
    tokio::time::timeout(timeout, async {
        let client = HearthClient::new(shared.clone());
        let (running, pid) = match (&shared.config.command, &shared.config.url) {
            (Some(command), _) => {
                let (process, pid) = spawn_child(shared, command)?;
                (serve_client(client, process).await?, pid)
            }
            (None, Some(url)) => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(headers(&shared.config)?);
                // The same bound as over stdio: a larger event ends its call with an error
                // instead of being held whole.
                config.max_sse_event_size = MAX_MESSAGE_BYTES;
                let transport = StreamableHttpClientTransport::from_config(config);
                (serve_client(client, transport).await?, None)
            }
            (None, None) => return Err(ConnectError::NotConfigured),
        };
        let changes = shared.lock().changes;
        let tools = running.peer().list_all_tools().await?;
        Ok(Connection {
            running,
            tools,
            pid,
            changes,
        })
    })
    .await
    .map_err(|_| ConnectError::InitTimeout(timeout))?
}

fn spawn_child(
    shared: &Arc<ServerShared>,
    command: &str,
) -> Result<(StdioServer, Option<u32>), ConnectError> {
    shared.lock().last_stderr = None;
    let child = child_command(&shared.config, command)?;
    let (process, stderr) =
        StdioServer::spawn(&shared.id, child).map_err(|source| ConnectError::Spawn {
            command: command.to_owned(),
            source,
        })?;
    let pid = process.id();
    if let Some(stderr) = stderr {
        tokio::spawn(forward_stderr(shared.clone(), stderr));
    }
    Ok((process, pid))
}

/// The server's stderr goes to hearth's log; without a reader the child would block on a
/// full pipe.
async fn forward_stderr(shared: Arc<ServerShared>, stderr: ChildStderr) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %shared.id, line = %line, "mcp server stderr");
        if !line.trim().is_empty() {
            shared.lock().last_stderr = Some(line);
        }
    }
}
