//! A family member on Matrix for tests: a real `matrix_sdk::Client` logged in to a test
//! Synapse (see `synapse.rs`) as a registered user, with its own encrypted SQLite store in a
//! temporary folder, so it talks in end-to-end encrypted rooms exactly as Element would.
//!
//! It syncs in the background from login on (retrying while the server is down, so a test can
//! restart Synapse under it) and records every message, reaction, typing notice, read receipt
//! and undecryptable event it sees; the `wait_for_*` methods poll those records and panic,
//! listing what did arrive, when the awaited one does not within `WAIT_LIMIT`.

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::EncryptionInfo;
use matrix_sdk::event_handler::RawEvent;
use matrix_sdk::room::reply::{EnforceThread, Reply};
use matrix_sdk::ruma::api::client::room::create_room::v3::Request as CreateRoomRequest;
use matrix_sdk::ruma::events::reaction::{OriginalSyncReactionEvent, ReactionEventContent};
use matrix_sdk::ruma::events::receipt::ReceiptEventContent;
use matrix_sdk::ruma::events::relation::Annotation;
use matrix_sdk::ruma::events::room::encrypted::OriginalSyncRoomEncryptedEvent;
use matrix_sdk::ruma::events::room::encryption::RoomEncryptionEventContent;
use matrix_sdk::ruma::events::room::member::MembershipState;
use matrix_sdk::ruma::events::room::message::{
    AddMentions, OriginalSyncRoomMessageEvent, RoomMessageEventContent,
    RoomMessageEventContentWithoutRelation,
};
use matrix_sdk::ruma::events::typing::TypingEventContent;
use matrix_sdk::ruma::events::{InitialStateEvent, SyncEphemeralRoomEvent};
use matrix_sdk::ruma::{EventId, OwnedEventId, OwnedRoomId, OwnedUserId, RoomId, UserId};
use matrix_sdk::{Client, Room, RoomState, SqliteStoreConfig};
use serde_json::Value;

use super::synapse::{RegisteredUser, Synapse};

/// How long a `wait_for_*` waits before failing the test. Generous: an encrypted round trip
/// takes well under a second on an idle machine, but the suite shares 2 cores.
pub const WAIT_LIMIT: Duration = Duration::from_secs(60);
/// The key that encrypts every test member's store. A raw key rather than a passphrase: a
/// passphrase goes through 200,000 PBKDF2 rounds per store, about 6 s per client in a debug
/// build, and these stores are thrown away with their folders anyway.
const STORE_KEY: [u8; 32] = *b"hearth-test-member-store-key-32b";
/// The long-poll timeout of the background sync: short, so a restarted server is noticed soon.
const SYNC_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause after a failed sync before the next try.
const SYNC_RETRY: Duration = Duration::from_millis(250);

/// An `m.room.message` the member saw (its own included), decrypted when it was encrypted.
#[derive(Clone, Debug)]
pub struct ReceivedMessage {
    pub room_id: OwnedRoomId,
    pub event_id: OwnedEventId,
    pub sender: OwnedUserId,
    /// `m.text`, `m.notice`, ...
    pub msgtype: String,
    pub body: String,
    pub formatted_body: Option<String>,
    /// `m.relates_to.rel_type`: `m.replace` for an edit, `m.thread`, ... (a plain reply has none).
    pub rel_type: Option<String>,
    /// `m.relates_to.event_id`: the edited event of an `m.replace`, the thread root of a thread.
    pub relates_to: Option<OwnedEventId>,
    /// `m.relates_to.m.in_reply_to.event_id`.
    pub in_reply_to: Option<OwnedEventId>,
    /// `m.new_content` of an edit: what the edited message now says.
    pub new_content: Option<Value>,
    /// Whether it arrived encrypted (and was decrypted).
    pub encrypted: bool,
    /// The whole (decrypted) content, for anything the fields above leave out.
    pub content: Value,
    /// When this client's sync handed it over (the Matrix benchmark's clock).
    pub seen_at: Instant,
}

impl ReceivedMessage {
    /// The body an edit sets (`m.new_content.body`), or `None` when this is not an edit.
    pub fn new_body(&self) -> Option<&str> {
        self.new_content.as_ref()?.get("body")?.as_str()
    }

    /// The formatted body an edit sets (`m.new_content.formatted_body`).
    pub fn new_formatted_body(&self) -> Option<&str> {
        self.new_content.as_ref()?.get("formatted_body")?.as_str()
    }

    fn summary(&self) -> String {
        format!(
            "{} from {} ({}{}{}): {:?}",
            self.event_id,
            self.sender,
            self.msgtype,
            self.rel_type
                .as_deref()
                .map(|rel| format!(", {rel}"))
                .unwrap_or_default(),
            if self.encrypted { ", encrypted" } else { "" },
            self.new_body().unwrap_or(&self.body)
        )
    }
}

/// An `m.reaction` (an `m.annotation`) the member saw.
#[derive(Clone, Debug)]
pub struct ReceivedReaction {
    pub room_id: OwnedRoomId,
    pub event_id: OwnedEventId,
    pub sender: OwnedUserId,
    /// The event reacted to.
    pub relates_to: OwnedEventId,
    /// The emoji (or text) of the reaction.
    pub key: String,
}

/// What the background sync saw, shared with the event handlers.
#[derive(Default)]
struct Inbox {
    messages: Vec<ReceivedMessage>,
    reactions: Vec<ReceivedReaction>,
    /// Every typing notice: who was typing in which room, in order.
    typing: Vec<(OwnedRoomId, Vec<OwnedUserId>)>,
    /// Every read receipt: (room, event, user, receipt type).
    receipts: Vec<(OwnedRoomId, OwnedEventId, OwnedUserId, String)>,
    /// Encrypted events that stayed encrypted: (room, event id, sender).
    undecryptable: Vec<(OwnedRoomId, OwnedEventId, OwnedUserId)>,
    syncs: u64,
    last_sync_error: Option<String>,
}

/// A room to create: who to invite, encrypted or not, marked as a direct chat or not.
#[derive(Clone, Debug, Default)]
pub struct NewRoom {
    pub invite: Vec<String>,
    pub encrypted: bool,
    pub is_direct: bool,
    pub name: Option<String>,
}

impl NewRoom {
    /// An end-to-end encrypted room with `user_id` invited.
    pub fn encrypted_with(user_id: &str) -> NewRoom {
        NewRoom {
            invite: vec![user_id.to_owned()],
            encrypted: true,
            ..NewRoom::default()
        }
    }

    /// An unencrypted room with `user_id` invited.
    pub fn plain_with(user_id: &str) -> NewRoom {
        NewRoom {
            invite: vec![user_id.to_owned()],
            ..NewRoom::default()
        }
    }

    /// Marked `is_direct` (a DM), as Element marks a chat started with one person.
    pub fn direct(mut self) -> NewRoom {
        self.is_direct = true;
        self
    }

    pub fn named(mut self, name: &str) -> NewRoom {
        self.name = Some(name.to_owned());
        self
    }
}

/// A logged-in member that syncs in the background until dropped.
pub struct MatrixMember {
    client: Client,
    user: RegisteredUser,
    inbox: Arc<Mutex<Inbox>>,
    sync_task: Option<tokio::task::JoinHandle<()>>,
    /// The SQLite state, crypto and event-cache stores; deleted on drop.
    store: tempfile::TempDir,
}

impl MatrixMember {
    /// Log `user` in with its password (a new device, with fresh encryption keys), sync once
    /// (which uploads the device keys, so others can encrypt for it), then keep syncing in the
    /// background.
    pub async fn login(synapse: &Synapse, user: &RegisteredUser) -> MatrixMember {
        let store = tempfile::Builder::new()
            .prefix(&format!("hearth-member-{}-", user.localpart))
            .tempdir()
            .expect("create a store folder");
        let client = Client::builder()
            .homeserver_url(synapse.base_url())
            .sqlite_store_with_config_and_cache_path(
                SqliteStoreConfig::new(store.path()).key(Some(&STORE_KEY)),
                None::<&Path>,
            )
            .build()
            .await
            .unwrap_or_else(|err| panic!("{}: building the client failed: {err}", user.user_id));
        client
            .matrix_auth()
            .login_username(&user.user_id, &user.password)
            .initial_device_display_name(&format!("hearth test member {}", user.localpart))
            .send()
            .await
            .unwrap_or_else(|err| {
                panic!(
                    "{}: login failed: {err}\nsynapse log:\n{}",
                    user.user_id,
                    synapse.log_tail()
                )
            });
        let inbox = Arc::new(Mutex::new(Inbox::default()));
        add_handlers(&client, &inbox);
        let mut member = MatrixMember {
            client,
            user: user.clone(),
            inbox,
            sync_task: None,
            store,
        };
        if let Err(err) = member.client.sync_once(SyncSettings::new()).await {
            panic!("{}: the first sync failed: {err}", member.user.user_id);
        }
        member.start_sync();
        member
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn user_id(&self) -> &str {
        &self.user.user_id
    }

    /// Sync in the background (started by `login`): one long poll after another, retrying
    /// after errors such as a stopped server. Does nothing when already syncing.
    pub fn start_sync(&mut self) {
        if self
            .sync_task
            .as_ref()
            .is_some_and(|task| !task.is_finished())
        {
            return;
        }
        let (client, inbox) = (self.client.clone(), self.inbox.clone());
        self.sync_task = Some(tokio::spawn(async move {
            let settings = SyncSettings::new().timeout(SYNC_TIMEOUT);
            loop {
                // The client keeps the last `next_batch`, so each call continues where the last
                // one stopped, across failures.
                match client.sync_once(settings.clone()).await {
                    Ok(_) => inbox.lock().unwrap().syncs += 1,
                    Err(err) => {
                        inbox.lock().unwrap().last_sync_error = Some(err.to_string());
                        tokio::time::sleep(SYNC_RETRY).await;
                    }
                }
            }
        }));
    }

    pub fn stop_sync(&mut self) {
        if let Some(task) = self.sync_task.take() {
            task.abort();
        }
    }

    /// Create a room; returns its id once created (invites are sent with the creation).
    pub async fn create_room(&self, spec: NewRoom) -> OwnedRoomId {
        let mut request = CreateRoomRequest::new();
        request.invite = spec
            .invite
            .iter()
            .map(|id| UserId::parse(id.as_str()).expect("a valid user id to invite"))
            .collect();
        request.is_direct = spec.is_direct;
        request.name = spec.name.clone();
        if spec.encrypted {
            request.initial_state = vec![
                InitialStateEvent::with_empty_state_key(
                    RoomEncryptionEventContent::with_recommended_defaults(),
                )
                .to_raw_any(),
            ];
        }
        let room = self
            .client
            .create_room(request)
            .await
            .unwrap_or_else(|err| panic!("{}: creating {spec:?} failed: {err}", self.user_id()));
        room.room_id().to_owned()
    }

    /// Wait until the member is invited to some room it has not joined; returns that room.
    pub async fn wait_for_invite(&self) -> OwnedRoomId {
        self.wait_until("an invitation", || {
            self.client
                .invited_rooms()
                .first()
                .map(|room| room.room_id().to_owned())
        })
        .await
    }

    /// Wait for the invitation to `room_id` to arrive by sync, then accept it.
    pub async fn join(&self, room_id: &RoomId) {
        let room = self
            .wait_until(&format!("an invitation to {room_id}"), || {
                self.client
                    .get_room(room_id)
                    .filter(|room| room.state() == RoomState::Invited)
            })
            .await;
        room.join()
            .await
            .unwrap_or_else(|err| panic!("{}: joining {room_id} failed: {err}", self.user_id()));
    }

    /// Wait until this member's sync shows `user_id` joined to `room_id`.
    pub async fn wait_until_joined(&self, room_id: &RoomId, user_id: &str) {
        let user_id = UserId::parse(user_id).expect("a valid user id");
        let what = format!("{user_id} joined to {room_id}");
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            if let Some(room) = self.client.get_room(room_id)
                && let Ok(Some(member)) = room.get_member_no_sync(&user_id).await
                && *member.membership() == MembershipState::Join
            {
                return;
            }
            self.check_deadline(&what, deadline);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// The room, which the member must have joined.
    pub fn room(&self, room_id: &RoomId) -> Room {
        self.client
            .get_room(room_id)
            .unwrap_or_else(|| panic!("{}: does not know room {room_id}", self.user_id()))
    }

    /// Send a plain text message; returns its event id.
    pub async fn send_text(&self, room_id: &RoomId, body: &str) -> OwnedEventId {
        self.send(room_id, RoomMessageEventContent::text_plain(body))
            .await
    }

    /// Send `bytes` as an image named `file_name` with a caption (encrypted in an
    /// encrypted room, as any client would).
    pub async fn send_image(
        &self,
        room_id: &RoomId,
        file_name: &str,
        bytes: Vec<u8>,
        caption: &str,
    ) -> OwnedEventId {
        let config = matrix_sdk::attachment::AttachmentConfig::new().caption(Some(
            matrix_sdk::ruma::events::room::message::TextMessageEventContent::plain(caption),
        ));
        self.room(room_id)
            .send_attachment(file_name, &mime::IMAGE_PNG, bytes, config)
            .await
            .expect("the image is sent")
            .event_id
    }

    /// Send `bytes` (OGG/Opus) as a voice message (`m.audio` with the MSC3245 voice marker)
    /// of `duration`, encrypted in an encrypted room, as Element records one.
    pub async fn send_voice(
        &self,
        room_id: &RoomId,
        file_name: &str,
        bytes: Vec<u8>,
        duration: std::time::Duration,
    ) -> OwnedEventId {
        let info = matrix_sdk::attachment::BaseAudioInfo {
            duration: Some(duration),
            size: u32::try_from(bytes.len()).ok().map(Into::into),
            waveform: None,
        };
        let config = matrix_sdk::attachment::AttachmentConfig::new()
            .info(matrix_sdk::attachment::AttachmentInfo::Voice(info));
        let ogg: mime::Mime = "audio/ogg".parse().expect("a mime type");
        self.room(room_id)
            .send_attachment(file_name, &ogg, bytes, config)
            .await
            .expect("the voice message is sent")
            .event_id
    }

    /// Upload `bytes` unencrypted and send them as an image whose event states
    /// `claimed_size` (true or not, or none), as a careless or hostile client could.
    pub async fn send_image_claiming(
        &self,
        room_id: &RoomId,
        file_name: &str,
        bytes: Vec<u8>,
        claimed_size: Option<u64>,
    ) -> OwnedEventId {
        let uploaded = self
            .client
            .media()
            .upload(&mime::IMAGE_PNG, bytes, None)
            .await
            .expect("the image is uploaded");
        let mut info = serde_json::json!({"mimetype": "image/png"});
        if let Some(size) = claimed_size {
            info["size"] = size.into();
        }
        let content = serde_json::json!({
            "msgtype": "m.image",
            "body": file_name,
            "url": uploaded.content_uri.to_string(),
            "info": info,
        });
        self.room(room_id)
            .send_raw("m.room.message", content)
            .await
            .expect("the image event is sent")
            .response
            .event_id
    }

    /// Send a rich reply (`m.in_reply_to`) to `event_id`, mentioning its sender.
    pub async fn send_reply(
        &self,
        room_id: &RoomId,
        event_id: &EventId,
        body: &str,
    ) -> OwnedEventId {
        let reply = Reply {
            event_id: event_id.to_owned(),
            enforce_thread: EnforceThread::Unthreaded,
            add_mentions: AddMentions::Yes,
        };
        let content = self
            .room(room_id)
            .make_reply_event(
                RoomMessageEventContentWithoutRelation::text_plain(body),
                reply,
            )
            .await
            .unwrap_or_else(|err| panic!("{}: making a reply failed: {err}", self.user_id()));
        self.send(room_id, content).await
    }

    /// React to `event_id` with `key` (an emoji). Reactions go out unencrypted even in encrypted
    /// rooms, as matrix-sdk (and Element) send them.
    pub async fn send_reaction(
        &self,
        room_id: &RoomId,
        event_id: &EventId,
        key: &str,
    ) -> OwnedEventId {
        let content =
            ReactionEventContent::new(Annotation::new(event_id.to_owned(), key.to_owned()));
        match self.room(room_id).send(content).await {
            Ok(sent) => sent.response.event_id,
            Err(err) => panic!("{}: reacting in {room_id} failed: {err}", self.user_id()),
        }
    }

    async fn send(&self, room_id: &RoomId, content: RoomMessageEventContent) -> OwnedEventId {
        match self.room(room_id).send(content).await {
            Ok(sent) => sent.response.event_id,
            Err(err) => panic!("{}: sending to {room_id} failed: {err}", self.user_id()),
        }
    }

    /// Every message seen so far, in arrival order.
    pub fn messages(&self) -> Vec<ReceivedMessage> {
        self.inbox.lock().unwrap().messages.clone()
    }

    /// Wait for a message from `sender` for which `matches` holds (already seen ones count);
    /// returns the first such.
    pub async fn wait_for_message(
        &self,
        sender: &str,
        matches: impl Fn(&ReceivedMessage) -> bool,
    ) -> ReceivedMessage {
        self.wait_until(&format!("a matching message from {sender}"), || {
            let inbox = self.inbox.lock().unwrap();
            inbox
                .messages
                .iter()
                .find(|message| message.sender.as_str() == sender && matches(message))
                .cloned()
        })
        .await
    }

    /// Every reaction to `event_id` seen so far.
    pub fn reactions_to(&self, event_id: &EventId) -> Vec<ReceivedReaction> {
        let inbox = self.inbox.lock().unwrap();
        inbox
            .reactions
            .iter()
            .filter(|reaction| reaction.relates_to == event_id)
            .cloned()
            .collect()
    }

    /// Wait until at least `count` reactions to `event_id` arrived; returns all of them.
    pub async fn wait_for_reactions(
        &self,
        event_id: &EventId,
        count: usize,
    ) -> Vec<ReceivedReaction> {
        self.wait_until(&format!("{count} reaction(s) to {event_id}"), || {
            let reactions = self.reactions_to(event_id);
            (reactions.len() >= count).then_some(reactions)
        })
        .await
    }

    /// Wait for a typing notice in `room_id` in which `user_id` is (`typing`) or is no longer
    /// (`!typing`) typing.
    pub async fn wait_for_typing(&self, room_id: &RoomId, user_id: &str, typing: bool) {
        let what = format!("{user_id} typing={typing} in {room_id}");
        self.wait_until(&what, || {
            let inbox = self.inbox.lock().unwrap();
            inbox
                .typing
                .iter()
                .any(|(room, users)| {
                    room == room_id && users.iter().any(|user| user.as_str() == user_id) == typing
                })
                .then_some(())
        })
        .await
    }

    /// Wait for a read receipt (`m.read` or `m.read.private`) by `user_id` on `event_id`.
    pub async fn wait_for_read_receipt(&self, room_id: &RoomId, user_id: &str, event_id: &EventId) {
        let what = format!("a read receipt by {user_id} on {event_id}");
        self.wait_until(&what, || {
            let inbox = self.inbox.lock().unwrap();
            inbox
                .receipts
                .iter()
                .any(|(room, event, user, _)| {
                    room == room_id && event == event_id && user.as_str() == user_id
                })
                .then_some(())
        })
        .await
    }

    /// Encrypted events the member could not decrypt: (room, event id, sender).
    pub fn undecryptable(&self) -> Vec<(OwnedRoomId, OwnedEventId, OwnedUserId)> {
        self.inbox.lock().unwrap().undecryptable.clone()
    }

    /// Poll `found` every 25 ms until it yields a value; panics with a report after `WAIT_LIMIT`.
    async fn wait_until<T>(&self, what: &str, mut found: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT_LIMIT;
        loop {
            if let Some(value) = found() {
                return value;
            }
            self.check_deadline(what, deadline);
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    fn check_deadline(&self, what: &str, deadline: Instant) {
        if Instant::now() < deadline {
            return;
        }
        let inbox = self.inbox.lock().unwrap();
        let messages: Vec<String> = inbox
            .messages
            .iter()
            .map(ReceivedMessage::summary)
            .collect();
        panic!(
            "{}: gave up after {WAIT_LIMIT:?} waiting for {what}\n  syncs: {}, last sync error: \
             {:?}\n  messages seen:\n    {}\n  reactions seen: {:?}\n  undecryptable: {:?}",
            self.user_id(),
            inbox.syncs,
            inbox.last_sync_error,
            messages.join("\n    "),
            inbox
                .reactions
                .iter()
                .map(|reaction| format!("{} on {}", reaction.key, reaction.relates_to))
                .collect::<Vec<_>>(),
            inbox.undecryptable,
        );
    }
}

impl Drop for MatrixMember {
    fn drop(&mut self) {
        self.stop_sync();
    }
}

/// Record what the sync delivers. Handlers run for decrypted events with the decrypted JSON.
fn add_handlers(client: &Client, inbox: &Arc<Mutex<Inbox>>) {
    let messages = inbox.clone();
    client.add_event_handler(
        move |event: OriginalSyncRoomMessageEvent,
              room: Room,
              raw: RawEvent,
              encryption: Option<EncryptionInfo>| {
            let inbox = messages.clone();
            async move {
                let json: Value = serde_json::from_str(raw.get()).unwrap_or_default();
                let message = received_message(&room, &event, json, encryption.is_some());
                inbox.lock().unwrap().messages.push(message);
            }
        },
    );
    let reactions = inbox.clone();
    client.add_event_handler(move |event: OriginalSyncReactionEvent, room: Room| {
        let inbox = reactions.clone();
        async move {
            inbox.lock().unwrap().reactions.push(ReceivedReaction {
                room_id: room.room_id().to_owned(),
                event_id: event.event_id,
                sender: event.sender,
                relates_to: event.content.relates_to.event_id,
                key: event.content.relates_to.key,
            });
        }
    });
    let typing = inbox.clone();
    client.add_event_handler(
        move |event: SyncEphemeralRoomEvent<TypingEventContent>, room: Room| {
            let inbox = typing.clone();
            async move {
                let users = event.content.user_ids;
                inbox
                    .lock()
                    .unwrap()
                    .typing
                    .push((room.room_id().to_owned(), users));
            }
        },
    );
    let receipts = inbox.clone();
    client.add_event_handler(
        move |event: SyncEphemeralRoomEvent<ReceiptEventContent>, room: Room| {
            let inbox = receipts.clone();
            async move {
                let mut inbox = inbox.lock().unwrap();
                for (event_id, by_type) in event.content.0 {
                    for (receipt_type, users) in by_type {
                        for user in users.into_keys() {
                            inbox.receipts.push((
                                room.room_id().to_owned(),
                                event_id.clone(),
                                user,
                                receipt_type.to_string(),
                            ));
                        }
                    }
                }
            }
        },
    );
    // The SDK hands encrypted events to handlers as such only when it could not decrypt them.
    let undecryptable = inbox.clone();
    client.add_event_handler(move |event: OriginalSyncRoomEncryptedEvent, room: Room| {
        let inbox = undecryptable.clone();
        async move {
            inbox.lock().unwrap().undecryptable.push((
                room.room_id().to_owned(),
                event.event_id,
                event.sender,
            ));
        }
    });
}

/// The fields tests look at, read from the event's JSON so that nothing is lost to ruma's
/// typed view (relations, `m.new_content`, unknown keys).
fn received_message(
    room: &Room,
    event: &OriginalSyncRoomMessageEvent,
    json: Value,
    encrypted: bool,
) -> ReceivedMessage {
    let content = json.get("content").cloned().unwrap_or(Value::Null);
    let text = |value: &Value| value.as_str().map(str::to_owned);
    let relation = content.get("m.relates_to");
    let event_id_at = |value: Option<&Value>| {
        value
            .and_then(Value::as_str)
            .and_then(|id| EventId::parse(id).ok())
    };
    ReceivedMessage {
        room_id: room.room_id().to_owned(),
        event_id: event.event_id.clone(),
        sender: event.sender.clone(),
        msgtype: event.content.msgtype().to_owned(),
        body: event.content.body().to_owned(),
        formatted_body: content.get("formatted_body").and_then(text),
        rel_type: relation.and_then(|rel| rel.get("rel_type")).and_then(text),
        relates_to: event_id_at(relation.and_then(|rel| rel.get("event_id"))),
        in_reply_to: event_id_at(
            relation
                .and_then(|rel| rel.get("m.in_reply_to"))
                .and_then(|reply| reply.get("event_id")),
        ),
        new_content: content.get("m.new_content").cloned(),
        encrypted,
        content,
        seen_at: Instant::now(),
    }
}
