//! A stdio MCP server as rmcp's transport (`StdioServer`): the child process, hearth's
//! messages on its stdin, and its messages read from its stdout within a bound
//! (`BoundedLines`), so a server answering with megabytes never has them held in memory.
//!
//! A message (one line) of up to `MAX_MESSAGE_BYTES` reaches rmcp as it came. A longer one
//! is read through once and never kept (`oversized.rs`): rmcp gets a small message of the
//! same id instead, the tool result cut to the text the model reads (`MAX_RESULT_BYTES`) or
//! an error, so the call ends at once instead of waiting for its timeout.
//!
//! Closing follows the MCP stdio shutdown: hearth closes the server's stdin and waits, then
//! sends SIGTERM and waits, then kills it; dropping the transport kills it too.

use std::io;
use std::pin::Pin;
use std::process::Stdio;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

use super::oversized::OversizedMessage;
use super::provider::MAX_RESULT_BYTES;

/// The largest message of a server hearth reads whole. A tool result's text is cut to
/// `MAX_RESULT_BYTES` anyway, and its pictures and files are only described by size, so a
/// larger message could only carry what is dropped; tool lists of big servers stay well
/// under it. What one message costs while decoded is a few times this, per server.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;
/// Room left beside the kept text for the note saying it was cut (and an error's prefix),
/// so the whole stays within what the model reads and is not cut again.
const NOTE_ROOM: usize = 256;
/// How long each step of closing waits for the server to exit.
const EXIT_WAIT: Duration = Duration::from_secs(3);
const READ_CHUNK: usize = 16 * 1024;

pub(super) struct StdioServer {
    child: Child,
    transport: AsyncRwTransport<RoleClient, BoundedLines<ChildStdout>, ChildStdin>,
}

impl StdioServer {
    /// Start `command` with piped stdio; its stderr is handed back to be read.
    pub(super) fn spawn(
        server_id: &str,
        mut command: Command,
    ) -> io::Result<(StdioServer, Option<ChildStderr>)> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // However hearth ends, dropping the child handle ends the server with it.
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other(
                "the server's stdin and stdout were not piped",
            ));
        };
        let stderr = child.stderr.take();
        let reader = BoundedLines::new(
            server_id,
            stdout,
            MAX_MESSAGE_BYTES,
            MAX_RESULT_BYTES - NOTE_ROOM,
        );
        let transport = AsyncRwTransport::new_client(reader, stdin);
        Ok((StdioServer { child, transport }, stderr))
    }

    pub(super) fn id(&self) -> Option<u32> {
        self.child.id()
    }

    async fn exited_within(&mut self, limit: Duration) -> bool {
        tokio::time::timeout(limit, self.child.wait()).await.is_ok()
    }
}

impl Transport<RoleClient> for StdioServer {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.transport.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleClient>>> + Send {
        self.transport.receive()
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.transport.close().await?;
        if self.exited_within(EXIT_WAIT).await {
            return Ok(());
        }
        #[cfg(unix)]
        if let Some(pid) = self.child.id().and_then(|pid| i32::try_from(pid).ok()) {
            // SAFETY: kill(2) takes plain integers and touches no memory of this process;
            // the child is not reaped (`id` is still known), so the pid is still its.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            if self.exited_within(EXIT_WAIT).await {
                return Ok(());
            }
        }
        self.child.kill().await
    }
}

/// A server's stdout, line by line within `limit` bytes a line: a line over it is read
/// through an `OversizedMessage` and replaced by its stand-in (or left out).
pub(super) struct BoundedLines<R> {
    server_id: String,
    inner: R,
    limit: usize,
    text_limit: usize,
    /// The line being read, while within the limit.
    line: Vec<u8>,
    /// The line being read, once past the limit.
    oversized: Option<OversizedMessage>,
    /// Whole lines ready for the reader, from `ready_from` on.
    ready: Vec<u8>,
    ready_from: usize,
    chunk: Box<[u8]>,
    ended: bool,
}

impl<R> BoundedLines<R> {
    pub(super) fn new(server_id: &str, inner: R, limit: usize, text_limit: usize) -> Self {
        BoundedLines {
            server_id: server_id.to_owned(),
            inner,
            limit,
            text_limit,
            line: Vec::new(),
            oversized: None,
            ready: Vec::new(),
            ready_from: 0,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            ended: false,
        }
    }

    /// Take the first `read` bytes of `chunk`.
    fn take(&mut self, read: usize) {
        let mut rest = &self.chunk[..read];
        while !rest.is_empty() {
            let newline = rest.iter().position(|byte| *byte == b'\n');
            let (part, ends_line) = match newline {
                Some(at) => (&rest[..=at], true),
                None => (rest, false),
            };
            rest = &rest[part.len()..];
            if let Some(message) = &mut self.oversized {
                message.feed(part);
            } else if self.line.len() + part.len() > self.limit {
                let mut message = OversizedMessage::new(self.text_limit);
                message.feed(&self.line);
                message.feed(part);
                // Its memory goes now, not at the next line.
                self.line = Vec::new();
                self.oversized = Some(message);
            } else {
                self.line.extend_from_slice(part);
            }
            if ends_line {
                match self.oversized.take() {
                    Some(message) => {
                        let bytes = message.bytes();
                        match message.stand_in(self.limit) {
                            Some(stand_in) => {
                                tracing::warn!(server = %self.server_id, bytes, limit = self.limit, "mcp server sent a message larger than hearth reads; its call gets the start of the result or an error");
                                self.ready.extend_from_slice(&stand_in);
                                self.ready.push(b'\n');
                            }
                            None => {
                                tracing::warn!(server = %self.server_id, bytes, limit = self.limit, "mcp server sent a message larger than hearth reads and answering nothing of hearth's; dropped");
                            }
                        }
                    }
                    None => {
                        self.ready.append(&mut self.line);
                    }
                }
            }
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        self: Pin<&mut Self>,
        context: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.ready_from < this.ready.len() || out.remaining() == 0 {
                let count = out.remaining().min(this.ready.len() - this.ready_from);
                out.put_slice(&this.ready[this.ready_from..this.ready_from + count]);
                this.ready_from += count;
                if this.ready_from == this.ready.len() {
                    this.ready.clear();
                    this.ready_from = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.ended {
                // A last line without its newline is no message: rmcp drops it too.
                return Poll::Ready(Ok(()));
            }
            let mut chunk = ReadBuf::new(&mut this.chunk);
            ready!(Pin::new(&mut this.inner).poll_read(context, &mut chunk))?;
            let read = chunk.filled().len();
            if read == 0 {
                this.ended = true;
            } else {
                this.take(read);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::AsyncReadExt;

    use super::*;

    async fn lines_read(input: Vec<u8>, limit: usize) -> Vec<Value> {
        let mut reader = BoundedLines::new("test", input.as_slice(), limit, 32);
        let mut all = Vec::new();
        reader.read_to_end(&mut all).await.unwrap();
        String::from_utf8(all)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_and_a_longer_one_becomes_its_stand_in() {
        let small = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}});
        let huge = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [
            {"type": "text", "text": "x".repeat(100_000)}]}});
        let after = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
        let input = format!("{small}\n{huge}\n{after}\n").into_bytes();
        let read = lines_read(input, 1000).await;
        assert_eq!(read.len(), 3, "{read:?}");
        assert_eq!(read[0], small);
        assert_eq!(read[1]["id"], 2);
        let text = read[1]["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with(&format!("{}\n[result cut: ", "x".repeat(32))),
            "{text}"
        );
        assert_eq!(read[2], after);
    }
}
