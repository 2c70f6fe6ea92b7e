//! The sync loop: log in, then `/sync` forever, handing every event to the channel.
//!
//! hearth keeps its own sync position (`ChannelState`, `sync_token`) and moves it only
//! when every event of a sync was handled for good; otherwise the same sync is asked for
//! again and the inbox recognises messages it already has (their event ids). The first
//! start skips the rooms' past: old messages are never answered. A homeserver that is
//! away is retried with backoff (1 s doubling to 60 s), a sync that outlives its timeout
//! is abandoned, and readiness always says where the loop stands.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix::Recipient;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::ruma::OwnedUserId;
use matrix_sdk::ruma::events::reaction::OriginalSyncReactionEvent;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::member::{MembershipState, StrippedRoomMemberEvent};
use matrix_sdk::ruma::events::room::message::OriginalSyncRoomMessageEvent;
use matrix_sdk::{Client, Room};

use super::own_chats::OwnRooms;
use super::session::{self, LoginError};
use super::{MATRIX_CHANNEL, MatrixAdapter};
use crate::actors::channels::core::EventReceived;
use crate::backoff::{Backoff, Doubling};

/// What the sync loop hands over.
#[derive(Debug)]
pub(crate) enum MatrixEvent {
    Message {
        room: Room,
        event: Box<OriginalSyncRoomMessageEvent>,
    },
    Reaction {
        room: Room,
        event: Box<OriginalSyncReactionEvent>,
    },
    /// The bot was invited to `room` by `sender`.
    Invite { room: Room, sender: OwnedUserId },
    /// An encrypted event this device holds no key for.
    Undecryptable {
        room: Room,
        event: Box<OriginalSyncRoomEncryptedEvent>,
    },
}

/// The channel that takes the events.
type Channel = Recipient<EventReceived<MatrixEvent>>;

const TOKEN_KEY: &str = "sync_token";
const SYNC_TIMEOUT: Duration = Duration::from_secs(30);
/// A sync that takes this much longer than its long-poll timeout is given up on.
const WATCHDOG_GRACE: Duration = Duration::from_secs(30);
/// A homeserver away: 1 s doubling to 60 s.
const RETRIES: Doubling = Doubling::new(Duration::from_secs(1), Duration::from_secs(60));

/// Whether events are handed over (not during the first sync) and whether one failed.
#[derive(Default)]
struct Gate {
    live: AtomicBool,
    failed: AtomicBool,
}

/// Log in and sync until the channel stops.
pub(super) async fn run(adapter: Arc<MatrixAdapter>, channel: Channel) {
    // A worker that led before (and lost its lease) is logged in already.
    if adapter.client.user_id().is_none() {
        log_in(&adapter).await;
        session::recover(&adapter.client, &adapter.settings).await;
    }
    let gate = Arc::new(Gate::default());
    // Removed when this loop ends (this worker no longer leads the platform), so a later
    // loop does not hand each event over twice.
    let _handlers = register_handlers(&adapter.client, &channel, &gate);
    let mut token = match adapter.state.get_state(MATRIX_CHANNEL, TOKEN_KEY).await {
        Ok(token) => token,
        Err(error) => {
            tracing::error!(%error, "stored matrix sync position unreadable; starting afresh");
            None
        }
    };
    let mut failures = Backoff::new(RETRIES);
    let mut own_rooms = OwnRooms::watch(&adapter.client, adapter.own_rooms_changed.clone());
    loop {
        let first = token.is_none();
        gate.live.store(!first, Ordering::SeqCst);
        gate.failed.store(false, Ordering::SeqCst);
        let settings = match &token {
            Some(token) => SyncSettings::default()
                .token(token.clone())
                .timeout(SYNC_TIMEOUT),
            // The first sync only learns where "now" is: no waiting, nothing answered.
            None => SyncSettings::default().timeout(Duration::ZERO),
        };
        let synced = tokio::time::timeout(
            SYNC_TIMEOUT + WATCHDOG_GRACE,
            adapter.client.sync_once(settings),
        )
        .await;
        let response = match synced {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                let wait = failures.failed();
                adapter.metrics.error("matrix_sync");
                let detail = format!("cannot sync: {error}; trying again in {}s", wait.as_secs());
                adapter.readiness.set(MATRIX_CHANNEL, false, &detail);
                tracing::warn!(%error, wait_s = wait.as_secs(), "matrix sync failed");
                tokio::time::sleep(wait).await;
                continue;
            }
            Err(_) => {
                adapter.metrics.error("matrix_sync_stalled");
                adapter.readiness.set(
                    MATRIX_CHANNEL,
                    false,
                    "the last sync stalled; syncing again",
                );
                tracing::warn!("matrix sync stalled; starting a new one");
                continue;
            }
        };
        failures.reset();
        if gate.failed.load(Ordering::SeqCst) {
            // Something was not stored: the same events again, after a pause.
            tracing::warn!("a matrix event was not handled; syncing from the same position");
            tokio::time::sleep(Duration::from_secs(1)).await;
            continue;
        }
        if first {
            tracing::info!("first matrix sync: earlier messages are left unanswered");
        }
        if let Err(error) = adapter
            .state
            .put_state(MATRIX_CHANNEL, TOKEN_KEY, &response.next_batch)
            .await
        {
            tracing::warn!(%error, "matrix sync position not stored");
        }
        token = Some(response.next_batch);
        adapter
            .readiness
            .set(MATRIX_CHANNEL, true, &ready_detail(&adapter));
        own_rooms.refresh(&adapter).await;
        adapter.stranger_rooms.tidy(&adapter).await;
    }
}

fn ready_detail(adapter: &MatrixAdapter) -> String {
    let unreadable = adapter
        .metrics
        .value("hearth_matrix_undecryptable_total", &[]);
    if unreadable > 0.0 {
        format!("syncing; {unreadable} messages could not be decrypted (devices to verify)")
    } else {
        "syncing".to_string()
    }
}

/// Log in, again and again while the homeserver is away; a refusal is retried slowly
/// (a password changed back, a server fixed) and readiness shows why.
async fn log_in(adapter: &MatrixAdapter) {
    let mut failures = Backoff::new(RETRIES);
    loop {
        match session::log_in(&adapter.client, &adapter.settings).await {
            Ok(()) => return,
            Err(error) => {
                let next = failures.failed();
                let wait = match error {
                    LoginError::Unavailable(_) => next,
                    LoginError::Refused(_) | LoginError::Session { .. } => RETRIES.max * 5,
                };
                let detail = format!("{error}; trying again in {}s", wait.as_secs());
                adapter.readiness.set(MATRIX_CHANNEL, false, &detail);
                tracing::error!(%error, wait_s = wait.as_secs(), "matrix login failed");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// The sync loop's event handlers, removed from the client when dropped.
struct Handlers {
    client: Client,
    handles: Vec<matrix_sdk::event_handler::EventHandlerHandle>,
}

impl Drop for Handlers {
    fn drop(&mut self) {
        for handle in self.handles.drain(..) {
            self.client.remove_event_handler(handle);
        }
    }
}

/// Hand a sync's events to the channel, waiting until each is handled.
fn register_handlers(client: &Client, channel: &Channel, gate: &Arc<Gate>) -> Handlers {
    let own = client.user_id().map(ToOwned::to_owned);
    let forward = {
        let channel = channel.clone();
        let gate = gate.clone();
        move |event: MatrixEvent| {
            let (channel, gate) = (channel.clone(), gate.clone());
            async move {
                match channel.send(EventReceived(event)).await {
                    Ok(Ok(())) => {}
                    _ => gate.failed.store(true, Ordering::SeqCst),
                }
            }
        }
    };
    let live = {
        let gate = gate.clone();
        move || gate.live.load(Ordering::SeqCst)
    };
    let is_own = move |sender: &matrix_sdk::ruma::UserId| own.as_deref() == Some(sender);
    let mut handles = Vec::new();

    handles.push(client.add_event_handler({
        let (forward, live, is_own) = (forward.clone(), live.clone(), is_own.clone());
        move |event: OriginalSyncRoomMessageEvent, room: Room| {
            let handle = live() && !is_own(&event.sender);
            let forward = forward.clone();
            async move {
                if handle {
                    forward(MatrixEvent::Message {
                        room,
                        event: Box::new(event),
                    })
                    .await;
                }
            }
        }
    }));
    handles.push(client.add_event_handler({
        let (forward, live, is_own) = (forward.clone(), live.clone(), is_own.clone());
        move |event: OriginalSyncReactionEvent, room: Room| {
            let handle = live() && !is_own(&event.sender);
            let forward = forward.clone();
            async move {
                if handle {
                    forward(MatrixEvent::Reaction {
                        room,
                        event: Box::new(event),
                    })
                    .await;
                }
            }
        }
    }));
    handles.push(client.add_event_handler({
        let (forward, live, is_own) = (forward.clone(), live.clone(), is_own.clone());
        move |event: OriginalSyncRoomEncryptedEvent, room: Room| {
            let handle = live() && !is_own(&event.sender);
            let forward = forward.clone();
            async move {
                if handle {
                    forward(MatrixEvent::Undecryptable {
                        room,
                        event: Box::new(event),
                    })
                    .await;
                }
            }
        }
    }));
    // Invites are answered whenever they come, the first sync included.
    handles.push(client.add_event_handler({
        let forward = forward.clone();
        move |event: StrippedRoomMemberEvent, room: Room, client: Client| {
            let forward = forward.clone();
            async move {
                let for_us = client.user_id() == Some(event.state_key.as_ref());
                if for_us && event.content.membership == MembershipState::Invite {
                    forward(MatrixEvent::Invite {
                        room,
                        sender: event.sender,
                    })
                    .await;
                }
            }
        }
    }));
    Handlers {
        client: client.clone(),
        handles,
    }
}
