//! MCP elicitation (`elicitation/create`, server → client): a server asks the person behind
//! a tool call for input. hearth hands the question to an `ElicitationHandler` (the lead's
//! asks the family member in the chat) together with the `ToolContext` of the call that
//! triggered it, which `CallTracker` works out from the calls in flight on that server.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, RequestId};

use crate::tools::ToolContext;

/// The longest hearth waits for a handler's answer before telling the server the question
/// was cancelled: a safety net, handlers are expected to bound the wait themselves.
pub const MAX_ELICITATION_WAIT: Duration = Duration::from_secs(30 * 60);

/// A server's question for the person behind a tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    pub server_id: String,
    /// What the server asks, for people.
    pub message: String,
    /// The JSON schema (a flat object of primitive properties) the answer must match.
    pub requested_schema: serde_json::Value,
    /// The family member whose tool call triggered the question, when hearth can tell.
    pub context: Option<ToolContext>,
}

/// What the person answered.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// They answered; a JSON object matching `requested_schema`.
    Accept(serde_json::Value),
    /// They chose not to answer; the server carries on without.
    Decline,
    /// They dismissed the question (or nobody answered in time).
    Cancel,
}

/// Asks a person a server's question. Without a handler hearth does not advertise the
/// elicitation capability, and declines any question a server sends anyway.
#[async_trait]
pub trait ElicitationHandler: Send + Sync {
    async fn elicit(&self, request: ElicitationRequest) -> ElicitationAnswer;
}

/// Answers one `elicitation/create` for server `server_id` through `handler`.
pub(super) async fn answer_elicitation(
    handler: Option<&Arc<dyn ElicitationHandler>>,
    server_id: &str,
    request: ElicitRequestParams,
    context: Option<ToolContext>,
) -> ElicitResult {
    let Some(handler) = handler else {
        tracing::info!(server = %server_id, "mcp server asked for input without a handler; declined");
        return ElicitResult::new(ElicitationAction::Decline);
    };
    let ElicitRequestParams::FormElicitationParams {
        message,
        requested_schema,
        ..
    } = request
    else {
        // Only form mode is advertised; a URL to open is not something to pass on blindly.
        tracing::warn!(server = %server_id, "mcp server asked for a url elicitation; declined");
        return ElicitResult::new(ElicitationAction::Decline);
    };
    let requested_schema = serde_json::to_value(&requested_schema).unwrap_or_default();
    let member = context.as_ref().map(|context| context.member_id.clone());
    tracing::info!(server = %server_id, member = ?member, "mcp server asks for input");
    let request = ElicitationRequest {
        server_id: server_id.to_owned(),
        message,
        requested_schema,
        context,
    };
    let answer = tokio::time::timeout(MAX_ELICITATION_WAIT, handler.elicit(request))
        .await
        .unwrap_or_else(|_| {
            tracing::warn!(server = %server_id, wait_s = MAX_ELICITATION_WAIT.as_secs(), "elicitation not answered in time; cancelled");
            ElicitationAnswer::Cancel
        });
    match answer {
        ElicitationAnswer::Accept(content) if content.is_object() => {
            ElicitResult::new(ElicitationAction::Accept).with_content(content)
        }
        ElicitationAnswer::Accept(content) => {
            tracing::warn!(server = %server_id, answer = %content, "elicitation answer is not a json object; declined instead");
            ElicitResult::new(ElicitationAction::Decline)
        }
        ElicitationAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
        ElicitationAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
    }
}

/// The tool calls in flight on one server connection, so a question can name its member.
///
/// MCP over stdio says nothing about which request a server's question belongs to; over
/// streamable HTTP it arrives on the response stream of that request. So: the call whose
/// stream carried it, else the only member with calls in flight, else nobody (`None`).
#[derive(Debug, Default)]
pub(super) struct CallTracker {
    inner: Mutex<Calls>,
}

#[derive(Debug, Default)]
struct Calls {
    next_key: u64,
    calls: BTreeMap<u64, TrackedCall>,
}

#[derive(Debug)]
struct TrackedCall {
    context: ToolContext,
    request_id: Option<RequestId>,
    /// Questions pending that may belong to this call: its timeout waits for people.
    questions: usize,
}

impl CallTracker {
    /// Records a call before its request is sent, so a fast question still finds it.
    pub(super) fn begin(self: &Arc<Self>, context: ToolContext) -> TrackedCallGuard {
        let mut inner = self.lock();
        let key = inner.next_key;
        inner.next_key += 1;
        inner.calls.insert(
            key,
            TrackedCall {
                context,
                request_id: None,
                questions: 0,
            },
        );
        TrackedCallGuard {
            tracker: self.clone(),
            key,
        }
    }

    /// Which calls a question arriving now may belong to (their timeouts pause while the
    /// returned guard lives), and the member to ask when that is one member.
    pub(super) fn question_asked(
        self: &Arc<Self>,
        origin: Option<&RequestId>,
    ) -> (Option<ToolContext>, QuestionGuard) {
        let mut inner = self.lock();
        let by_origin = origin.and_then(|origin| {
            inner
                .calls
                .iter()
                .find(|(_, call)| call.request_id.as_ref() == Some(origin))
                .map(|(key, _)| vec![*key])
        });
        let keys = by_origin.unwrap_or_else(|| inner.calls.keys().copied().collect());
        let mut contexts = keys.iter().filter_map(|key| inner.calls.get(key));
        let first = contexts.next().map(|call| call.context.clone());
        let context = first.filter(|first| contexts.all(|call| &call.context == first));
        for key in &keys {
            if let Some(call) = inner.calls.get_mut(key) {
                call.questions += 1;
            }
        }
        let guard = QuestionGuard {
            tracker: self.clone(),
            keys,
        };
        (context, guard)
    }

    fn lock(&self) -> MutexGuard<'_, Calls> {
        // The map stays consistent whatever panicked while holding it.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A question being asked; dropping it (answered, or abandoned) resumes the calls' timeouts.
pub(super) struct QuestionGuard {
    tracker: Arc<CallTracker>,
    keys: Vec<u64>,
}

impl Drop for QuestionGuard {
    fn drop(&mut self) {
        let mut inner = self.tracker.lock();
        for key in &self.keys {
            if let Some(call) = inner.calls.get_mut(key) {
                call.questions = call.questions.saturating_sub(1);
            }
        }
    }
}

/// One call in flight; dropping it (call finished, timed out or abandoned) forgets the call.
pub(super) struct TrackedCallGuard {
    tracker: Arc<CallTracker>,
    key: u64,
}

impl TrackedCallGuard {
    pub(super) fn set_request_id(&self, request_id: RequestId) {
        if let Some(call) = self.tracker.lock().calls.get_mut(&self.key) {
            call.request_id = Some(request_id);
        }
    }

    /// Whether a person is being asked something on behalf of this call right now.
    pub(super) fn waiting_for_person(&self) -> bool {
        self.tracker
            .lock()
            .calls
            .get(&self.key)
            .is_some_and(|call| call.questions > 0)
    }
}

impl Drop for TrackedCallGuard {
    fn drop(&mut self) {
        self.tracker.lock().calls.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ElicitationSchema, NumberOrString};

    fn context(member: &str) -> ToolContext {
        ToolContext {
            member_id: member.parse().unwrap(),
            conversation_key: crate::ids::ConversationKey::new("http", member).unwrap(),
            profile_id: "default_assistant".to_owned(),
            question_timeout: std::time::Duration::from_secs(300),
            idempotency_key: None,
        }
    }

    fn form() -> ElicitRequestParams {
        let schema: ElicitationSchema = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": { "name": { "type": "string" } },
            "required": ["name"]
        }))
        .unwrap();
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: "your name?".to_owned(),
            requested_schema: schema,
        }
    }

    #[tokio::test]
    async fn without_a_handler_questions_are_declined() {
        let answer = answer_elicitation(None, "everything", form(), Some(context("alice"))).await;
        assert_eq!(answer.action, ElicitationAction::Decline);
        assert_eq!(answer.content, None);
    }

    struct Answers(ElicitationAnswer);

    #[async_trait]
    impl ElicitationHandler for Answers {
        async fn elicit(&self, _request: ElicitationRequest) -> ElicitationAnswer {
            self.0.clone()
        }
    }

    #[tokio::test]
    async fn a_non_object_acceptance_is_declined() {
        let handler: Arc<dyn ElicitationHandler> = Arc::new(Answers(ElicitationAnswer::Accept(
            serde_json::json!("alice"),
        )));
        let answer = answer_elicitation(Some(&handler), "everything", form(), None).await;
        assert_eq!(answer.action, ElicitationAction::Decline);
    }

    #[test]
    fn questions_name_the_member_only_when_it_is_clear() {
        let tracker = Arc::new(CallTracker::default());
        assert_eq!(tracker.question_asked(None).0, None);

        let alice = tracker.begin(context("alice"));
        alice.set_request_id(RequestId::Number(7));
        let (asked, question) = tracker.question_asked(None);
        assert_eq!(asked, Some(context("alice")));
        assert!(alice.waiting_for_person());
        drop(question);
        assert!(!alice.waiting_for_person());

        let bob = tracker.begin(context("bob"));
        bob.set_request_id(RequestId::String("b".into()));
        assert_eq!(tracker.question_asked(None).0, None);
        let (asked, question) = tracker.question_asked(Some(&NumberOrString::String("b".into())));
        assert_eq!(asked, Some(context("bob")));
        assert_eq!(question.keys.len(), 1);

        drop(bob);
        let (asked, _) = tracker.question_asked(Some(&RequestId::Number(99)));
        assert_eq!(asked, Some(context("alice")));
    }
}
