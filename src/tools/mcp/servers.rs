//! `McpServers`: every configured MCP server, each connected and supervised by a background
//! task, and the options they share.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::elicitation::ElicitationHandler;
use super::provider::McpToolsProvider;
use super::server::{self, ServerShared};
use crate::config::McpServerConfig;
use crate::tools::ToolsProvider;

/// How hearth talks to its MCP servers.
#[derive(Clone)]
pub struct McpOptions {
    /// For `initialize` and the first `tools/list` of each connection (and each refresh).
    pub init_timeout: Duration,
    /// For one `tools/call`; it does not run while a person is asked a server's question.
    pub call_timeout: Duration,
    /// Who answers servers' questions; without one, hearth does not offer to answer.
    pub elicitation: Option<Arc<dyn ElicitationHandler>>,
}

impl Default for McpOptions {
    fn default() -> Self {
        McpOptions {
            init_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(60),
            elicitation: None,
        }
    }
}

impl std::fmt::Debug for McpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOptions")
            .field("init_timeout", &self.init_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("elicitation", &self.elicitation.is_some())
            .finish()
    }
}

/// How one server is doing, for readiness and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerState {
    pub connected: bool,
    /// "connected", or why not and when hearth tries again.
    pub detail: String,
    /// The tools offered from this server (the last known ones while it is disconnected).
    pub tools: usize,
    /// The process id of a connected stdio server.
    pub pid: Option<u32>,
    /// Successful connections since start: more than one means it was restarted.
    pub connections: u64,
    /// Tool lists fetched again after `notifications/tools/list_changed`.
    pub tool_list_refreshes: u64,
}

/// Every configured MCP server, each supervised by a background task.
pub struct McpServers {
    servers: BTreeMap<String, Arc<ServerShared>>,
    /// Set to true (or dropped) to close every connection and end the supervisors.
    stop: watch::Sender<bool>,
    supervisors: Mutex<Vec<JoinHandle<()>>>,
}

impl McpServers {
    /// Connects to every server, waiting at most about the init timeout (servers connect in
    /// parallel); the ones that fail keep being retried in the background. The configs are
    /// the loaded ones: their ids are checked and their `*_env` secrets read by then.
    pub async fn start(
        servers: &BTreeMap<String, McpServerConfig>,
        options: McpOptions,
    ) -> McpServers {
        let (stop, _) = watch::channel(false);
        let mut shared = BTreeMap::new();
        let mut supervisors = Vec::new();
        let mut first_attempts = Vec::new();
        for (id, config) in servers {
            let server = Arc::new(ServerShared::new(id, config, options.clone()));
            let (done, first_attempt) = tokio::sync::oneshot::channel();
            supervisors.push(tokio::spawn(server::supervise(
                server.clone(),
                stop.subscribe(),
                done,
            )));
            first_attempts.push(first_attempt);
            shared.insert(id.clone(), server);
        }
        futures::future::join_all(first_attempts).await;
        let servers = McpServers {
            servers: shared,
            stop,
            supervisors: Mutex::new(supervisors),
        };
        let states = servers.states();
        let connected = states.values().filter(|state| state.connected).count();
        tracing::info!(servers = states.len(), connected, "mcp servers started");
        servers
    }

    /// Every server's state, by server id.
    pub fn states(&self) -> BTreeMap<String, ServerState> {
        self.servers
            .iter()
            .map(|(id, server)| (id.clone(), server.state()))
            .collect()
    }

    /// The tools of `server_ids` (a profile's `enable_mcp_server_ids`) as one provider; an id
    /// that names no configured server is skipped with a warning (config validation refuses
    /// those before start).
    pub fn provider(&self, server_ids: &[String]) -> Arc<dyn ToolsProvider> {
        let servers = server_ids
            .iter()
            .filter_map(|id| {
                let server = self.servers.get(id).cloned();
                if server.is_none() {
                    tracing::warn!(server = %id, "no mcp server with this id is configured");
                }
                server
            })
            .collect();
        Arc::new(McpToolsProvider::new(servers))
    }

    /// Closes every connection and waits until the stdio servers have exited.
    pub async fn shutdown(&self) {
        let _ = self.stop.send(true);
        let supervisors = std::mem::take(
            &mut *self
                .supervisors
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        futures::future::join_all(supervisors).await;
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        // The supervisors close their connections on their own once told.
        let _ = self.stop.send(true);
    }
}
