//! What the fake remembers: chats and their messages, the update queue with Telegram's
//! confirmation rule, files, commands, calls, scripted faults; and how a stored message is
//! rendered as a Bot API `Message`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use super::types::{Call, StoredMessage, TgChat, TgError};

/// What a held call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldFate {
    Waiting,
    /// Answered as it would have been.
    Released,
    /// Never done, answered 502: the connection went before Telegram took it.
    Lost,
}

/// One held call of a method.
pub struct Hold {
    /// Done at once, only its answer held (`hold_answer_of_next`); otherwise neither.
    pub done_first: bool,
    pub fate: watch::Receiver<HeldFate>,
}

/// Telegram's `icon_color` for a topic created without one.
const TOPIC_ICON_COLOR: u32 = 7_322_096;

pub(super) struct Shared {
    pub token: String,
    state: Mutex<State>,
    /// Woken when an update is queued and when a newer getUpdates supersedes a long poll.
    pub updates_changed: Notify,
    /// Bumped on every recorded call and every change of a chat, for the `wait_for_*` helpers.
    pub changes: watch::Sender<u64>,
    /// Set when the server is dropped, to release long polls and stalls.
    pub stopped: watch::Sender<bool>,
}

impl Shared {
    pub fn new(token: &str, username: &str) -> Shared {
        // Bot tokens are `<bot id>:<secret>`; Telegram's getMe reports that id.
        let id = token
            .split(':')
            .next()
            .and_then(|id| id.parse().ok())
            .unwrap_or(777_000_001);
        Shared {
            token: token.to_string(),
            state: Mutex::new(State::new(id, username)),
            updates_changed: Notify::new(),
            changes: watch::Sender::new(0),
            stopped: watch::Sender::new(false),
        }
    }

    // A test that panicked while holding the lock must not turn every later request into a panic.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn changed(&self) {
        self.changes.send_modify(|version| *version += 1);
    }

    /// Records a call and returns its index, for `set_response`.
    pub fn record(&self, call: Call) -> usize {
        let index = {
            let mut state = self.state();
            state.calls.push(call);
            state.calls.len() - 1
        };
        self.changed();
        index
    }

    pub fn set_response(&self, index: usize, response: Value) {
        if let Some(call) = self.state().calls.get_mut(index) {
            call.response = response;
        }
        self.changed();
    }
}

pub(super) struct Bot {
    pub id: i64,
    pub first_name: String,
    pub username: String,
}

impl Bot {
    pub fn user_json(&self) -> Value {
        json!({"id": self.id, "is_bot": true, "first_name": self.first_name, "username": self.username})
    }
}

#[derive(Clone)]
pub(super) enum Media {
    Text,
    /// `PhotoSize` objects, smallest first.
    Photo(Vec<Value>),
    Document(Value),
    /// A voice note's `Voice` object.
    Voice(Value),
    /// An audio file's `Audio` object.
    Audio(Value),
    TopicCreated(String),
}

#[derive(Clone)]
pub(super) struct Msg {
    pub id: i64,
    pub thread_id: Option<i64>,
    pub from: Value,
    pub from_id: i64,
    pub from_bot: bool,
    pub date: i64,
    pub edit_date: Option<i64>,
    pub media: Media,
    /// The text, or the caption of a photo or document.
    pub text: Option<String>,
    pub entities: Vec<Value>,
    pub reply_markup: Option<Value>,
    pub reply_to: Option<i64>,
    pub sent_text: Option<String>,
    pub parse_mode: Option<String>,
    pub edit_count: u32,
}

impl Msg {
    pub fn new(from: Value, media: Media, text: Option<String>) -> Msg {
        let from_id = from["id"].as_i64().unwrap_or_default();
        let from_bot = from["is_bot"].as_bool().unwrap_or_default();
        Msg {
            id: 0,
            thread_id: None,
            from,
            from_id,
            from_bot,
            date: now(),
            edit_date: None,
            media,
            text,
            entities: Vec::new(),
            reply_markup: None,
            reply_to: None,
            sent_text: None,
            parse_mode: None,
            edit_count: 0,
        }
    }

    fn is_caption(&self) -> bool {
        matches!(
            self.media,
            Media::Photo(_) | Media::Document(_) | Media::Voice(_) | Media::Audio(_)
        )
    }
}

pub(super) struct ChatState {
    pub chat: TgChat,
    pub next_message_id: i64,
    pub messages: BTreeMap<i64, Msg>,
}

impl ChatState {
    /// The Bot API `Message`; a replied-to message is nested one level deep, as Telegram does.
    pub fn render(&self, msg: &Msg, nest_reply: bool) -> Value {
        let mut out = json!({
            "message_id": msg.id,
            "from": msg.from,
            "chat": self.chat.to_json(),
            "date": msg.date,
        });
        if let Some(thread_id) = msg.thread_id {
            out["message_thread_id"] = json!(thread_id);
            if self.chat.is_forum {
                out["is_topic_message"] = json!(true);
            }
        }
        if nest_reply && let Some(target) = msg.reply_to.and_then(|id| self.messages.get(&id)) {
            out["reply_to_message"] = self.render(target, false);
        }
        if let Some(edit_date) = msg.edit_date {
            out["edit_date"] = json!(edit_date);
        }
        let (text_key, entities_key) = if msg.is_caption() {
            ("caption", "caption_entities")
        } else {
            ("text", "entities")
        };
        match &msg.media {
            Media::Text => {}
            Media::Photo(sizes) => out["photo"] = json!(sizes),
            Media::Document(document) => out["document"] = document.clone(),
            Media::Voice(voice) => out["voice"] = voice.clone(),
            Media::Audio(audio) => out["audio"] = audio.clone(),
            Media::TopicCreated(name) => {
                out["forum_topic_created"] = json!({"name": name, "icon_color": TOPIC_ICON_COLOR});
            }
        }
        if let Some(text) = &msg.text {
            out[text_key] = json!(text);
        }
        if !msg.entities.is_empty() {
            out[entities_key] = json!(msg.entities);
        }
        if let Some(markup) = &msg.reply_markup {
            out["reply_markup"] = markup.clone();
        }
        out
    }

    pub fn stored(&self, msg: &Msg) -> StoredMessage {
        StoredMessage {
            message_id: msg.id,
            chat_id: self.chat.id,
            thread_id: msg.thread_id,
            from_id: msg.from_id,
            from_bot: msg.from_bot,
            text: msg.text.clone(),
            sent_text: msg.sent_text.clone(),
            parse_mode: msg.parse_mode.clone(),
            entities: json!(msg.entities),
            reply_markup: msg.reply_markup.clone(),
            reply_to: msg.reply_to,
            edit_count: msg.edit_count,
            json: self.render(msg, true),
        }
    }

    /// Stores a message under the chat's next id and returns that id.
    pub fn add(&mut self, mut msg: Msg) -> i64 {
        msg.id = self.next_message_id;
        self.next_message_id += 1;
        let id = msg.id;
        self.messages.insert(id, msg);
        id
    }

    /// Makes sure forum topic `thread_id` has its root service message, which Telegram makes
    /// the `reply_to_message` of every topic message that replies to nothing else.
    pub fn ensure_topic(&mut self, thread_id: i64, name: &str, creator: Value) {
        if self.messages.contains_key(&thread_id) {
            return;
        }
        let mut root = Msg::new(creator, Media::TopicCreated(name.to_string()), None);
        root.id = thread_id;
        root.thread_id = Some(thread_id);
        self.messages.insert(thread_id, root);
        self.next_message_id = self.next_message_id.max(thread_id + 1);
    }
}

pub(super) struct StoredFile {
    pub unique_id: String,
    pub path: String,
    pub bytes: Vec<u8>,
}

pub(super) struct Webhook {
    pub url: String,
    pub max_connections: i64,
    pub allowed_updates: Option<Value>,
}

pub(super) struct State {
    pub bot: Bot,
    pub chats: HashMap<i64, ChatState>,
    /// Updates not yet confirmed, oldest first.
    pub updates: VecDeque<(i64, Value)>,
    /// Every update ever queued, by id, confirmed or not (for `redeliver`).
    pub queued: BTreeMap<i64, Value>,
    pub next_update_id: i64,
    /// Every update with a smaller id is confirmed (getUpdates was called with an offset past it).
    pub confirmed_below: i64,
    /// The last `allowed_updates` given; `None` means Telegram's default.
    pub allowed_updates: Option<Vec<String>>,
    pub webhook: Option<Webhook>,
    pub calls: Vec<Call>,
    /// Scripted failures by lower-case method name.
    pub faults: HashMap<String, VecDeque<TgError>>,
    /// Chats every call about fails with this, until faults are cleared.
    pub chat_faults: HashMap<i64, TgError>,
    /// Calls of a method held until released (`TelegramServer::hold_next`,
    /// `hold_answer_of_next`), by method.
    pub holds: HashMap<String, VecDeque<Hold>>,
    pub stalls: VecDeque<Duration>,
    pub files: HashMap<String, StoredFile>,
    pub next_file: u64,
    /// Command lists by scope and language (`setMyCommands`).
    pub commands: HashMap<String, Value>,
    /// Callback query ids the fake sent, and whether the bot answered them.
    pub callback_queries: HashMap<String, bool>,
    pub next_callback: u64,
    pub get_updates_count: usize,
    /// Bumped by every getUpdates: an older long poll still waiting then answers 409.
    pub poll_generation: u64,
    /// Long polls answered 409 because a newer one came while they waited: two pollers.
    pub superseded_polls: usize,
    pub strict_ampersand: bool,
}

impl State {
    fn new(bot_id: i64, username: &str) -> State {
        State {
            bot: Bot {
                id: bot_id,
                first_name: "Hearth".to_string(),
                username: username.to_string(),
            },
            chats: HashMap::new(),
            updates: VecDeque::new(),
            // Real update ids are large; starting far from message ids keeps the two apart.
            queued: BTreeMap::new(),
            next_update_id: 800_000_001,
            confirmed_below: 0,
            allowed_updates: None,
            webhook: None,
            calls: Vec::new(),
            faults: HashMap::new(),
            chat_faults: HashMap::new(),
            holds: HashMap::new(),
            stalls: VecDeque::new(),
            files: HashMap::new(),
            next_file: 1,
            commands: HashMap::new(),
            callback_queries: HashMap::new(),
            next_callback: 1,
            get_updates_count: 0,
            poll_generation: 0,
            superseded_polls: 0,
            strict_ampersand: true,
        }
    }

    /// Adds the chat if new (refreshing its description otherwise) and returns it.
    pub fn ensure_chat(&mut self, chat: &TgChat) -> &mut ChatState {
        let state = self.chats.entry(chat.id).or_insert_with(|| ChatState {
            chat: chat.clone(),
            next_message_id: 1,
            messages: BTreeMap::new(),
        });
        state.chat = chat.clone();
        state
    }

    /// Queues an update `{"update_id": N, <kind>: payload}` and returns N.
    pub fn queue_update(&mut self, kind: &str, payload: Value) -> i64 {
        let id = self.next_update_id;
        self.next_update_id += 1;
        let mut update = json!({"update_id": id});
        update[kind] = payload;
        self.queued.insert(id, update.clone());
        self.updates.push_back((id, update));
        id
    }

    /// Stores bytes as a downloadable file; returns `(file_id, file_unique_id)`.
    pub fn add_file(&mut self, folder: &str, extension: &str, bytes: &[u8]) -> (String, String) {
        let n = self.next_file;
        self.next_file += 1;
        let file_id = format!("BQACAgIAAxkBAAI{n:06}fake");
        let unique_id = format!("AgAD{n:04}");
        self.files.insert(
            file_id.clone(),
            StoredFile {
                unique_id: unique_id.clone(),
                path: format!("{folder}/file_{n}.{extension}"),
                bytes: bytes.to_vec(),
            },
        );
        (file_id, unique_id)
    }

    /// Confirms every update below `offset`, as a getUpdates with that offset does. A negative
    /// offset keeps only the last `-offset` updates and forgets the rest.
    pub fn confirm(&mut self, offset: i64) {
        if offset < 0 {
            let keep = usize::try_from(offset.unsigned_abs()).unwrap_or(usize::MAX);
            while self.updates.len() > keep {
                self.updates.pop_front();
            }
            let first_kept = self
                .updates
                .front()
                .map_or(self.next_update_id, |(id, _)| *id);
            self.confirmed_below = self.confirmed_below.max(first_kept);
        } else if offset > 0 {
            self.updates.retain(|(id, _)| *id >= offset);
            self.confirmed_below = self.confirmed_below.max(offset);
        }
    }

    /// `drop_pending_updates`: every queued update counts as confirmed.
    pub fn drop_pending(&mut self) {
        self.updates.clear();
        self.confirmed_below = self.next_update_id;
    }

    /// Up to `limit` pending updates of the allowed kinds. Telegram never delivers the others,
    /// so they are dropped.
    pub fn deliverable(&mut self, limit: usize) -> Vec<Value> {
        let allowed = self.allowed_updates.clone();
        self.updates.retain(|(_, update)| {
            let kind = update
                .as_object()
                .and_then(|object| object.keys().find(|key| *key != "update_id").cloned())
                .unwrap_or_default();
            match &allowed {
                Some(list) if !list.is_empty() => list.contains(&kind),
                // The default leaves out the kinds a bot must ask for.
                _ => !matches!(
                    kind.as_str(),
                    "chat_member" | "message_reaction" | "message_reaction_count"
                ),
            }
        });
        self.updates
            .iter()
            .take(limit)
            .map(|(_, update)| update.clone())
            .collect()
    }
}

pub(super) fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs() as i64)
}
