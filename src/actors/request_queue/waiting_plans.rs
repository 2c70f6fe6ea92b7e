//! A new message of a member an intents plan waits for (`waiting_user`), sent without a
//! slash command, goes first to that plan's profile: an answer continues the plan, and
//! what the profile cannot place (`TurnResult::NotPlaced`) comes back and goes where it
//! was routed, as if no plan had waited.

use std::collections::HashMap;
use std::sync::Arc;

use actix::Addr;

use crate::actors::processing::ProcessingService;
use crate::ports::{PlanExecutions, now_ms};
use crate::turn::{ProcessTurn, TurnError, TurnOutcome, TurnResult};

/// What finds a waiting plan's profile.
pub(super) struct WaitingPlans {
    pub plans: Arc<dyn PlanExecutions>,
    pub services: HashMap<String, Addr<ProcessingService>>,
}

impl WaitingPlans {
    /// The service of the plan waiting for the member of `process` in its conversation,
    /// unless it is `routed_to`'s own.
    async fn service(
        &self,
        process: &ProcessTurn,
        routed_to: &str,
    ) -> Result<Option<Addr<ProcessingService>>, TurnError> {
        let inbound = &process.inbound;
        let plan = self
            .plans
            .open_plan(&inbound.conversation, &inbound.member_id)
            .await?;
        Ok(plan
            .filter(|plan| plan.awaits_member(now_ms()) && plan.profile_id != routed_to)
            .and_then(|plan| self.services.get(&plan.profile_id).cloned()))
    }
}

/// Run the new turn of `process`, routed to `service` (profile `routed_to`): first on the
/// profile of a plan waiting for its member (`waiting`, when it may), then, if that one
/// hands it back, on `service`.
pub(super) async fn process_new(
    process: ProcessTurn,
    routed_to: &str,
    service: Addr<ProcessingService>,
    waiting: Option<WaitingPlans>,
) -> Result<TurnOutcome, TurnError> {
    let plan_service = match &waiting {
        Some(waiting) => waiting.service(&process, routed_to).await?,
        None => None,
    };
    let tried_plan = plan_service.is_some();
    if let Some(plan_service) = plan_service {
        let for_plan = ProcessTurn {
            follows_plan: true,
            ..process.clone()
        };
        let outcome = plan_service
            .send(for_plan)
            .await
            .map_err(|error| TurnError::Mailbox(error.to_string()))??;
        if outcome.result != TurnResult::NotPlaced {
            return Ok(outcome);
        }
        tracing::info!(inbox_id = %process.inbound.id, profile = %routed_to,
            "not an answer to the waiting plan; routed as usual");
    }
    // The plan's profile may have journaled its own reading of the message.
    let process = ProcessTurn {
        unjournaled: process.unjournaled && !tried_plan,
        ..process
    };
    service
        .send(process)
        .await
        .map_err(|error| TurnError::Mailbox(error.to_string()))?
}
