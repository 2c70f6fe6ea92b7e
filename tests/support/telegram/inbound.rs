//! Pushing what users do: messages of every kind (stored in their chat and queued as
//! `message` updates) and presses of inline buttons (`callback_query` updates).

use serde_json::{Value, json};

use super::state::{Media, Msg};
use super::types::{Pushed, TgChat, TgUser};
use super::{TelegramServer, media};

/// A message a user sends, for `TelegramServer::push_message`.
#[derive(Debug, Clone, Default)]
pub struct InboundMessage {
    /// The text, or the caption of a photo, document, voice note or audio file.
    pub text: Option<String>,
    /// `entities` (or `caption_entities`), offsets in UTF-16 code units.
    pub entities: Vec<Value>,
    /// A forum topic; other chats ignore it.
    pub thread_id: Option<i64>,
    pub reply_to: Option<i64>,
    attachment: Attachment,
}

#[derive(Debug, Clone, Default)]
enum Attachment {
    #[default]
    None,
    Photo(Vec<u8>),
    Document {
        file_name: String,
        mime_type: String,
        bytes: Vec<u8>,
    },
    /// A voice note: OGG/Opus as Telegram's apps record it, no file name.
    Voice {
        bytes: Vec<u8>,
        duration_seconds: u32,
    },
    /// A music or audio file sent as audio.
    Audio {
        file_name: String,
        mime_type: String,
        bytes: Vec<u8>,
        duration_seconds: u32,
    },
}

impl InboundMessage {
    pub fn text(text: &str) -> InboundMessage {
        InboundMessage {
            text: Some(text.to_string()),
            ..InboundMessage::default()
        }
    }

    /// `/command[@bot] [args]` with its `bot_command` entity; `command` may omit the slash.
    pub fn command(command: &str, bot_username: Option<&str>, args: &str) -> InboundMessage {
        let mut head = format!("/{}", command.trim_start_matches('/'));
        if let Some(bot) = bot_username {
            head = format!("{head}@{bot}");
        }
        let length = head.encode_utf16().count();
        let text = if args.is_empty() {
            head
        } else {
            format!("{head} {args}")
        };
        InboundMessage::text(&text).entity("bot_command", 0, length)
    }

    /// A photo; every size's file_id downloads `bytes`.
    pub fn photo(bytes: &[u8], caption: Option<&str>) -> InboundMessage {
        InboundMessage {
            text: caption.map(str::to_string),
            attachment: Attachment::Photo(bytes.to_vec()),
            ..InboundMessage::default()
        }
    }

    pub fn document(
        file_name: &str,
        mime_type: &str,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> InboundMessage {
        InboundMessage {
            text: caption.map(str::to_string),
            attachment: Attachment::Document {
                file_name: file_name.to_string(),
                mime_type: mime_type.to_string(),
                bytes: bytes.to_vec(),
            },
            ..InboundMessage::default()
        }
    }

    /// A voice note of `bytes` (`audio/ogg`) that plays `duration_seconds`.
    pub fn voice(bytes: &[u8], duration_seconds: u32, caption: Option<&str>) -> InboundMessage {
        InboundMessage {
            text: caption.map(str::to_string),
            attachment: Attachment::Voice {
                bytes: bytes.to_vec(),
                duration_seconds,
            },
            ..InboundMessage::default()
        }
    }

    /// An audio file, as a client sends music or a recording picked from the phone.
    pub fn audio(
        file_name: &str,
        mime_type: &str,
        bytes: &[u8],
        duration_seconds: u32,
        caption: Option<&str>,
    ) -> InboundMessage {
        InboundMessage {
            text: caption.map(str::to_string),
            attachment: Attachment::Audio {
                file_name: file_name.to_string(),
                mime_type: mime_type.to_string(),
                bytes: bytes.to_vec(),
                duration_seconds,
            },
            ..InboundMessage::default()
        }
    }

    pub fn in_thread(mut self, thread_id: i64) -> InboundMessage {
        self.thread_id = Some(thread_id);
        self
    }

    pub fn reply_to(mut self, message_id: i64) -> InboundMessage {
        self.reply_to = Some(message_id);
        self
    }

    pub fn entity(mut self, kind: &str, offset: usize, length: usize) -> InboundMessage {
        self.entities
            .push(json!({"type": kind, "offset": offset, "length": length}));
        self
    }
}

impl TelegramServer {
    /// A text message from `from` in their private chat with the bot.
    pub fn push_private_text(&self, from: &TgUser, text: &str) -> Pushed {
        self.push_message(&TgChat::private(from), from, InboundMessage::text(text))
    }

    /// A text message in a group; `thread_id` puts it in a forum topic.
    pub fn push_group_text(
        &self,
        chat: &TgChat,
        from: &TgUser,
        text: &str,
        thread_id: Option<i64>,
    ) -> Pushed {
        let mut message = InboundMessage::text(text);
        message.thread_id = thread_id;
        self.push_message(chat, from, message)
    }

    /// A text reply to an earlier message of the chat (in its topic, if any).
    pub fn push_reply(
        &self,
        chat: &TgChat,
        from: &TgUser,
        reply_to_message_id: i64,
        text: &str,
    ) -> Pushed {
        self.push_message(
            chat,
            from,
            InboundMessage::text(text).reply_to(reply_to_message_id),
        )
    }

    /// `/command@<bot username> args`, as a client sends a command picked from the menu.
    pub fn push_command(&self, chat: &TgChat, from: &TgUser, command: &str, args: &str) -> Pushed {
        let bot = self.bot_username();
        self.push_message(
            chat,
            from,
            InboundMessage::command(command, Some(&bot), args),
        )
    }

    pub fn push_photo(
        &self,
        chat: &TgChat,
        from: &TgUser,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> Pushed {
        self.push_message(chat, from, InboundMessage::photo(bytes, caption))
    }

    pub fn push_document(
        &self,
        chat: &TgChat,
        from: &TgUser,
        file_name: &str,
        mime_type: &str,
        bytes: &[u8],
        caption: Option<&str>,
    ) -> Pushed {
        let message = InboundMessage::document(file_name, mime_type, bytes, caption);
        self.push_message(chat, from, message)
    }

    /// A voice note from `from` in `chat`.
    pub fn push_voice(
        &self,
        chat: &TgChat,
        from: &TgUser,
        bytes: &[u8],
        duration_seconds: u32,
        caption: Option<&str>,
    ) -> Pushed {
        let message = InboundMessage::voice(bytes, duration_seconds, caption);
        self.push_message(chat, from, message)
    }

    /// Any user message: stored in the chat and queued as a `message` update.
    ///
    /// Panics if `reply_to` names no message of the chat (a bug in the test).
    pub fn push_message(&self, chat: &TgChat, from: &TgUser, message: InboundMessage) -> Pushed {
        let pushed = {
            let mut state = self.shared.state();
            let s = &mut *state;
            let (media, file_ids) = match message.attachment {
                Attachment::None => (Media::Text, Vec::new()),
                Attachment::Photo(bytes) => {
                    let sizes = media::photo_sizes(s, &bytes);
                    let ids = sizes.iter().map(file_id_of).collect();
                    (Media::Photo(sizes), ids)
                }
                Attachment::Document {
                    file_name,
                    mime_type,
                    bytes,
                } => {
                    let extension = file_name.rsplit_once('.').map_or("bin", |(_, ext)| ext);
                    let (file_id, unique_id) = s.add_file("documents", extension, &bytes);
                    let document = json!({
                        "file_name": file_name,
                        "mime_type": mime_type,
                        "file_id": file_id,
                        "file_unique_id": unique_id,
                        "file_size": bytes.len(),
                    });
                    (Media::Document(document), vec![file_id])
                }
                Attachment::Voice {
                    bytes,
                    duration_seconds,
                } => {
                    let (file_id, unique_id) = s.add_file("voice", "oga", &bytes);
                    let voice = json!({
                        "duration": duration_seconds,
                        "mime_type": "audio/ogg",
                        "file_id": file_id,
                        "file_unique_id": unique_id,
                        "file_size": bytes.len(),
                    });
                    (Media::Voice(voice), vec![file_id])
                }
                Attachment::Audio {
                    file_name,
                    mime_type,
                    bytes,
                    duration_seconds,
                } => {
                    let extension = file_name.rsplit_once('.').map_or("bin", |(_, ext)| ext);
                    let (file_id, unique_id) = s.add_file("music", extension, &bytes);
                    let audio = json!({
                        "duration": duration_seconds,
                        "file_name": file_name,
                        "mime_type": mime_type,
                        "file_id": file_id,
                        "file_unique_id": unique_id,
                        "file_size": bytes.len(),
                    });
                    (Media::Audio(audio), vec![file_id])
                }
            };
            let chat_state = s.ensure_chat(chat);
            if let Some(id) = message.reply_to {
                assert!(
                    chat_state.messages.contains_key(&id),
                    "fake telegram: message {id} to reply to is not in chat {}",
                    chat.id
                );
            }
            let mut msg = Msg::new(from.to_json(), media, message.text);
            msg.entities = message.entities;
            msg.reply_to = message.reply_to;
            if chat.is_forum {
                msg.thread_id = message.thread_id.or_else(|| {
                    message
                        .reply_to
                        .and_then(|id| chat_state.messages[&id].thread_id)
                });
                if let Some(thread) = msg.thread_id {
                    chat_state.ensure_topic(thread, "Topic", from.to_json());
                    msg.reply_to = msg.reply_to.or(Some(thread));
                }
            }
            let message_id = chat_state.add(msg);
            let rendered = chat_state.render(&chat_state.messages[&message_id], true);
            Pushed {
                update_id: s.queue_update("message", rendered),
                chat_id: chat.id,
                message_id,
                callback_query_id: None,
                file_ids,
            }
        };
        self.updates_pushed();
        pushed
    }

    /// `from` presses an inline button with `data` on message `message_id` of chat `chat_id`.
    /// The data is not checked against the keyboard, as a stale client may send any.
    ///
    /// Panics if the message is not one the bot sent (a bug in the test).
    pub fn push_callback(
        &self,
        from: &TgUser,
        chat_id: i64,
        message_id: i64,
        data: &str,
    ) -> Pushed {
        let pushed = {
            let mut state = self.shared.state();
            let s = &mut *state;
            let chat = s
                .chats
                .get(&chat_id)
                .unwrap_or_else(|| panic!("fake telegram: no chat {chat_id}"));
            let msg = chat
                .messages
                .get(&message_id)
                .filter(|msg| msg.from_bot)
                .unwrap_or_else(|| {
                    panic!("fake telegram: no bot message {message_id} in chat {chat_id}")
                });
            let message = chat.render(msg, true);
            let id = (4_300_000_000_000_000_000u64 + s.next_callback).to_string();
            s.next_callback += 1;
            s.callback_queries.insert(id.clone(), false);
            let query = json!({
                "id": id,
                "from": from.to_json(),
                "message": message,
                "chat_instance": (chat_id.unsigned_abs() * 31 + 7).to_string(),
                "data": data,
            });
            Pushed {
                update_id: s.queue_update("callback_query", query),
                chat_id,
                message_id,
                callback_query_id: Some(id),
                file_ids: Vec::new(),
            }
        };
        self.updates_pushed();
        pushed
    }

    /// Queues `update` as is, adding `update_id` when missing; returns the id.
    pub fn push_raw_update(&self, mut update: Value) -> i64 {
        let id = {
            let mut state = self.shared.state();
            let id = match update["update_id"].as_i64() {
                Some(id) => id,
                None => {
                    let id = state.next_update_id;
                    update["update_id"] = json!(id);
                    id
                }
            };
            state.next_update_id = state.next_update_id.max(id + 1);
            state.updates.push_back((id, update));
            id
        };
        self.updates_pushed();
        id
    }

    pub(super) fn updates_pushed(&self) {
        self.shared.updates_changed.notify_waiters();
        self.shared.changed();
    }

    /// Makes a chat known without a message in it, so the bot may write there first (on
    /// Telegram, a user who started the bot earlier).
    pub fn add_chat(&self, chat: &TgChat) {
        self.shared.state().ensure_chat(chat);
        self.shared.changed();
    }

    /// Creates a forum topic (its root service message, not delivered as an update) and
    /// returns its `message_thread_id`.
    pub fn create_topic(&self, chat: &TgChat, name: &str) -> i64 {
        let mut state = self.shared.state();
        let bot = state.bot.user_json();
        let chat = state.ensure_chat(chat);
        let thread_id = chat.next_message_id;
        chat.ensure_topic(thread_id, name, bot);
        thread_id
    }
}

fn file_id_of(file: &Value) -> String {
    file["file_id"].as_str().unwrap_or_default().to_string()
}
