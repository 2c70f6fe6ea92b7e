//! The tools of some MCP servers as one `ToolsProvider` (a profile's
//! `enable_mcp_server_ids`): calls go out as `tools/call` with the call timeout, and every
//! outcome, including a dead server or a timeout, comes back as text the model can read.

use std::sync::Arc;

use async_trait::async_trait;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, ContentBlock, RequestId, ResourceContents, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use tokio::time::Instant;

use super::server::{ServerShared, short_reason};
use crate::config::{ApprovalSubject, tool_server_id};
use crate::llm::ToolSpec;
use crate::tools::{ToolContext, ToolError, ToolsProvider};

/// The `_meta` key of a `tools/call` carrying the call's idempotency key.
pub const IDEMPOTENCY_META_KEY: &str = "hearth/idempotency_key";

pub(super) struct McpToolsProvider {
    servers: Vec<Arc<ServerShared>>,
}

impl McpToolsProvider {
    pub(super) fn new(servers: Vec<Arc<ServerShared>>) -> Self {
        McpToolsProvider { servers }
    }
}

#[async_trait]
impl ToolsProvider for McpToolsProvider {
    async fn tools(&self) -> Vec<ToolSpec> {
        self.servers
            .iter()
            .flat_map(|server| {
                server
                    .tools()
                    .iter()
                    .map(|tool| tool.spec.clone())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    async fn call(
        &self,
        name: &str,
        arguments: &serde_json::Value,
        context: &ToolContext,
    ) -> Result<String, ToolError> {
        for server in &self.servers {
            let tools = server.tools();
            if let Some(tool) = tools.iter().find(|tool| tool.spec.name == name) {
                return call_tool(server, name, &tool.mcp_name, arguments, context).await;
            }
        }
        // A server that never connected has no known tools; a call naming it is still its.
        let server =
            tool_server_id(name).and_then(|id| self.servers.iter().find(|server| server.id == id));
        if let Some(server) = server
            && let Err(detail) = server.peer()
        {
            return Ok(unavailable(&server.id, &detail));
        }
        Err(ToolError::UnknownTool(name.to_owned()))
    }

    async fn approval_subject(
        &self,
        name: &str,
        _arguments: &serde_json::Value,
    ) -> ApprovalSubject {
        let Some(server) =
            tool_server_id(name).and_then(|id| self.servers.iter().find(|server| server.id == id))
        else {
            return ApprovalSubject::Unknown(name.to_owned());
        };
        // Read the flag before the list: a change between the two reads leaves it false.
        let listed = server.listed() && server.tools().iter().any(|tool| tool.spec.name == name);
        ApprovalSubject::Mcp {
            name: name.to_owned(),
            server: server.id.clone(),
            listed,
        }
    }
}

fn unavailable(server_id: &str, detail: &str) -> String {
    format!("error: tool server {server_id} is unavailable right now: {detail}")
}

async fn call_tool(
    server: &ServerShared,
    name: &str,
    mcp_name: &str,
    arguments: &serde_json::Value,
    context: &ToolContext,
) -> Result<String, ToolError> {
    let arguments = match arguments {
        serde_json::Value::Object(map) => Some(map.clone()),
        serde_json::Value::Null => None,
        other => {
            return Err(ToolError::InvalidArguments {
                tool: name.to_owned(),
                message: format!("arguments must be a json object, not {other}"),
            });
        }
    };
    let peer = match server.peer() {
        Ok(peer) => peer,
        Err(detail) => return Ok(unavailable(&server.id, &detail)),
    };
    let mut params = CallToolRequestParams::new(mcp_name.to_owned());
    params.arguments = arguments;
    // The same for every attempt of this call of this turn, so a server can recognise a
    // call it already ran (hearth itself never runs a completed one again).
    if let Some(key) = &context.idempotency_key {
        let mut meta = rmcp::model::JsonObject::new();
        meta.insert(
            IDEMPOTENCY_META_KEY.to_owned(),
            serde_json::Value::String(key.clone()),
        );
        params.meta = Some(rmcp::model::MetaObject(meta).into());
    }
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));

    // Tracked before sending, so a question the server asks at once still finds its member.
    let call = server.calls.begin(context.clone());
    let started = Instant::now();
    let handle = match peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => {
            server.connection_suspect();
            return Ok(unavailable(&server.id, &short_reason(&error)));
        }
    };
    call.set_request_id(handle.id.clone());
    let mut abandon = CancelOnDrop {
        peer: peer.clone(),
        id: Some(handle.id.clone()),
    };
    let response = handle.await_response();
    tokio::pin!(response);
    let timeout = server.options.call_timeout;
    let mut deadline = started + timeout;
    let outcome = loop {
        tokio::select! {
            outcome = &mut response => break Some(outcome),
            () = tokio::time::sleep_until(deadline) => {
                // The call timeout measures the server, not a family member thinking about
                // the server's question: while one is asked, the clock starts over.
                if call.waiting_for_person() {
                    deadline = Instant::now() + timeout;
                    continue;
                }
                break None;
            }
        }
    };
    let elapsed_ms = started.elapsed().as_millis() as u64;
    let Some(outcome) = outcome else {
        tracing::warn!(server = %server.id, tool = %mcp_name, timeout_s = timeout.as_secs(), "mcp tool call timed out");
        server.connection_suspect();
        return Ok(unavailable(
            &server.id,
            &format!("no answer within {}s", timeout.as_secs()),
        ));
    };
    abandon.id = None;
    let text = match outcome {
        Ok(ServerResult::CallToolResult(result)) => {
            tracing::info!(server = %server.id, tool = %mcp_name, is_error = result.is_error.unwrap_or(false), elapsed_ms, "mcp tool called");
            render_result(&result)
        }
        Ok(other) => {
            tracing::warn!(server = %server.id, tool = %mcp_name, answer = ?other, "mcp tool call got an unexpected answer");
            format!(
                "error: tool server {} answered {mcp_name} in a way hearth does not support",
                server.id
            )
        }
        Err(ServiceError::McpError(error)) => {
            tracing::info!(server = %server.id, tool = %mcp_name, code = error.code.0, message = %error.message, "mcp tool call refused");
            format!("error: {}", error.message)
        }
        Err(error) => {
            tracing::warn!(server = %server.id, tool = %mcp_name, error = %error, "mcp tool call failed");
            server.connection_suspect();
            unavailable(&server.id, &short_reason(&error))
        }
    };
    Ok(text)
}

/// Tells the server to stop working on a call nobody waits for any more (timed out, or the
/// turn itself was dropped).
struct CancelOnDrop {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let reason = "hearth stopped waiting for the result".to_owned();
            let notice = CancelledNotificationParam::new(Some(id), Some(reason));
            let _ = peer.notify_cancelled(notice).await;
        });
    }
}

/// The most text of one tool result the model reads: a larger answer is cut (and says so),
/// so one huge result cannot swell a turn's state and every later prompt.
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// `text` cut to at most `limit` bytes at a character boundary, saying so when it was.
fn cut_to(text: String, limit: usize) -> String {
    if text.len() <= limit {
        return text;
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[result cut at {end} of {} bytes]",
        &text[..end],
        text.len()
    )
}

/// The text the model reads: text parts joined, other content described briefly, and an
/// `isError` result prefixed with "error: "; at most `MAX_RESULT_BYTES` of it.
pub(super) fn render_result(result: &CallToolResult) -> String {
    cut_to(render_whole_result(result), MAX_RESULT_BYTES)
}

fn render_whole_result(result: &CallToolResult) -> String {
    let mut parts: Vec<String> = result.content.iter().map(describe_block).collect();
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        parts.push(structured.to_string());
    }
    let text = parts.join("\n");
    match (result.is_error == Some(true), text.is_empty()) {
        (true, true) => "error: the tool failed without saying why".to_owned(),
        (true, false) => format!("error: {text}"),
        (false, _) => text,
    }
}

fn describe_block(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => {
            format!("[{}, {} bytes]", image.mime_type, base64_len(&image.data))
        }
        ContentBlock::Audio(audio) => {
            format!("[{}, {} bytes]", audio.mime_type, base64_len(&audio.data))
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}, {}, {} bytes]",
                mime_type.as_deref().unwrap_or("binary"),
                base64_len(blob)
            ),
            _ => "[an embedded resource]".to_owned(),
        },
        ContentBlock::ResourceLink(link) => match &link.mime_type {
            Some(mime_type) => format!("[link to {} ({}, {mime_type})]", link.uri, link.name),
            None => format!("[link to {} ({})]", link.uri, link.name),
        },
        _ => "[content of a kind hearth does not show]".to_owned(),
    }
}

/// The decoded size of base64 `data`, without decoding it.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|byte| *byte == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::ContentBlock;

    #[test]
    fn text_parts_are_joined_and_other_content_described() {
        let result = CallToolResult::success(vec![
            ContentBlock::text("first"),
            ContentBlock::image("aGVsbG8=", "image/png"),
            ContentBlock::text("second"),
        ]);
        assert_eq!(
            render_result(&result),
            "first\n[image/png, 5 bytes]\nsecond"
        );
    }

    #[test]
    fn errors_read_as_errors() {
        let result = CallToolResult::error(vec![ContentBlock::text("no such file")]);
        assert_eq!(render_result(&result), "error: no such file");
        let silent = CallToolResult::error(vec![]);
        assert!(render_result(&silent).starts_with("error: "));
    }

    #[test]
    fn a_huge_result_is_cut_at_a_character_boundary_and_says_so() {
        let text = "é".repeat(MAX_RESULT_BYTES);
        let cut = cut_to(text.clone(), MAX_RESULT_BYTES);
        assert!(cut.len() < MAX_RESULT_BYTES + 64);
        assert!(
            cut.ends_with(&format!(
                "[result cut at {MAX_RESULT_BYTES} of {} bytes]",
                text.len()
            )),
            "{}",
            &cut[cut.len() - 60..]
        );
        let odd = cut_to("aé".repeat(10), 4);
        assert!(
            odd.starts_with("aéa\n[result cut at 4 of 30 bytes]"),
            "{odd}"
        );
        assert_eq!(cut_to("short".into(), 10), "short");
    }

    #[test]
    fn base64_sizes() {
        assert_eq!(base64_len(""), 0);
        assert_eq!(base64_len("aGk="), 2);
        assert_eq!(base64_len("aGVsbG8h"), 6);
    }
}
