//! Two workers sharing one database, each with the same platform's channel, on tokio's
//! paused clock: one receives at a time, a message stored by the other is delivered once
//! by the leader, and when the leader stops the other takes over and delivers what was
//! left.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix::Addr;

use super::actor::ChannelActor;
use super::actor_tests::{Loopback, channel_of_worker};
use super::messages::StopChannel;
use crate::actors::channels::DeliverStored;
use crate::clock::follow_tokio_clock;
use crate::ids::ConversationKey;
use crate::ports::{Outbox, OutgoingKind, OutgoingMessage};
use crate::readiness::Readiness;
use crate::storage::Stores;
use crate::storage::in_memory::InMemoryStore;
use crate::workers::{LEASE_TIME, Worker};

struct Side {
    worker: Arc<Worker>,
    channel: Addr<ChannelActor<Loopback>>,
    delivered: Arc<std::sync::Mutex<Vec<String>>>,
    receiving: Arc<std::sync::atomic::AtomicUsize>,
}

async fn side(stores: &Stores, outbox: &Arc<InMemoryStore>) -> Side {
    let worker = Arc::new(
        Worker::join(stores.coordination.clone(), Arc::new(Readiness::default()))
            .await
            .unwrap(),
    );
    let platform = Loopback::default();
    let (delivered, receiving) = (platform.delivered.clone(), platform.receiving.clone());
    let channel = channel_of_worker(platform, outbox, Some(worker.clone()));
    Side {
        worker,
        channel,
        delivered,
        receiving,
    }
}

fn said(text: &str) -> OutgoingMessage {
    OutgoingMessage {
        conversation: ConversationKey::new("loopback", "alice-chat").unwrap(),
        inbox_id: None,
        text: text.into(),
        kind: OutgoingKind::Reply,
        reply_to_event: None,
    }
}

fn delivered(side: &Side) -> Vec<String> {
    side.delivered.lock().unwrap().clone()
}

#[actix::test]
async fn one_worker_receives_and_delivers_what_any_worker_stored_and_another_takes_over() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let stores = Stores::in_memory();
    let outbox = Arc::new(InMemoryStore::default());
    let first = side(&stores, &outbox).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let second = side(&stores, &outbox).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(first.receiving.load(Ordering::SeqCst), 1, "the first leads");
    assert_eq!(
        second.receiving.load(Ordering::SeqCst),
        0,
        "the second waits"
    );

    // A turn answered on the second worker: stored there, delivered by the leader, once.
    let message = said("from the second");
    let id = outbox.enqueue(&message).await.unwrap();
    second
        .channel
        .send(DeliverStored {
            outbox_id: id,
            message,
        })
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(delivered(&first), ["from the second"]);
    assert!(delivered(&second).is_empty());
    // The periodic looks find nothing new to send.
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(delivered(&first), ["from the second"]);

    // The leader stops; a message stored meanwhile is left for whoever leads next.
    first.channel.send(StopChannel).await.unwrap();
    first.worker.leave().await;
    assert_eq!(first.receiving.load(Ordering::SeqCst), 0);
    outbox.enqueue(&said("left behind")).await.unwrap();
    tokio::time::sleep(LEASE_TIME).await;
    assert_eq!(
        second.receiving.load(Ordering::SeqCst),
        1,
        "the second leads"
    );
    assert_eq!(delivered(&second), ["left behind"]);
    assert_eq!(delivered(&first), ["from the second"]);
}

#[actix::test]
async fn a_message_the_outbox_holds_is_delivered_once_while_wake_ups_and_looks_cross() {
    tokio::time::pause();
    let _clock = follow_tokio_clock();
    let stores = Stores::in_memory();
    let outbox = Arc::new(InMemoryStore::default());
    let first = side(&stores, &outbox).await;
    let second = side(&stores, &outbox).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (leader, follower) = if first.receiving.load(Ordering::SeqCst) == 1 {
        (&first, &second)
    } else {
        (&second, &first)
    };
    for number in 0..20 {
        let message = said(&format!("message {number}"));
        let id = outbox.enqueue(&message).await.unwrap();
        // Every message announced from the follower, some twice.
        for _ in 0..=(number % 2) {
            follower.channel.do_send(DeliverStored {
                outbox_id: id,
                message: message.clone(),
            });
        }
    }
    tokio::time::sleep(Duration::from_secs(20)).await;
    let expected: Vec<String> = (0..20).map(|number| format!("message {number}")).collect();
    assert_eq!(delivered(leader), expected, "each once, in order");
    assert!(delivered(follower).is_empty());
}
