//! One server reached once, as `hearth doctor` does: started or reached the way the
//! supervisor connects (`server::connect`: `initialize` and `tools/list`), then closed, with
//! no retries and no supervisor left behind.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::ClientInitializeError;
use rmcp::transport::streamable_http_client::StreamableHttpError;

use super::McpOptions;
use super::server::{self, CLOSE_GRACE, ServerShared, short_reason};
use super::transport::ConnectError;
use crate::config::McpServerConfig;

/// What the server said about itself, and how many tools it offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedServer {
    /// The server's name and version from `initialize`, when it gave them.
    pub server: Option<String>,
    pub tools: usize,
}

/// Why the server could not be reached, with the last line a stdio server wrote to stderr.
#[derive(Debug, thiserror::Error)]
#[error("{reason}{}", stderr_note(.last_stderr))]
pub struct McpCheckError {
    reason: String,
    last_stderr: Option<String>,
    /// Whether a stdio server's command could not be started at all.
    pub not_started: bool,
}

/// Connects to server `id` once within `timeout` (or its own shorter `init_timeout_seconds`),
/// lists its tools and closes the connection, which ends a stdio server's process.
pub async fn check_server(
    id: &str,
    config: &McpServerConfig,
    timeout: Duration,
) -> Result<CheckedServer, McpCheckError> {
    let mut options = McpOptions {
        init_timeout: timeout,
        ..McpOptions::default()
    };
    if let Some(seconds) = config.init_timeout_seconds {
        options.init_timeout = timeout.min(Duration::from_secs(seconds));
    }
    let mut config = config.clone();
    config.init_timeout_seconds = None;
    let shared = Arc::new(ServerShared::new(id, &config, options));
    let connection = match server::connect(&shared).await {
        Ok(connection) => connection,
        Err(error) => {
            // The stderr reader may still be taking the line the server ended with.
            tokio::time::sleep(Duration::from_millis(100)).await;
            return Err(McpCheckError {
                not_started: matches!(error, ConnectError::Spawn { .. }),
                reason: describe(&error),
                last_stderr: shared.last_stderr(),
            });
        }
    };
    let server = connection.running.peer().peer_info().and_then(|info| {
        info.server_info
            .as_ref()
            .map(|implementation| format!("{} {}", implementation.name, implementation.version))
    });
    let tools = connection.tools.len();
    if tokio::time::timeout(CLOSE_GRACE, connection.running.cancel())
        .await
        .is_err()
    {
        tracing::warn!(server = %id, "mcp server did not close in time; its process is killed when dropped");
    }
    Ok(CheckedServer { server, tools })
}

fn stderr_note(last_stderr: &Option<String>) -> String {
    last_stderr
        .as_ref()
        .map(|line| format!(" (its last line on stderr: {line})"))
        .unwrap_or_default()
}

/// The failure without rmcp's transport type names, with the causes under a transport
/// error ("error sending request" alone hides "connection refused").
fn describe(error: &ConnectError) -> String {
    match error {
        ConnectError::Initialize(initialize) => match initialize.as_ref() {
            ClientInitializeError::TransportError { error, .. } => {
                // The HTTP client's error is held without being its source.
                match error
                    .error
                    .downcast_ref::<StreamableHttpError<reqwest::Error>>()
                {
                    Some(StreamableHttpError::Client(client)) => {
                        format!("cannot reach the server: {}", with_causes(client))
                    }
                    _ => format!("initialize failed: {}", with_causes(error.error.as_ref())),
                }
            }
            other => format!("initialize failed: {other}"),
        },
        ConnectError::ListTools(error) => format!("tools/list failed: {}", short_reason(error)),
        other => other.to_string(),
    }
}

fn with_causes(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
