//! The turn's side of the turn journal (`ports::TurnJournal`): exactly-once tool calls.
//!
//! A turn saves its state after each LLM round that asks for tool calls, before each call
//! (the call marked in flight, with the idempotency key it is given) and after it (with
//! its result). A turn that starts and finds a saved state (hearth stopped meanwhile, or
//! the last attempt failed at the LLM) goes on from there: completed calls are replayed
//! from the saved results and never run again, and the call that was in flight gets a
//! result saying its outcome is unknown instead of being run blindly a second time. LLM
//! calls may be repeated; tool calls may not.
//!
//! A turn resumed with the member's approval is journaled the same way, and a retry of it
//! gets the same decision again: the journal alone says whether the approved call started.
//! No entry means it never did (a suspension clears the entry, and the call is marked in
//! flight before it starts), so the retry runs it; an entry goes on from there, the call in
//! flight without a result being the only one whose outcome is unknown.
//!
//! Delegated sub-turns have no inbox message of their own and are not journaled: the
//! parent's `delegate_to_service` call is, so a delegation is never run twice either.
//!
//! Among the workers of one database, a turn runs under its conversation's lease
//! (`TurnLease`): every save is fenced by the lease's generation, so a worker that lost
//! the lease writes nothing; and a call starts only once its in-flight mark is stored and
//! the worker still trusts the lease (its last heartbeat's confirmation not run out), so
//! it starts at least `workers::LEASE_MARGIN` before any other worker could take the
//! conversation over. A turn waiting on the model stops as soon as the lease is no longer
//! trusted (`until_lost`).

use std::future::Future;
use std::sync::Arc;

use super::turn::TurnState;
use crate::llm::ToolCall;
use crate::ports::{Fence, Inbound, TurnJournal};
use crate::turn::{TurnError, TurnLease};

/// The tool result of a call that was running when hearth stopped.
pub const INTERRUPTED_CALL_RESULT: &str = "hearth stopped while this ran; whether it \
     completed is unknown. Tell the family member so they can check before it is tried again.";

/// What the member hears when a plugin call completed by their answer was running when
/// hearth stopped.
pub const INTERRUPTED_PLUGIN_CALL_REPLY: &str = "I stopped while completing that request, \
     so I don't know whether it went through. Please check before asking again.";

/// `TurnState::in_flight` of the pending plugin call a member's answer completes: it runs
/// outside the tool loop.
pub(super) const FAST_PATH_CALL: &str = "hearth:pending-plugin-call";

/// The journal of one turn; a no-op for turns without an inbox message.
pub(super) struct Journal {
    port: Option<Arc<dyn TurnJournal>>,
    inbox_id: String,
    /// The conversation's lease among workers; `None` alone on the database.
    lease: Option<TurnLease>,
}

/// Where a turn loaded from the journal goes on.
pub(super) enum Recovered {
    /// The turn had its answer already: it only has to be stored and delivered.
    Answered(TurnState, String),
    /// The turn goes on from this state, once the call that was running (taken out of
    /// the pending calls) has `INTERRUPTED_CALL_RESULT` as its result.
    Continue {
        state: TurnState,
        interrupted: Option<ToolCall>,
    },
}

impl Journal {
    pub(super) fn for_turn(
        port: &Arc<dyn TurnJournal>,
        inbound: &Inbound,
        lease: Option<TurnLease>,
    ) -> Self {
        Journal {
            port: (!inbound.conversation.is_delegated()).then(|| port.clone()),
            inbox_id: inbound.id.clone(),
            lease,
        }
    }

    /// The lease generation the turn runs under (`None`: no lease, or a sub-turn).
    pub(super) fn fence(&self) -> Option<&Fence> {
        self.lease.as_ref().map(|lease| &lease.fence)
    }

    /// `Err(LeaseLost)` once this worker no longer trusts the conversation's lease: the
    /// turn takes no further step.
    pub(super) fn still_held(&self) -> Result<(), TurnError> {
        match &self.lease {
            Some(lease) if !lease.trusted() => Err(TurnError::LeaseLost(lease.fence.lease.clone())),
            _ => Ok(()),
        }
    }

    /// `work` (a wait on the model), given up as soon as the lease is no longer trusted.
    pub(super) async fn until_lost<T>(
        &self,
        work: impl Future<Output = Result<T, TurnError>>,
    ) -> Result<T, TurnError> {
        let Some(lease) = &self.lease else {
            return work.await;
        };
        tokio::select! {
            done = work => done,
            () = lease.lost() => Err(TurnError::LeaseLost(lease.fence.lease.clone())),
        }
    }

    /// The key a tool call of this turn is given, the same every time the turn is replayed:
    /// plugins and MCP servers can recognise a call they already ran.
    pub(super) fn idempotency_key(&self, call_number: u32) -> String {
        format!("{}.{call_number}", self.inbox_id)
    }

    pub(super) async fn load(&self) -> Result<Option<TurnState>, TurnError> {
        let Some(port) = &self.port else {
            return Ok(None);
        };
        let Some(saved) = port.load_turn(&self.inbox_id).await? else {
            return Ok(None);
        };
        let state = serde_json::from_value(saved)
            .map_err(|error| TurnError::BadTurnState(format!("turn journal: {error}")))?;
        Ok(Some(state))
    }

    /// Save `state` (without its images, which are read again from the attachments).
    pub(super) async fn save(&self, state: &TurnState) -> Result<(), TurnError> {
        let Some(port) = &self.port else {
            return Ok(());
        };
        let _stage = crate::metrics::StageTimer::start("journal_save");
        let value = state.to_stored_value()?;
        port.save_turn_fenced(&self.inbox_id, &value, self.fence())
            .await?;
        Ok(())
    }
}

/// What a state saved by a turn that did not finish says to do next.
pub(super) fn recover(mut state: TurnState) -> Recovered {
    if let Some(reply) = state.final_reply.clone() {
        return Recovered::Answered(state, reply);
    }
    let Some(in_flight) = state.in_flight.take() else {
        return Recovered::Continue {
            state,
            interrupted: None,
        };
    };
    if in_flight == FAST_PATH_CALL {
        return Recovered::Answered(state, INTERRUPTED_PLUGIN_CALL_REPLY.to_string());
    }
    tracing::warn!(call = %in_flight, "a tool call was running when hearth stopped; its outcome is unknown and it is not run again");
    let interrupted = state
        .pending_calls
        .first()
        .is_some_and(|call| call.id == in_flight)
        .then(|| state.pending_calls.remove(0));
    Recovered::Continue { state, interrupted }
}
