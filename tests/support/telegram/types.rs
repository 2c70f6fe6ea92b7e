//! The fake's public value types: users and chats that talk to the bot, the ids a pushed update
//! got, calls the bot made, scripted errors, and the chat history as the fake keeps it.

use serde_json::{Value, json};

/// A person who talks to the bot (never a bot: the bot itself is described by `getMe`).
#[derive(Debug, Clone, PartialEq)]
pub struct TgUser {
    pub id: i64,
    pub first_name: String,
    pub last_name: Option<String>,
    pub username: Option<String>,
    pub language_code: Option<String>,
}

impl TgUser {
    pub fn new(id: i64, first_name: &str) -> TgUser {
        TgUser {
            id,
            first_name: first_name.to_string(),
            last_name: None,
            username: None,
            language_code: None,
        }
    }

    pub fn username(mut self, username: &str) -> TgUser {
        self.username = Some(username.to_string());
        self
    }

    pub fn last_name(mut self, last_name: &str) -> TgUser {
        self.last_name = Some(last_name.to_string());
        self
    }

    pub fn language(mut self, code: &str) -> TgUser {
        self.language_code = Some(code.to_string());
        self
    }

    /// The Bot API `User` object.
    pub fn to_json(&self) -> Value {
        let mut user = json!({"id": self.id, "is_bot": false, "first_name": self.first_name});
        put_opt(&mut user, "last_name", &self.last_name);
        put_opt(&mut user, "username", &self.username);
        put_opt(&mut user, "language_code", &self.language_code);
        user
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatType {
    Private,
    Group,
    Supergroup,
}

/// A chat the bot is in. Private chats have the user's id, groups a negative id and
/// supergroups an id like `-100xxxxxxxxxx`, as on Telegram.
#[derive(Debug, Clone, PartialEq)]
pub struct TgChat {
    pub id: i64,
    pub kind: ChatType,
    /// Group title; `None` for private chats.
    pub title: Option<String>,
    /// A supergroup with topics: its messages carry `message_thread_id`.
    pub is_forum: bool,
    /// The other party of a private chat, whose names the `Chat` object repeats.
    pub user: Option<TgUser>,
}

impl TgChat {
    pub fn private(user: &TgUser) -> TgChat {
        TgChat {
            id: user.id,
            kind: ChatType::Private,
            title: None,
            is_forum: false,
            user: Some(user.clone()),
        }
    }

    pub fn group(id: i64, title: &str) -> TgChat {
        TgChat {
            id,
            kind: ChatType::Group,
            title: Some(title.to_string()),
            is_forum: false,
            user: None,
        }
    }

    pub fn supergroup(id: i64, title: &str) -> TgChat {
        TgChat {
            kind: ChatType::Supergroup,
            ..TgChat::group(id, title)
        }
    }

    /// A supergroup with forum topics.
    pub fn forum(id: i64, title: &str) -> TgChat {
        TgChat {
            is_forum: true,
            ..TgChat::supergroup(id, title)
        }
    }

    /// The Bot API `Chat` object as it appears inside a `Message`.
    pub fn to_json(&self) -> Value {
        match self.kind {
            ChatType::Private => {
                let mut chat = json!({"id": self.id, "type": "private"});
                if let Some(user) = &self.user {
                    chat["first_name"] = json!(user.first_name);
                    put_opt(&mut chat, "last_name", &user.last_name);
                    put_opt(&mut chat, "username", &user.username);
                }
                chat
            }
            ChatType::Group => json!({"id": self.id, "type": "group", "title": self.title}),
            ChatType::Supergroup => {
                let mut chat = json!({"id": self.id, "type": "supergroup", "title": self.title});
                if self.is_forum {
                    chat["is_forum"] = json!(true);
                }
                chat
            }
        }
    }
}

fn put_opt(object: &mut Value, key: &str, value: &Option<String>) {
    if let Some(value) = value {
        object[key] = json!(value);
    }
}

/// What a push helper created, so a test can refer to it later.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pushed {
    pub update_id: i64,
    pub chat_id: i64,
    /// The pushed message; for a callback query, the message whose button was pressed.
    pub message_id: i64,
    pub callback_query_id: Option<String>,
    /// Photo sizes (smallest first), the document, voice note or audio file; each can be
    /// fetched with getFile.
    pub file_ids: Vec<String>,
}

/// A file part of a multipart request (an upload).
#[derive(Debug, Clone, PartialEq)]
pub struct UploadedFile {
    /// The part name, which the payload refers to as `attach://<field>`.
    pub field: String,
    pub file_name: Option<String>,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

/// One Bot API call the bot made, whatever its encoding on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// Telegram's spelling (`sendMessage`) for known methods, as sent otherwise.
    pub method: String,
    /// A JSON object. Form, query and multipart values are given the JSON types the Bot API
    /// documents (ids are numbers, `reply_markup` is an object...), so tests need not care which
    /// encoding the client chose.
    pub params: Value,
    pub files: Vec<UploadedFile>,
    /// The body the fake answered; `Null` while the call is in flight (a long poll).
    pub response: Value,
}

impl Call {
    /// An integer parameter, also when sent as a string.
    pub fn int(&self, key: &str) -> Option<i64> {
        as_int(&self.params[key])
    }

    pub fn str(&self, key: &str) -> Option<&str> {
        self.params[key].as_str()
    }

    /// Whether the answer was `"ok": true`; `None` while in flight.
    pub fn ok(&self) -> Option<bool> {
        self.response["ok"].as_bool()
    }
}

/// An integer given as a JSON number or as a decimal string, as Telegram accepts both.
pub(super) fn as_int(value: &Value) -> Option<i64> {
    match value {
        Value::Number(number) => number.as_i64(),
        Value::String(text) => text.trim().parse().ok(),
        _ => None,
    }
}

/// A Bot API error answer: `{"ok":false,"error_code":..,"description":..,"parameters":..}`.
#[derive(Debug, Clone, PartialEq)]
pub struct TgError {
    /// Also the HTTP status, as Telegram does.
    pub code: u16,
    pub description: String,
    pub retry_after: Option<u64>,
    pub migrate_to_chat_id: Option<i64>,
}

impl TgError {
    pub fn new(code: u16, description: &str) -> TgError {
        TgError {
            code,
            description: description.to_string(),
            retry_after: None,
            migrate_to_chat_id: None,
        }
    }

    /// 400 `Bad Request: <detail>`.
    pub fn bad_request(detail: &str) -> TgError {
        TgError::new(400, &format!("Bad Request: {detail}"))
    }

    /// 400 `Bad Request: can't parse entities: <detail>`.
    pub fn cant_parse_entities(detail: &str) -> TgError {
        TgError::bad_request(&format!("can't parse entities: {detail}"))
    }

    /// 429 flood control; teloxide turns it into `RequestError::RetryAfter`.
    pub fn too_many_requests(retry_after_secs: u64) -> TgError {
        TgError {
            retry_after: Some(retry_after_secs),
            ..TgError::new(
                429,
                &format!("Too Many Requests: retry after {retry_after_secs}"),
            )
        }
    }

    /// 502 from Telegram's front end. Note teloxide sleeps 10 s on any 5xx before returning.
    pub fn bad_gateway() -> TgError {
        TgError::new(502, "Bad Gateway")
    }

    /// 403 `Forbidden: <detail>`.
    pub fn forbidden(detail: &str) -> TgError {
        TgError::new(403, &format!("Forbidden: {detail}"))
    }

    pub fn blocked_by_user() -> TgError {
        TgError::forbidden("bot was blocked by the user")
    }

    /// The group became a supergroup; teloxide turns it into `RequestError::MigrateToChatId`.
    pub fn migrated(to_chat_id: i64) -> TgError {
        TgError {
            migrate_to_chat_id: Some(to_chat_id),
            ..TgError::bad_request("group chat was upgraded to a supergroup chat")
        }
    }

    pub fn to_json(&self) -> Value {
        let mut body = json!({
            "ok": false,
            "error_code": self.code,
            "description": self.description,
        });
        if let Some(seconds) = self.retry_after {
            body["parameters"] = json!({"retry_after": seconds});
        }
        if let Some(chat_id) = self.migrate_to_chat_id {
            body["parameters"] = json!({"migrate_to_chat_id": chat_id});
        }
        body
    }
}

/// A message of a chat as it stands now: edits applied, deleted ones gone.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub message_id: i64,
    pub chat_id: i64,
    pub thread_id: Option<i64>,
    /// The sender's user id; the bot's own id for what the bot sent.
    pub from_id: i64,
    pub from_bot: bool,
    /// The text as Telegram shows it (HTML parsed away), or the caption of a photo or document.
    pub text: Option<String>,
    /// The text or caption exactly as the bot sent it, markup included.
    pub sent_text: Option<String>,
    pub parse_mode: Option<String>,
    /// The `entities` (or `caption_entities`) array.
    pub entities: Value,
    /// The inline keyboard, when there is one (Telegram echoes no other kind).
    pub reply_markup: Option<Value>,
    pub reply_to: Option<i64>,
    pub edit_count: u32,
    /// The message as the Bot API would return it now.
    pub json: Value,
}

impl StoredMessage {
    /// `callback_data` of every inline button, row by row.
    pub fn button_data(&self) -> Vec<String> {
        let rows = self
            .reply_markup
            .as_ref()
            .and_then(|markup| markup["inline_keyboard"].as_array())
            .cloned()
            .unwrap_or_default();
        rows.iter()
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(|button| button["callback_data"].as_str().map(str::to_string))
            .collect()
    }
}
