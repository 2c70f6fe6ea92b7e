//! The channel actor on tokio's paused clock, over a platform that only records what it
//! is given: a command the platform delivers again within `handled_kept_for` changes
//! nothing, and its note is forgotten by the pruning that runs every
//! `PRUNE_HANDLED_EVERY` once it is older than that.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::{Actor, Addr, AsyncContext, Context, Recipient};
use async_trait::async_trait;
use futures::future::BoxFuture;

use super::actor::{ChannelActor, ChannelDeps};
use super::adapter::{AnswerOutcome, Incoming, IncomingMessage, PlatformAdapter, ProfileCommands};
use super::delivery::DeliverySettings;
use super::messages::EventReceived;
use super::platform::{DeliveryError, Platform};
use crate::actors::channels::ChannelError;
use crate::actors::request_queue::RequestQueue;
use crate::clock::{follow_tokio_clock, now_ms};
use crate::config::FamilyMember;
use crate::family::Family;
use crate::ids::ConversationKey;
use crate::metrics::Metrics;
use crate::ports::{Attachment, ChannelState, OutboxEntry, QuotedMessage};
use crate::readiness::Readiness;
use crate::storage::in_memory::InMemoryStore;

const CHANNEL: &str = "loopback";
const HOUR: Duration = Duration::from_secs(3600);
const KEPT_FOR: Duration = Duration::from_secs(24 * 3600);

/// A platform whose events are (sender, event id, text) and whose deliveries are noted;
/// `receiving` counts its event sources running.
#[derive(Default)]
pub(super) struct Loopback {
    pub(super) delivered: Arc<Mutex<Vec<String>>>,
    pub(super) receiving: Arc<std::sync::atomic::AtomicUsize>,
    commands: ProfileCommands,
}

/// Counts one running event source while it lives.
struct Running(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[async_trait]
impl Platform for Loopback {
    type Part = String;

    fn channel(&self) -> &'static str {
        CHANNEL
    }

    fn parts(&self, entry: &OutboxEntry) -> Vec<String> {
        vec![entry.message.text.clone()]
    }

    async fn deliver(
        &self,
        _entry: &OutboxEntry,
        _index: usize,
        part: &String,
        _transaction_id: &str,
    ) -> Result<Option<String>, DeliveryError> {
        self.delivered.lock().unwrap().push(part.clone());
        Ok(None)
    }
}

#[async_trait]
impl PlatformAdapter for Loopback {
    type Event = (&'static str, &'static str, &'static str);
    type MessageSource = ();
    type AnswerSource = ();

    const TYPING_EVERY: Duration = Duration::from_secs(5);
    const NOTHING_TO_READ: &'static str = "nothing to read";
    const ALTERNATE_PREFIX: Option<char> = None;
    const PRIVATE_CHAT_HINT: &'static str = "write to me alone";

    fn member(&self, family: &Family, sender: &str) -> Option<FamilyMember> {
        family.by_id(CHANNEL, sender)
    }

    fn platform_user(&self, _sender: &str) -> Option<crate::ports::PlatformUser> {
        None
    }

    fn bot_username(&self) -> Option<String> {
        None
    }

    fn profile_commands(&self) -> &ProfileCommands {
        &self.commands
    }

    async fn read(
        &self,
        (sender, event_id, text): Self::Event,
    ) -> Result<Incoming<(), ()>, ChannelError> {
        Ok(Incoming::Message(IncomingMessage {
            sender: sender.into(),
            sender_name: None,
            conversation: ConversationKey::new(CHANNEL, &format!("{sender}-chat")).unwrap(),
            event_id: event_id.into(),
            text: text.into(),
            source: (),
        }))
    }

    async fn quote(&self, _message: &()) -> Option<QuotedMessage> {
        None
    }

    async fn attachments(&self, _message: &(), _inbox_id: &str) -> Vec<Attachment> {
        Vec::new()
    }

    fn message_handled(&self, _message: &()) {}

    async fn answer_handled(&self, _answer: &(), _outcome: AnswerOutcome) {}

    async fn tell_answerer(&self, _answer: &(), _text: &str, _refused: bool) -> bool {
        false
    }

    fn typing_place(&self, _conversation: &ConversationKey) -> Option<String> {
        None
    }

    fn show_typing(self: &Arc<Self>, _place: &str, _typing: bool) {}

    fn receive(
        self: Arc<Self>,
        _events: Recipient<EventReceived<Self::Event>>,
    ) -> BoxFuture<'static, ()> {
        // The test hands the events over itself.
        self.receiving
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let running = Running(self.receiving.clone());
        Box::pin(async move {
            let _running = running;
            std::future::pending::<()>().await
        })
    }
}

fn alice() -> FamilyMember {
    serde_yaml::from_str("id: alice").unwrap()
}

/// The channel on `store`, with a queue that is never asked (`/help` needs none).
fn channel(platform: Loopback, store: &Arc<InMemoryStore>) -> Addr<ChannelActor<Loopback>> {
    channel_of_worker(platform, store, None)
}

/// The channel on `store` of `worker`, one of the workers sharing it (`None`: the only
/// process).
pub(super) fn channel_of_worker(
    platform: Loopback,
    store: &Arc<InMemoryStore>,
    worker: Option<Arc<crate::workers::Worker>>,
) -> Addr<ChannelActor<Loopback>> {
    let metrics = Arc::new(Metrics::default());
    let deps = ChannelDeps {
        family: Arc::new(Family::new(&[alice()])),
        queue: Context::<RequestQueue>::new().address(),
        inbox: store.clone(),
        state: store.clone(),
        outbox: store.clone(),
        readiness: Arc::new(Readiness::default()),
        metrics,
        delivery: DeliverySettings {
            max_age: Duration::from_secs(48 * 3600),
        },
        own_chats: Arc::default(),
        reminders: None,
        membership: None,
        worker,
    };
    ChannelActor::new(platform, deps, KEPT_FOR).start()
}

async fn handled_notes(store: &InMemoryStore) -> Vec<String> {
    store
        .list_state(CHANNEL, "handled:")
        .await
        .unwrap()
        .into_iter()
        .map(|(key, _)| key)
        .collect()
}

/// Alice's `/help`, event `e-1`, handed to the channel (again, when it was before).
async fn help_delivered(channel: &Addr<ChannelActor<Loopback>>) {
    let help = EventReceived(("alice", "e-1", "/help"));
    channel.send(help).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
}

#[actix::test]
async fn a_handled_command_is_remembered_for_its_time_then_forgotten_by_the_pruning() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let store = Arc::new(InMemoryStore::default());
    // A note from an earlier run, older than kept: the pruning at start forgets it.
    let long_ago = now_ms() - 25 * 3600 * 1000;
    store
        .put_state(CHANNEL, "handled:e-0", &long_ago.to_string())
        .await
        .unwrap();
    let platform = Loopback::default();
    let delivered = platform.delivered.clone();
    let channel = channel(platform, &store);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(handled_notes(&store).await.is_empty());

    help_delivered(&channel).await;
    assert_eq!(handled_notes(&store).await, ["handled:e-1"]);

    // Delivered again within the day it is kept: nothing is answered twice.
    tokio::time::sleep(23 * HOUR).await;
    help_delivered(&channel).await;
    assert_eq!(handled_notes(&store).await, ["handled:e-1"]);
    assert_eq!(delivered.lock().unwrap().len(), 1, "/help answered once");

    // Older than kept: gone at the next pruning, at most PRUNE_HANDLED_EVERY later.
    tokio::time::sleep(HOUR + super::actor::PRUNE_HANDLED_EVERY).await;
    assert!(handled_notes(&store).await.is_empty());
}
