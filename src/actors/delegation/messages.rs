//! Messages of the `Delegation` actor, and the durable form of a delegated turn that
//! stopped to ask the family member (`SuspendedDelegation`).

use actix::Message;
use serde::{Deserialize, Serialize};

use crate::ports::{Decision, Inbound, PendingConfirmation, StorageError};
use crate::tools::ToolContext;

/// Start or continue a delegation for the turn described by `parent`. One message
/// for both, so the tool needs a single address of the actor.
///
/// Sent by the `delegate_to_service` tool (`delegation/tool.rs`); handled in
/// `delegation/mod.rs`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Delegated, DelegationError>")]
pub struct Delegate {
    pub parent: ToolContext,
    pub request: DelegateRequest,
}

#[derive(Debug, Clone)]
pub enum DelegateRequest {
    /// Run `user_request` on profile `target_service_id`.
    Start {
        target_service_id: String,
        user_request: String,
    },
    /// Continue a delegated turn that stopped at a confirmation, with the member's
    /// decision (`None`: already used once, hearth stopped while acting on it).
    Resume {
        suspended: Box<SuspendedDelegation>,
        decision: Option<Decision>,
    },
}

/// How a delegation ended this time.
#[derive(Debug, Clone, PartialEq)]
pub enum Delegated {
    /// The target's final answer: the tool result.
    Answered(String),
    /// The target's turn needs the member's confirmation first.
    Suspended(Box<SuspendedDelegation>),
}

/// A delegated turn waiting for the member: stored inside the parent turn's state, so
/// it survives a restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuspendedDelegation {
    pub target_service_id: String,
    /// The profiles from the member's turn down to the target, to refuse loops again
    /// when the target's turn goes on.
    pub chain: Vec<String>,
    /// The sub-conversation's message.
    pub inbound: Inbound,
    /// The target's suspended turn: what it asks and where it stopped.
    pub confirmation: PendingConfirmation,
}

/// Why a delegation did not produce an answer. Each becomes a tool result the model
/// reads, so the messages speak to it.
#[derive(Debug, thiserror::Error)]
pub enum DelegationError {
    #[error("there is no service profile {0:?}; profiles you may delegate to: {1}")]
    UnknownTarget(String, String),
    #[error("delegation to {0:?} is blocked by configuration; do not try again")]
    Blocked(String),
    #[error(
        "delegation to {target:?} refused: it is already part of this delegation chain ({chain})"
    )]
    Loop { target: String, chain: String },
    #[error("delegation refused: at most {0} nested delegations are allowed")]
    TooDeep(usize),
    #[error("the suspended delegation to {0:?} belongs to another member or turn")]
    NotThisTurn(String),
    /// A profile id no sub-conversation can be named after (configuration refuses it).
    #[error("delegation to {0:?} refused: {1}")]
    Unnamed(String, crate::ids::IdError),
    #[error("{0:?} could not answer: {1}")]
    TargetFailed(String, String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}
