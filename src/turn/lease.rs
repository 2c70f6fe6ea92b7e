//! The conversation lease a turn runs under, among the workers of one database
//! (`TurnLease`): what makes its writes conditional on still holding it, and what stops it
//! when this worker stops trusting its leases. A turn alone on its database has none.

use tokio::sync::watch;

use crate::ports::{Fence, Tenure};

/// The lease of the conversation a turn runs in, as the worker held it when the turn
/// started: `fence` makes the turn's journal writes (the start of every tool call among
/// them) and its end conditional on the lease's generation; `tenure` says whether this
/// worker still trusts its leases, in the term the lease was held in.
#[derive(Debug, Clone)]
pub struct TurnLease {
    pub fence: Fence,
    tenure: watch::Receiver<Tenure>,
    term: u64,
}

impl TurnLease {
    pub fn new(fence: Fence, tenure: watch::Receiver<Tenure>, term: u64) -> Self {
        TurnLease {
            fence,
            tenure,
            term,
        }
    }

    /// Whether the lease is still surely this worker's: its term goes on and the last
    /// heartbeat's confirmation has not run out.
    pub fn trusted(&self) -> bool {
        let tenure = *self.tenure.borrow();
        tenure.term == self.term && tenure.trusted()
    }

    /// Resolves once the lease is no longer trusted (at once when it is not now).
    pub async fn lost(&self) {
        let mut tenure = self.tenure.clone();
        loop {
            let now = *tenure.borrow_and_update();
            if now.term != self.term {
                return;
            }
            match now.trusted_until {
                Some(until) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(until) => return,
                        changed = tenure.changed() => if changed.is_err() { return },
                    }
                }
                None => return,
            }
        }
    }
}
