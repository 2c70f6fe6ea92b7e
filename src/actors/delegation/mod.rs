//! `Delegation`: the only way one profile reaches another (seed 004 §5.1).
//!
//! It refuses `blocked` targets, bounds the depth of nested delegations and refuses
//! loops (A → B → A), and runs the target in an isolated sub-conversation: a fresh
//! conversation per delegation, keyed under the parent turn, whose history is stored
//! there and nowhere else. The target's answer becomes the tool result. Whether the
//! member must approve first (`confirm`, or `unrestricted` with `confirm_delegation`)
//! is decided by the `delegate_to_service` tool, through the usual confirmations.

mod messages;
mod tool;

use std::collections::HashMap;
use std::sync::Arc;

use actix::fut::{ActorFutureExt, WrapFuture};
use actix::{Actor, Addr, Context, Handler, ResponseActFuture};

pub use messages::{Delegate, DelegationError};
pub use tool::{DELEGATE_TOOL, DelegationTargetInfo, DelegationTool};

use crate::actors::processing::{ProcessTurn, ProcessingService, TurnResult};
use crate::config::DelegationLevel;
use crate::ports::{ConversationMemory, Inbound, now_ms};

/// Nested delegations allowed below the turn the member started.
pub const MAX_DELEGATION_DEPTH: usize = 2;

/// The channel name of delegated turns: their conversations belong to no chat.
pub const DELEGATION_CHANNEL: &str = "delegation";

pub struct DelegationTarget {
    pub level: DelegationLevel,
    pub service: Addr<ProcessingService>,
}

pub struct Delegation {
    targets: HashMap<String, DelegationTarget>,
    memory: Arc<dyn ConversationMemory>,
    /// Sub-conversation key → the profiles of the chain that leads to it.
    chains: HashMap<String, Vec<String>>,
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
    type Result = ResponseActFuture<Self, Result<String, DelegationError>>;

    fn handle(&mut self, message: Delegate, _ctx: &mut Self::Context) -> Self::Result {
        let target_id = message.target_service_id.clone();
        let checked = (|| {
            let target = self.targets.get(&target_id).ok_or_else(|| {
                DelegationError::UnknownTarget(target_id.clone(), self.delegable())
            })?;
            if target.level == DelegationLevel::Blocked {
                return Err(DelegationError::Blocked(target_id.clone()));
            }
            // The chain so far: inherited when the parent is itself a delegated turn.
            let mut chain = self
                .chains
                .get(&message.parent.conversation_key)
                .cloned()
                .unwrap_or_else(|| vec![message.parent.profile_id.clone()]);
            if chain.contains(&target_id) {
                return Err(DelegationError::Loop {
                    target: target_id.clone(),
                    chain: chain.join(" → "),
                });
            }
            if chain.len() > MAX_DELEGATION_DEPTH {
                return Err(DelegationError::TooDeep(MAX_DELEGATION_DEPTH));
            }
            chain.push(target_id.clone());
            Ok((target.service.clone(), chain))
        })();
        let (service, chain) = match checked {
            Ok(checked) => checked,
            Err(error) => return Box::pin(actix::fut::ready(Err(error))),
        };
        let inbound = Inbound {
            id: Inbound::new_id(),
            channel: DELEGATION_CHANNEL.into(),
            // Fresh per delegation and named after the parent conversation: isolated,
            // yet traceable to the turn that asked.
            conversation_id: format!(
                "{}/{}/{}",
                message.parent.conversation_key,
                target_id,
                uuid::Uuid::now_v7()
            ),
            member_id: message.parent.member_id.clone(),
            text: message.user_request.clone(),
            platform_event_id: None,
            received_at_ms: now_ms(),
        };
        let key = inbound.conversation_key();
        tracing::info!(target = %target_id, chain = %chain.join(" → "), "delegating");
        self.chains.insert(key.clone(), chain);
        let memory = self.memory.clone();
        let turn_key = key.clone();
        let work = async move {
            let outcome = service
                .send(ProcessTurn {
                    inbound,
                    text: message.user_request,
                    slash_command: None,
                })
                .await
                .map_err(|error| {
                    DelegationError::TargetFailed(target_id.clone(), error.to_string())
                })?
                .map_err(|error| {
                    DelegationError::TargetFailed(target_id.clone(), error.to_string())
                })?;
            match outcome.result {
                TurnResult::Answered { reply, messages } => {
                    memory.append(&turn_key, &messages).await?;
                    Ok(reply)
                }
                TurnResult::NeedsConfirmation(_) => {
                    Err(DelegationError::NeedsConfirmation(target_id))
                }
            }
        };
        Box::pin(work.into_actor(self).map(move |result, act, _ctx| {
            act.chains.remove(&key);
            result
        }))
    }
}
