//! The scheduling state of the request queue, free of I/O so it can be tested alone:
//! one FIFO lane per conversation, at most one running turn per lane, and at
//! most `max_running` lanes running at once, served in the order they became ready.
//! A lane can be paused: it starts nothing new until unpaused (while `/cancel` changes
//! what the conversation's turns work on).

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LaneState {
    /// Not running; if it has items it is in the ready list.
    Idle,
    Running,
    /// Waiting for a retry timer; its head item is the one to retry.
    Held,
}

struct Lane<T> {
    items: VecDeque<T>,
    state: LaneState,
    /// Starts no item until unpaused; its running item, if any, goes on.
    paused: bool,
}

impl<T> Lane<T> {
    fn new() -> Self {
        Lane {
            items: VecDeque::new(),
            state: LaneState::Idle,
            paused: false,
        }
    }
}

/// Lanes of items `T`, one per conversation `K`.
pub struct Lanes<K, T> {
    lanes: HashMap<K, Lane<T>>,
    ready: VecDeque<K>,
    running: usize,
    queued: usize,
    max_running: usize,
}

impl<K: Eq + Hash + Clone, T> Lanes<K, T> {
    pub fn new(max_running: usize) -> Self {
        Lanes {
            lanes: HashMap::new(),
            ready: VecDeque::new(),
            running: 0,
            queued: 0,
            max_running: max_running.max(1),
        }
    }

    /// Items waiting plus items running.
    pub fn len(&self) -> usize {
        self.queued + self.running
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn running(&self) -> usize {
        self.running
    }

    pub fn push(&mut self, key: &K, item: T) {
        let lane = self.lanes.entry(key.clone()).or_insert_with(Lane::new);
        lane.items.push_back(item);
        self.queued += 1;
        if lane.state == LaneState::Idle && lane.items.len() == 1 && !lane.paused {
            self.ready.push_back(key.clone());
        }
    }

    /// Whether `key` has a lane: an item waiting, running or held for a retry, or a pause.
    pub fn has_lane(&self, key: &K) -> bool {
        self.lanes.contains_key(key)
    }

    /// Whether an item of `key` that waits (not the running one) is `wanted`.
    pub fn any_waiting(&self, key: &K, wanted: impl Fn(&T) -> bool) -> bool {
        self.lanes
            .get(key)
            .is_some_and(|lane| lane.items.iter().any(wanted))
    }

    /// The next item allowed to run, marking its lane running.
    pub fn next_runnable(&mut self) -> Option<(K, T)> {
        if self.running >= self.max_running {
            return None;
        }
        let key = self.ready.pop_front()?;
        let lane = self
            .lanes
            .get_mut(&key)
            .expect("a ready lane exists until it is finished empty");
        let item = lane.items.pop_front().expect("a ready lane has an item");
        lane.state = LaneState::Running;
        self.running += 1;
        self.queued -= 1;
        Some((key, item))
    }

    /// The running item of `key` is done; its next item becomes ready.
    pub fn finish(&mut self, key: &K) {
        let Some(lane) = self.lanes.get_mut(key) else {
            return;
        };
        if lane.state != LaneState::Running {
            return;
        }
        self.running -= 1;
        lane.state = LaneState::Idle;
        if lane.paused {
            return;
        }
        if lane.items.is_empty() {
            self.lanes.remove(key);
        } else {
            self.ready.push_back(key.clone());
        }
    }

    /// The running item of `key` is done and its lane goes (another runs the conversation
    /// now): what waited in it.
    pub fn finish_and_drop(&mut self, key: &K) -> Vec<T> {
        let Some(lane) = self.lanes.remove(key) else {
            return Vec::new();
        };
        if lane.state == LaneState::Running {
            self.running -= 1;
        }
        self.queued -= lane.items.len();
        self.ready.retain(|ready| ready != key);
        lane.items.into_iter().collect()
    }

    /// Everything waiting in `key`'s lane goes (another worker may run the conversation
    /// now): what waited. An item running there runs on, and the lane ends when it
    /// finishes.
    pub fn drop_waiting(&mut self, key: &K) -> Vec<T> {
        match self.lanes.get_mut(key) {
            Some(lane) if lane.state == LaneState::Running => {
                self.queued -= lane.items.len();
                lane.items.drain(..).collect()
            }
            Some(_) => self.finish_and_drop(key),
            None => Vec::new(),
        }
    }

    /// The running item of `key` failed and will be retried: it goes back to the
    /// head of its lane, and the lane waits until `release`.
    pub fn hold(&mut self, key: &K, item: T) {
        let Some(lane) = self.lanes.get_mut(key) else {
            return;
        };
        if lane.state != LaneState::Running {
            return;
        }
        self.running -= 1;
        self.queued += 1;
        lane.items.push_front(item);
        lane.state = LaneState::Held;
    }

    pub fn release(&mut self, key: &K) {
        if let Some(lane) = self.lanes.get_mut(key)
            && lane.state == LaneState::Held
        {
            lane.state = LaneState::Idle;
            if !lane.paused {
                self.ready.push_back(key.clone());
            }
        }
    }

    /// `key`'s lane starts nothing until `unpause`; an item running there goes on.
    pub fn pause(&mut self, key: &K) {
        self.lanes
            .entry(key.clone())
            .or_insert_with(Lane::new)
            .paused = true;
        self.ready.retain(|ready| ready != key);
    }

    pub fn is_paused(&self, key: &K) -> bool {
        self.lanes.get(key).is_some_and(|lane| lane.paused)
    }

    /// `key`'s lane may start its next item again.
    pub fn unpause(&mut self, key: &K) {
        let Some(lane) = self.lanes.get_mut(key) else {
            return;
        };
        if !lane.paused {
            return;
        }
        lane.paused = false;
        if lane.state != LaneState::Idle {
            return;
        }
        if lane.items.is_empty() {
            self.lanes.remove(key);
        } else {
            self.ready.push_back(key.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_conversation_runs_in_order_one_at_a_time() {
        let mut lanes = Lanes::new(8);
        lanes.push(&"a", 1);
        lanes.push(&"a", 2);
        assert_eq!(lanes.next_runnable(), Some(("a", 1)));
        assert_eq!(
            lanes.next_runnable(),
            None,
            "second item waits for the first"
        );
        lanes.finish(&"a");
        assert_eq!(lanes.next_runnable(), Some(("a", 2)));
        lanes.finish(&"a");
        assert!(lanes.is_empty());
    }

    #[test]
    fn conversations_run_in_parallel_up_to_the_bound() {
        let mut lanes = Lanes::new(2);
        for key in ["a", "b", "c"] {
            lanes.push(&key, key);
        }
        assert_eq!(lanes.next_runnable().unwrap().0, "a");
        assert_eq!(lanes.next_runnable().unwrap().0, "b");
        assert_eq!(lanes.next_runnable(), None);
        assert_eq!(lanes.len(), 3);
        lanes.finish(&"b");
        assert_eq!(lanes.next_runnable().unwrap().0, "c");
    }

    #[test]
    fn a_held_item_is_retried_first_after_release() {
        let mut lanes = Lanes::new(1);
        lanes.push(&"a", 1);
        lanes.push(&"a", 2);
        lanes.push(&"b", 3);
        let (_, first) = lanes.next_runnable().unwrap();
        lanes.hold(&"a", first);
        assert_eq!(lanes.next_runnable(), Some(("b", 3)), "a is held");
        lanes.finish(&"b");
        assert_eq!(lanes.next_runnable(), None);
        lanes.release(&"a");
        assert_eq!(lanes.next_runnable(), Some(("a", 1)));
        assert_eq!(lanes.len(), 2);
    }

    #[test]
    fn a_lane_dropped_while_running_gives_back_what_waited_and_frees_its_place() {
        let mut lanes: Lanes<&str, u32> = Lanes::new(1);
        lanes.push(&"a", 1);
        lanes.push(&"a", 2);
        lanes.push(&"b", 3);
        assert_eq!(lanes.next_runnable(), Some(("a", 1)));
        assert_eq!(lanes.finish_and_drop(&"a"), vec![2]);
        assert!(!lanes.has_lane(&"a"));
        assert_eq!(lanes.len(), 1);
        assert_eq!(lanes.next_runnable(), Some(("b", 3)));
        assert_eq!(lanes.next_runnable(), None);
    }

    #[test]
    fn a_paused_lane_starts_nothing_until_unpaused() {
        let mut lanes = Lanes::new(8);
        lanes.push(&"a", 1);
        lanes.push(&"a", 2);
        lanes.push(&"b", 3);
        assert_eq!(lanes.next_runnable(), Some(("a", 1)));
        // Paused while its item runs: that one goes on, the next waits.
        lanes.pause(&"a");
        assert!(lanes.is_paused(&"a"));
        lanes.finish(&"a");
        assert_eq!(lanes.next_runnable(), Some(("b", 3)), "a waits");
        assert_eq!(lanes.next_runnable(), None);
        lanes.push(&"a", 4);
        assert_eq!(lanes.next_runnable(), None, "still paused");
        lanes.unpause(&"a");
        assert_eq!(lanes.next_runnable(), Some(("a", 2)));
        lanes.finish(&"a");
        assert_eq!(lanes.next_runnable(), Some(("a", 4)));
        lanes.finish(&"a");
        lanes.finish(&"b");
        assert!(lanes.is_empty());

        // An empty lane paused and unpaused is gone; a held one waits for both.
        lanes.pause(&"c");
        lanes.unpause(&"c");
        assert!(!lanes.is_paused(&"c"));
        lanes.push(&"d", 5);
        let (_, first) = lanes.next_runnable().unwrap();
        lanes.hold(&"d", first);
        lanes.pause(&"d");
        lanes.release(&"d");
        assert_eq!(lanes.next_runnable(), None, "released but paused");
        lanes.unpause(&"d");
        assert_eq!(lanes.next_runnable(), Some(("d", 5)));
    }
}
