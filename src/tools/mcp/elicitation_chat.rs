//! `ChatElicitation`: MCP servers' questions asked in the family member's own chat.
//!
//! The question goes out through the request queue (`AskMember`) into the conversation
//! whose turn made the tool call, and the member's next message there is the answer.
//! A reply that does not fit the server's form is explained and asked again, a few
//! times; silence past `wait` (or the turn ending) cancels, so no tool call waits forever.

use std::time::Duration;

use actix::Recipient;
use async_trait::async_trait;
use tokio::sync::oneshot;

use super::elicitation_form::{FormReply, question_form, read_reply, render_question};
use super::{ElicitationAnswer, ElicitationHandler, ElicitationRequest};
use crate::turn::AskMember;

/// Replies that do not fit before hearth gives up and cancels.
const MAX_ATTEMPTS: usize = 3;

pub struct ChatElicitation {
    queue: Recipient<AskMember>,
    /// The longest a member may take to answer one question; the asking profile's
    /// `confirmation_timeout_seconds` (`ToolContext::question_timeout`) applies within it.
    wait: Duration,
}

impl ChatElicitation {
    pub fn new(queue: Recipient<AskMember>, wait: Duration) -> Self {
        ChatElicitation { queue, wait }
    }
}

#[async_trait]
impl ElicitationHandler for ChatElicitation {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let server = &request.server_id;
        let Some(context) = request.context else {
            // Calls of several members were in flight: asking anyone could leak the question.
            tracing::warn!(%server, "mcp question with no clear family member to ask; declined");
            return ElicitationAnswer::Decline;
        };
        let wait = context.question_timeout.min(self.wait);
        let schema = &request.requested_schema;
        let question = render_question(server, &request.message, schema);
        let intro = format!("{server} asks: {}", request.message);
        let mut asking = question.clone();
        let mut form = question_form(intro.clone(), schema);
        for _ in 0..MAX_ATTEMPTS {
            let (answer_to, answer) = oneshot::channel();
            let asked = self
                .queue
                .send(AskMember {
                    member_id: context.member_id.clone(),
                    conversation_key: context.conversation_key.clone(),
                    question: asking,
                    form: Some(form.clone()),
                    answer_to,
                })
                .await;
            match asked {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::warn!(%server, %error, "mcp question not asked; cancelled");
                    return ElicitationAnswer::Cancel;
                }
                Err(error) => {
                    tracing::warn!(%server, %error, "request queue gone; mcp question cancelled");
                    return ElicitationAnswer::Cancel;
                }
            }
            let reply = match tokio::time::timeout(wait, answer).await {
                Ok(Ok(reply)) => reply,
                // The turn ended (or hearth stops): nobody will answer this one.
                Ok(Err(_)) => return ElicitationAnswer::Cancel,
                Err(_) => {
                    tracing::info!(%server, wait_s = wait.as_secs(), "mcp question not answered in time; cancelled");
                    return ElicitationAnswer::Cancel;
                }
            };
            match read_reply(schema, &reply) {
                Ok(FormReply::Accept(content)) => return ElicitationAnswer::Accept(content),
                Ok(FormReply::Decline) => return ElicitationAnswer::Decline,
                Ok(FormReply::Cancel) => return ElicitationAnswer::Cancel,
                Err(problems) => {
                    asking = format!("That didn't fit: {problems}.\n\n{question}");
                    form.intro = format!("That didn't fit: {problems}.\n\n{intro}");
                }
            }
        }
        tracing::info!(%server, attempts = MAX_ATTEMPTS, "no fitting answer to an mcp question; cancelled");
        ElicitationAnswer::Cancel
    }
}
