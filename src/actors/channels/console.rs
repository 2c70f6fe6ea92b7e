//! `ConsoleChannel`: try hearth in a terminal (`hearth chat --user alice`).
//!
//! Lines typed on stdin become inbound messages of one family member; replies
//! are printed as they come. End of input (Ctrl-D) waits for the last reply.

use actix::{Actor, Addr, Context, Handler};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::actors::request_queue::{
    AnswerConfirmation, DeliverReply, ReplyKind, RequestQueue, SubmitError, SubmitInbound,
    Submitted,
};
use crate::ids::{ConfirmationId, ConversationKey, MemberId};
use crate::ports::{AnswerPlace, Inbound, now_ms};

pub struct ConsoleChannel {
    replies: mpsc::UnboundedSender<DeliverReply>,
}

impl ConsoleChannel {
    /// The actor and the stream of replies it receives, for `run_console`.
    pub fn new() -> (Self, mpsc::UnboundedReceiver<DeliverReply>) {
        let (replies, receiver) = mpsc::unbounded_channel();
        (ConsoleChannel { replies }, receiver)
    }
}

impl Actor for ConsoleChannel {
    type Context = Context<Self>;
}

impl Handler<DeliverReply> for ConsoleChannel {
    type Result = ();

    fn handle(&mut self, reply: DeliverReply, _ctx: &mut Self::Context) {
        let _ = self.replies.send(reply);
    }
}

/// Read stdin line by line until it ends, submitting each line as `member_id`,
/// and print every reply. Returns when input has ended and every answer arrived.
pub async fn run_console(
    queue: Addr<RequestQueue>,
    member_id: MemberId,
    mut replies: mpsc::UnboundedReceiver<DeliverReply>,
) -> std::io::Result<()> {
    // The member's one console conversation.
    let conversation =
        ConversationKey::new("console", member_id.as_str()).map_err(std::io::Error::other)?;
    let mut stdout = tokio::io::stdout();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    stdout
        .write_all(b"hearth is listening. Type a message, Ctrl-D to leave.\nyou> ")
        .await?;
    stdout.flush().await?;
    let mut waiting = 0usize;
    let mut input_open = true;
    // The confirmation the last reply asked for: a "yes" or "no" line answers it.
    let mut asked: Option<ConfirmationId> = None;
    while input_open || waiting > 0 {
        tokio::select! {
            line = lines.next_line(), if input_open => {
                let Some(line) = line? else {
                    input_open = false;
                    continue;
                };
                let text = line.trim();
                if text.is_empty() {
                    stdout.write_all(b"you> ").await?;
                    stdout.flush().await?;
                    continue;
                }
                if let Some(approve) = yes_or_no(text)
                    && let Some(confirmation_id) = asked.take()
                {
                    let answer = AnswerConfirmation {
                        confirmation_id,
                        member_id: member_id.clone(),
                        place: AnswerPlace::Conversation(conversation.clone()),
                        approve,
                        reply_to: None,
                    };
                    match queue.send(answer).await {
                        Ok(Ok(_)) => waiting += 1,
                        Ok(Err(error)) => {
                            stdout.write_all(format!("hearth> ({error})\nyou> ").as_bytes()).await?;
                        }
                        Err(error) => {
                            return Err(std::io::Error::other(format!("request queue stopped: {error}")));
                        }
                    }
                    stdout.flush().await?;
                    continue;
                }
                let inbound = Inbound {
                    id: Inbound::new_id(),
                    conversation: conversation.clone(),
                    member_id: member_id.clone(),
                    text: text.to_string(),
                    platform_event_id: None,
                    received_at_ms: now_ms(),
                    extras: Default::default(),
                };
                match queue.send(SubmitInbound {
                inbound,
                listener: None,
                only_answer: false,
            }).await {
                    Ok(Ok(Submitted::Accepted | Submitted::AnsweredQuestion { .. })) => waiting += 1,
                    Ok(Ok(Submitted::Duplicate(_))) => {}
                    Ok(Err(SubmitError::Busy { .. })) => {
                        stdout.write_all(b"hearth> I'm busy right now, try again in a moment.\nyou> ").await?;
                    }
                    Ok(Err(error)) => {
                        stdout.write_all(format!("hearth> (not accepted: {error})\nyou> ").as_bytes()).await?;
                    }
                    Err(error) => {
                        return Err(std::io::Error::other(format!("request queue stopped: {error}")));
                    }
                }
                stdout.flush().await?;
            }
            reply = replies.recv() => {
                let Some(reply) = reply else { break };
                if !matches!(reply.kind, ReplyKind::Delayed | ReplyKind::ConfirmationExpired { .. } | ReplyKind::Progress) {
                    waiting = waiting.saturating_sub(1);
                }
                stdout.write_all(format!("hearth> {}\n", reply.text).as_bytes()).await?;
                if let ReplyKind::AskConfirmation { confirmation_id, .. } = reply.kind {
                    stdout.write_all(b"hearth> (answer yes or no)\n").await?;
                    asked = Some(confirmation_id);
                }
                if input_open {
                    stdout.write_all(b"you> ").await?;
                }
                stdout.flush().await?;
            }
        }
    }
    Ok(())
}

/// A console answer to a confirmation question.
pub(super) fn yes_or_no(text: &str) -> Option<bool> {
    match text.to_lowercase().as_str() {
        "y" | "yes" | "ok" | "confirm" => Some(true),
        "n" | "no" | "cancel" => Some(false),
        _ => None,
    }
}
