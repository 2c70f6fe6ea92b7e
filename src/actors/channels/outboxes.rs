//! One ordered outbox per chat or room, for the channels that send from background tasks:
//! what goes to one conversation leaves in order, and a slow or rate-limited chat never
//! holds up another.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;

use tokio::sync::mpsc;

pub(crate) struct Outboxes<K, J> {
    senders: HashMap<K, mpsc::UnboundedSender<J>>,
}

impl<K, J> Default for Outboxes<K, J> {
    fn default() -> Self {
        Outboxes {
            senders: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Clone, J> Outboxes<K, J> {
    /// Queue `job` for `key`; `start` makes the task that sends a key's jobs, when the key
    /// has none yet (or its task ended, which it never should: it is started again).
    pub(crate) fn send<F>(
        &mut self,
        key: K,
        mut job: J,
        start: impl Fn(mpsc::UnboundedReceiver<J>) -> F,
    ) where
        F: Future<Output = ()> + Send + 'static,
    {
        loop {
            let sender = self.senders.entry(key.clone()).or_insert_with(|| {
                let (sender, receiver) = mpsc::unbounded_channel();
                tokio::spawn(start(receiver));
                sender
            });
            match sender.send(job) {
                Ok(()) => return,
                Err(mpsc::error::SendError(back)) => {
                    self.senders.remove(&key);
                    job = back;
                }
            }
        }
    }
}
