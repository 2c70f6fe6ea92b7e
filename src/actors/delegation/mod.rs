//! `Delegation`: the only way one profile reaches another (seed 004 §5.1).
//!
//! It refuses `blocked` targets, bounds the depth of nested delegations and refuses
//! loops (A → B → A), and runs the target in an isolated sub-conversation: a fresh
//! conversation per delegation, keyed under the parent turn, whose history is stored
//! there and nowhere else. The target's answer becomes the tool result. Whether the
//! member must approve first (`confirm`, or `unrestricted` with `confirm_delegation`)
//! is decided by the `delegate_to_service` tool, through the usual confirmations.
//!
//! When the target's turn reaches a tool needing confirmation, it answers
//! `Delegated::Suspended`: the target's suspended turn, its chain and sub-conversation,
//! which the parent turn stores in its own state and asks the member about. The
//! member's answer comes back as `DelegateRequest::Resume`: the chain is re-established
//! and the target's turn resumes with that decision; it may answer (its history is then
//! stored) or ask again.

mod messages;
mod tool;

use std::collections::HashMap;
use std::sync::Arc;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{Actor, Addr, Context, Handler, ResponseActFuture};

pub use messages::{Delegate, DelegateRequest, Delegated, DelegationError, SuspendedDelegation};
pub use tool::{DELEGATE_TOOL, DelegationTargetInfo, DelegationTool};

use crate::actors::processing::ProcessingService;
use crate::config::DelegationLevel;
use crate::ids::ConversationKey;
use crate::ports::{ConversationMemory, Decision, Inbound, PendingConfirmation, now_ms};
use crate::tools::ToolContext;
use crate::turn::{ProcessTurn, ResumeTurn, TurnResult};

/// Nested delegations allowed below the turn the member started.
pub const MAX_DELEGATION_DEPTH: usize = 2;

pub struct DelegationTarget {
    pub level: DelegationLevel,
    pub service: Addr<ProcessingService>,
}

pub struct Delegation {
    targets: HashMap<String, DelegationTarget>,
    memory: Arc<dyn ConversationMemory>,
    /// Sub-conversation → the profiles of the chain that leads to it.
    chains: HashMap<ConversationKey, Vec<String>>,
}

impl Delegation {
    pub fn new(
        targets: HashMap<String, DelegationTarget>,
        memory: Arc<dyn ConversationMemory>,
    ) -> Self {
        Delegation {
            targets,
            memory,
            chains: HashMap::new(),
        }
    }

    fn delegable(&self) -> String {
        let mut names: Vec<&str> = self
            .targets
            .iter()
            .filter(|(_, target)| target.level != DelegationLevel::Blocked)
            .map(|(id, _)| id.as_str())
            .collect();
        names.sort_unstable();
        names.join(", ")
    }
}

impl Actor for Delegation {
    type Context = Context<Self>;
}

impl Handler<Delegate> for Delegation {
    type Result = ResponseActFuture<Self, Result<Delegated, DelegationError>>;

    fn handle(&mut self, message: Delegate, _ctx: &mut Self::Context) -> Self::Result {
        let prepared = match message.request {
            DelegateRequest::Start {
                target_service_id,
                user_request,
            } => self.start_sub_turn(&message.parent, target_service_id, user_request),
            DelegateRequest::Resume {
                suspended,
                decision,
            } => self.resume_sub_turn(&message.parent, *suspended, decision),
        };
        let sub_turn = match prepared {
            Ok(sub_turn) => sub_turn,
            Err(error) => return Box::pin(actix::fut::ready(Err(error))),
        };
        let key = sub_turn.inbound.conversation.clone();
        // Nested delegations from inside the target's turn find their chain here.
        self.chains.insert(key.clone(), sub_turn.chain.clone());
        let work = sub_turn.run(self.memory.clone());
        Box::pin(work.into_actor(self).map(move |result, act, _ctx| {
            act.chains.remove(&key);
            result
        }))
    }
}

/// What the target's turn does next: start, or go on after the member's answer.
enum Step {
    Start(String),
    Resume(Box<PendingConfirmation>, Option<Decision>),
}

/// One run of a target's turn in its sub-conversation, checked and ready to go.
struct SubTurn {
    target_id: String,
    service: Addr<ProcessingService>,
    chain: Vec<String>,
    inbound: Inbound,
    step: Step,
}

impl Delegation {
    /// The target, if it may be reached now.
    fn reachable(&self, target_id: &str) -> Result<Addr<ProcessingService>, DelegationError> {
        let target = self
            .targets
            .get(target_id)
            .ok_or_else(|| DelegationError::UnknownTarget(target_id.into(), self.delegable()))?;
        if target.level == DelegationLevel::Blocked {
            return Err(DelegationError::Blocked(target_id.into()));
        }
        Ok(target.service.clone())
    }

    /// The chain down to `parent`: inherited when the parent is itself a delegated turn.
    fn chain_of(&self, parent: &ToolContext) -> Vec<String> {
        self.chains
            .get(&parent.conversation_key)
            .cloned()
            .unwrap_or_else(|| vec![parent.profile_id.clone()])
    }

    fn start_sub_turn(
        &self,
        parent: &ToolContext,
        target_id: String,
        user_request: String,
    ) -> Result<SubTurn, DelegationError> {
        let service = self.reachable(&target_id)?;
        let mut chain = self.chain_of(parent);
        if chain.contains(&target_id) {
            return Err(DelegationError::Loop {
                target: target_id,
                chain: chain.join(" → "),
            });
        }
        if chain.len() > MAX_DELEGATION_DEPTH {
            return Err(DelegationError::TooDeep(MAX_DELEGATION_DEPTH));
        }
        chain.push(target_id.clone());
        // Fresh per delegation and named after the parent conversation: isolated, yet
        // traceable to the turn that asked.
        let conversation = ConversationKey::delegated(
            &parent.conversation_key,
            &target_id,
            &uuid::Uuid::now_v7().to_string(),
        )
        .map_err(|error| DelegationError::Unnamed(target_id.clone(), error))?;
        let inbound = Inbound {
            id: Inbound::new_id(),
            conversation,
            member_id: parent.member_id.clone(),
            text: user_request.clone(),
            platform_event_id: None,
            received_at_ms: now_ms(),
            extras: Default::default(),
        };
        tracing::info!(target = %target_id, chain = %chain.join(" → "), "delegating");
        Ok(SubTurn {
            target_id,
            service,
            chain,
            inbound,
            step: Step::Start(user_request),
        })
    }

    fn resume_sub_turn(
        &self,
        parent: &ToolContext,
        suspended: SuspendedDelegation,
        decision: Option<Decision>,
    ) -> Result<SubTurn, DelegationError> {
        let SuspendedDelegation {
            target_service_id: target_id,
            chain,
            inbound,
            confirmation,
        } = suspended;
        // The stored state comes from the parent's own stored turn; still, it continues
        // only for the member, the turn and the chain it was asked in.
        let above = &chain[..chain.len().saturating_sub(1)];
        let belongs = inbound.member_id == parent.member_id
            && confirmation.member_id == parent.member_id
            && confirmation.profile_id == target_id
            && chain.last() == Some(&target_id)
            && above == self.chain_of(parent).as_slice()
            && inbound.conversation.parent() == Some(&parent.conversation_key)
            && inbound.conversation.target_profile() == Some(target_id.as_str());
        if !belongs {
            return Err(DelegationError::NotThisTurn(target_id));
        }
        // The configuration may have changed across a restart: a target blocked since
        // does not go on.
        let service = self.reachable(&target_id)?;
        tracing::info!(
            target = %target_id,
            chain = %chain.join(" → "),
            decision = decision.map_or("unknown", Decision::as_str),
            "resuming a delegated turn"
        );
        Ok(SubTurn {
            target_id,
            service,
            chain,
            inbound,
            step: Step::Resume(Box::new(confirmation), decision),
        })
    }
}

impl SubTurn {
    async fn run(self, memory: Arc<dyn ConversationMemory>) -> Result<Delegated, DelegationError> {
        let SubTurn {
            target_id,
            service,
            chain,
            inbound,
            step,
        } = self;
        let failed = |error: String| DelegationError::TargetFailed(target_id.clone(), error);
        let sent = match step {
            Step::Start(text) => {
                service
                    .send(ProcessTurn {
                        inbound: inbound.clone(),
                        text,
                        slash_command: None,
                        follows_plan: false,
                        listener: None,
                        // The parent's call, started under its lease, covers the sub-turn.
                        lease: None,
                        unjournaled: false,
                    })
                    .await
            }
            Step::Resume(confirmation, decision) => {
                service
                    .send(ResumeTurn {
                        inbound: inbound.clone(),
                        confirmation: *confirmation,
                        decision,
                        lease: None,
                    })
                    .await
            }
        };
        let outcome = sent
            .map_err(|error| failed(error.to_string()))?
            .map_err(|error| failed(error.to_string()))?;
        match outcome.result {
            TurnResult::Answered { reply, messages } => {
                memory.append(&inbound.conversation, &messages).await?;
                Ok(Delegated::Answered(reply))
            }
            // Only a message a waiting plan brought to its profile is handed back.
            TurnResult::NotPlaced => Err(failed("the profile handed the request back".into())),
            // Nothing is stored yet: the whole sub-turn waits inside the parent's state.
            TurnResult::NeedsConfirmation(confirmation) => {
                Ok(Delegated::Suspended(Box::new(SuspendedDelegation {
                    target_service_id: target_id,
                    chain,
                    inbound,
                    confirmation: *confirmation,
                })))
            }
        }
    }
}
