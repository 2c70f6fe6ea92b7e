//! Which outbox rows this channel's delivery has taken, so that reading the outbox again
//! (a worker that just became its platform's deliverer, a wake-up from another worker, the
//! periodic look) never hands a row to a second delivery while the first still sends it,
//! nor after it was sent but before a read that began earlier returns.
//!
//! A row is known from its dispatch until it is settled. A settled row is forgotten at once
//! when no read is under way; otherwise it is kept until a read that began after it settled
//! has returned without it: that read saw the outbox note it as delivered (or given up). A
//! row sent whose note failed stays known, so it is not sent again by this run.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::time::Instant;

#[derive(Default)]
struct Known {
    /// `None` while a delivery has it; when it settled otherwise.
    rows: HashMap<i64, Option<Settled>>,
    reads_under_way: usize,
}

#[derive(Clone, Copy)]
struct Settled {
    at: Instant,
}

#[derive(Clone, Default)]
pub(crate) struct DispatchedIds {
    known: Arc<Mutex<Known>>,
}

/// One read of the outbox under way; hand it to `DispatchedIds::read_returned`.
pub(crate) struct OutboxRead {
    started: Instant,
    known: Arc<Mutex<Known>>,
}

impl Drop for OutboxRead {
    fn drop(&mut self) {
        let mut known = lock(&self.known);
        known.reads_under_way = known.reads_under_way.saturating_sub(1);
    }
}

fn lock(known: &Mutex<Known>) -> MutexGuard<'_, Known> {
    known
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl DispatchedIds {
    /// Row `id` goes to a delivery: whether it was not known (only then deliver it).
    /// Unstored messages (ids ≤ 0) are never read back, so never known.
    pub(crate) fn dispatched(&self, id: i64) -> bool {
        if id <= 0 {
            return true;
        }
        let mut known = lock(&self.known);
        if known.rows.contains_key(&id) {
            return false;
        }
        known.rows.insert(id, None);
        true
    }

    /// Whether a delivery has (or had, unnoted) row `id`.
    pub(crate) fn is_taken(&self, id: i64) -> bool {
        id > 0 && lock(&self.known).rows.contains_key(&id)
    }

    /// Row `id`'s delivery ended: delivered or given up (`noted`: the outbox says so).
    pub(crate) fn settled(&self, id: i64, noted: bool) {
        if id <= 0 {
            return;
        }
        let mut known = lock(&self.known);
        if noted && known.reads_under_way == 0 {
            known.rows.remove(&id);
        } else {
            let at = Instant::now();
            known.rows.insert(id, Some(Settled { at }));
        }
    }

    /// Row `id`'s delivery stopped before it settled (the channel stops, or this worker no
    /// longer delivers the platform): another reading of the outbox may take it.
    pub(crate) fn dropped(&self, id: i64) {
        lock(&self.known).rows.remove(&id);
    }

    /// Everything forgotten: this worker no longer delivers the platform.
    pub(crate) fn forget_all(&self) {
        lock(&self.known).rows.clear();
    }

    /// A read of the outbox begins.
    pub(crate) fn read_begins(&self) -> OutboxRead {
        lock(&self.known).reads_under_way += 1;
        OutboxRead {
            started: Instant::now(),
            known: self.known.clone(),
        }
    }

    /// `read` returned rows `returned`: what settled before it began and is not among them
    /// is forgotten (the outbox noted it).
    pub(crate) fn read_returned(&self, read: &OutboxRead, returned: &HashSet<i64>) {
        let mut known = lock(&self.known);
        known.rows.retain(|id, settled| match settled {
            // Still returned: its note failed (or came late); it stays known either way.
            Some(settled) if settled.at < read.started => returned.contains(id),
            _ => true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_row_being_delivered_is_not_taken_twice() {
        let ids = DispatchedIds::default();
        assert!(ids.dispatched(7));
        assert!(!ids.dispatched(7));
        assert!(ids.dispatched(-1));
        assert!(ids.dispatched(-1));
    }

    #[tokio::test(start_paused = true)]
    async fn a_row_settled_during_a_read_is_not_taken_from_that_read() {
        let ids = DispatchedIds::default();
        ids.dispatched(7);
        let read = ids.read_begins();
        tokio::time::advance(std::time::Duration::from_millis(5)).await;
        ids.settled(7, true);
        // The read began before the outbox noted it: it still holds the row.
        ids.read_returned(&read, &HashSet::from([7]));
        drop(read);
        assert!(!ids.dispatched(7));
        // A read begun after the note returns without it: forgotten.
        tokio::time::advance(std::time::Duration::from_millis(5)).await;
        let later = ids.read_begins();
        ids.read_returned(&later, &HashSet::new());
        drop(later);
        assert!(ids.dispatched(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_row_settled_with_no_read_under_way_is_forgotten_at_once() {
        let ids = DispatchedIds::default();
        ids.dispatched(7);
        ids.settled(7, true);
        assert!(lock(&ids.known).rows.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_row_sent_but_not_noted_is_not_sent_again() {
        let ids = DispatchedIds::default();
        ids.dispatched(7);
        ids.settled(7, false);
        tokio::time::advance(std::time::Duration::from_millis(5)).await;
        let read = ids.read_begins();
        ids.read_returned(&read, &HashSet::from([7]));
        drop(read);
        assert!(!ids.dispatched(7));
    }

    #[tokio::test(start_paused = true)]
    async fn a_row_dropped_unsettled_may_be_taken_again() {
        let ids = DispatchedIds::default();
        ids.dispatched(7);
        ids.dropped(7);
        assert!(ids.dispatched(7));
    }
}
