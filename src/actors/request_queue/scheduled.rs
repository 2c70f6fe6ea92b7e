//! A scheduled task's turn: stored as an accepted message of its member by the claim that
//! fired it (so a kill right after still runs it, from the inbox at start-up), then handed
//! here to wait in its conversation's lane like any message. It runs on the task's
//! profile (`InboundExtras::profile_id`) and its answer is delivered like any turn's.
//!
//! The same message may reach the lane twice: found in the inbox at start-up and handed
//! here by a claim that committed just before. It is queued once.

use actix::{Context, Handler};

use super::{QueueStored, QueuedTurn, RequestQueue};

impl Handler<QueueStored> for RequestQueue {
    type Result = ();

    fn handle(&mut self, stored: QueueStored, ctx: &mut Context<Self>) {
        let key = stored.inbound.conversation.clone();
        let id = &stored.inbound.id;
        let running = self
            .running
            .get(&key)
            .is_some_and(|running| running.inbound.id == *id);
        if running || self.lanes.any_waiting(&key, |turn| turn.inbound.id == *id) {
            return;
        }
        self.metrics.increment(
            "hearth_inbound_total",
            &[
                ("channel", stored.inbound.conversation.channel()),
                ("outcome", "scheduled"),
            ],
        );
        self.lanes.push(&key, QueuedTurn::new(stored.inbound, 0));
        self.pump(ctx);
    }
}
