//! Messages of the `Delegation` actor.

use actix::Message;

use crate::ports::StorageError;
use crate::tools::ToolContext;

/// Run `user_request` on profile `target_service_id` for the turn described by `parent`.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<String, DelegationError>")]
pub struct Delegate {
    pub target_service_id: String,
    pub user_request: String,
    pub parent: ToolContext,
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
    #[error(
        "{0:?} needs the family member's confirmation for a tool, which a delegated request \
         cannot ask for; suggest they ask that profile directly"
    )]
    NeedsConfirmation(String),
    #[error("{0:?} could not answer: {1}")]
    TargetFailed(String, String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}
