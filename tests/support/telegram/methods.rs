//! The Bot API methods the fake answers, getUpdates aside: Telegram's checks, error texts and
//! result shapes.

use serde_json::{Value, json};

use super::state::{ChatState, Media, Msg, Shared, State, Webhook, now};
use super::types::{TgError, UploadedFile, as_int};
use super::{html, media};

/// Telegram's spelling of every method the fake knows (method names are case-insensitive).
pub(super) const METHODS: &[&str] = &[
    "getMe",
    "getUpdates",
    "getWebhookInfo",
    "setWebhook",
    "deleteWebhook",
    "sendMessage",
    "editMessageText",
    "editMessageReplyMarkup",
    "deleteMessage",
    "answerCallbackQuery",
    "sendChatAction",
    "setMyCommands",
    "getMyCommands",
    "deleteMyCommands",
    "getFile",
    "sendPhoto",
    "sendDocument",
];

const MAX_TEXT: usize = 4096;
const CHAT_ACTIONS: &[&str] = &[
    "typing",
    "upload_photo",
    "record_video",
    "upload_video",
    "record_voice",
    "upload_voice",
    "upload_document",
    "choose_sticker",
    "find_location",
    "record_video_note",
    "upload_video_note",
];
/// Keys that give an inline button something to do; a button with none is refused.
const BUTTON_ACTIONS: &[&str] = &[
    "url",
    "callback_data",
    "web_app",
    "login_url",
    "switch_inline_query",
    "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat",
    "copy_text",
    "callback_game",
    "pay",
];

pub(super) fn canonical(method: &str) -> Option<&'static str> {
    METHODS
        .iter()
        .copied()
        .find(|known| known.eq_ignore_ascii_case(method))
}

/// A successful answer: the `result`, and the `description` some methods add.
pub(super) struct Answer {
    pub result: Value,
    pub description: Option<&'static str>,
}

impl Answer {
    pub fn new(result: Value) -> Answer {
        Answer {
            result,
            description: None,
        }
    }

    fn described(description: &'static str) -> Answer {
        Answer {
            result: json!(true),
            description: Some(description),
        }
    }

    pub fn to_json(&self) -> Value {
        let mut body = json!({"ok": true, "result": self.result});
        if let Some(description) = self.description {
            body["description"] = json!(description);
        }
        body
    }
}

pub(super) type Outcome = Result<Answer, TgError>;

pub(super) fn call(shared: &Shared, method: &str, p: &Value, files: &[UploadedFile]) -> Outcome {
    let outcome = {
        let mut state = shared.state();
        let s = &mut *state;
        match method {
            "getMe" => Ok(Answer::new(get_me(s))),
            "getWebhookInfo" => Ok(Answer::new(webhook_info(s))),
            "setWebhook" => set_webhook(s, p),
            "deleteWebhook" => Ok(delete_webhook(s, p)),
            "sendMessage" => send_message(s, p),
            "editMessageText" => edit_text(s, p),
            "editMessageReplyMarkup" => edit_markup(s, p),
            "deleteMessage" => delete_message(s, p),
            "answerCallbackQuery" => answer_callback(s, p),
            "sendChatAction" => chat_action(s, p),
            "setMyCommands" => set_commands(s, p),
            "getMyCommands" => Ok(Answer::new(
                s.commands
                    .get(&commands_key(p))
                    .cloned()
                    .unwrap_or(json!([])),
            )),
            "deleteMyCommands" => {
                s.commands.remove(&commands_key(p));
                Ok(Answer::new(json!(true)))
            }
            "getFile" => media::get_file(s, p),
            "sendPhoto" => media::send_media(s, p, files, "photo"),
            "sendDocument" => media::send_media(s, p, files, "document"),
            _ => Err(TgError::new(404, "Not Found")),
        }
    };
    shared.changed();
    outcome
}

fn get_me(s: &State) -> Value {
    let mut me = s.bot.user_json();
    for (key, value) in [
        ("can_join_groups", true),
        ("can_read_all_group_messages", false),
        ("supports_inline_queries", false),
        ("can_connect_to_business", false),
        ("has_main_web_app", false),
    ] {
        me[key] = json!(value);
    }
    me
}

fn webhook_info(s: &State) -> Value {
    let mut info = json!({
        "url": s.webhook.as_ref().map_or("", |hook| hook.url.as_str()),
        "has_custom_certificate": false,
        "pending_update_count": s.updates.len(),
    });
    if let Some(hook) = &s.webhook {
        info["max_connections"] = json!(hook.max_connections);
        if let Some(allowed) = &hook.allowed_updates {
            info["allowed_updates"] = allowed.clone();
        }
    }
    info
}

fn set_webhook(s: &mut State, p: &Value) -> Outcome {
    let url = p["url"].as_str().unwrap_or("");
    if url.is_empty() {
        return Ok(delete_webhook(s, p));
    }
    if !url.starts_with("https://") {
        return Err(TgError::bad_request(
            "bad webhook: An HTTPS URL must be provided for webhook",
        ));
    }
    if p["drop_pending_updates"] == json!(true) {
        s.drop_pending();
    }
    let same = s.webhook.as_ref().is_some_and(|hook| hook.url == url);
    s.webhook = Some(Webhook {
        url: url.to_string(),
        max_connections: as_int(&p["max_connections"]).unwrap_or(40),
        allowed_updates: p.get("allowed_updates").cloned(),
    });
    Ok(Answer::described(if same {
        "Webhook is already set"
    } else {
        "Webhook was set"
    }))
}

fn delete_webhook(s: &mut State, p: &Value) -> Answer {
    if p["drop_pending_updates"] == json!(true) {
        s.drop_pending();
    }
    match s.webhook.take() {
        Some(_) => Answer::described("Webhook was deleted"),
        None => Answer::described("Webhook is already deleted"),
    }
}

/// The chat a call addresses, which must be one the bot knows.
pub(super) fn chat_id(s: &State, p: &Value) -> Result<i64, TgError> {
    if p["chat_id"].is_null() || p["chat_id"] == json!("") {
        return Err(TgError::bad_request("chat_id is empty"));
    }
    as_int(&p["chat_id"])
        .filter(|id| s.chats.contains_key(id))
        .ok_or_else(|| TgError::bad_request("chat not found"))
}

fn chat_mut(s: &mut State, id: i64) -> &mut ChatState {
    s.chats.get_mut(&id).expect("chat checked by chat_id")
}

pub(super) struct Formatted {
    text: String,
    entities: Vec<Value>,
    sent: String,
    parse_mode: Option<String>,
}

/// Parses `raw` per `parse_mode`, then applies Telegram's empty and length checks.
pub(super) fn formatted(
    s: &State,
    raw: &str,
    p: &Value,
    entities_key: &str,
    limit: (usize, &str),
) -> Result<Formatted, TgError> {
    let parse_mode = p["parse_mode"]
        .as_str()
        .filter(|mode| !mode.is_empty())
        .map(str::to_string);
    let (text, entities) = match parse_mode
        .as_deref()
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        None => (
            raw.to_string(),
            p[entities_key].as_array().cloned().unwrap_or_default(),
        ),
        Some("html") => html::parse(raw, s.strict_ampersand)
            .map_err(|detail| TgError::cant_parse_entities(&detail))?,
        // The fake does not parse Markdown: such text is kept as sent, without entities.
        Some("markdown" | "markdownv2") => (raw.to_string(), Vec::new()),
        Some(_) => return Err(TgError::bad_request("unsupported parse_mode")),
    };
    if text.encode_utf16().count() > limit.0 {
        return Err(TgError::bad_request(limit.1));
    }
    Ok(Formatted {
        text,
        entities,
        sent: raw.to_string(),
        parse_mode,
    })
}

/// The inline keyboard of `reply_markup`, checked as Telegram does. Other keyboards are
/// accepted, but a `Message` only ever carries an inline one.
fn inline_markup(p: &Value) -> Result<Option<Value>, TgError> {
    let invalid = || TgError::bad_request("can't parse reply keyboard markup JSON object");
    let markup = match &p["reply_markup"] {
        Value::Null => return Ok(None),
        Value::String(text) => serde_json::from_str(text).map_err(|_| invalid())?,
        other => other.clone(),
    };
    if !markup.is_object() {
        return Err(invalid());
    }
    let Some(rows) = markup.get("inline_keyboard") else {
        return Ok(None);
    };
    let Some(rows) = rows.as_array() else {
        return Err(TgError::bad_request(
            "field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array",
        ));
    };
    for row in rows {
        let Some(buttons) = row.as_array() else {
            return Err(TgError::bad_request(
                "field \"inline_keyboard\" of the InlineKeyboardMarkup must be an Array of Arrays",
            ));
        };
        for button in buttons {
            if !button["text"].is_string() {
                return Err(TgError::bad_request(
                    "can't parse inline keyboard button: Field \"text\" must be of type String",
                ));
            }
            if !BUTTON_ACTIONS.iter().any(|key| button.get(*key).is_some()) {
                return Err(TgError::bad_request(
                    "text buttons are unallowed in the inline keyboard",
                ));
            }
            if let Some(data) = button.get("callback_data") {
                let len = data.as_str().map_or(0, str::len);
                if !(1..=64).contains(&len) {
                    return Err(TgError::bad_request("BUTTON_DATA_INVALID"));
                }
            }
        }
    }
    let empty = rows
        .iter()
        .all(|row| row.as_array().is_some_and(Vec::is_empty));
    Ok((!empty).then_some(markup))
}

fn send_message(s: &mut State, p: &Value) -> Outcome {
    let chat_id = chat_id(s, p)?;
    let raw = text_param(&p["text"]);
    if raw.trim().is_empty() {
        return Err(TgError::bad_request("message text is empty"));
    }
    let text = formatted(s, &raw, p, "entities", (MAX_TEXT, "message is too long"))?;
    if text.text.trim().is_empty() {
        return Err(TgError::bad_request("message text is empty"));
    }
    deliver(s, chat_id, p, Media::Text, Some(text))
}

/// A text parameter; JSON clients may send a number where the API says String.
fn text_param(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Number(number) => number.to_string(),
        _ => String::new(),
    }
}

/// Stores what the bot sent in a chat and answers with the `Message`.
pub(super) fn deliver(
    s: &mut State,
    chat_id: i64,
    p: &Value,
    media: Media,
    text: Option<Formatted>,
) -> Outcome {
    let markup = inline_markup(p)?;
    let bot = s.bot.user_json();
    let chat = chat_mut(s, chat_id);
    let reply_id =
        as_int(&p["reply_parameters"]["message_id"]).or(as_int(&p["reply_to_message_id"]));
    let may_lose_reply = p["reply_parameters"]["allow_sending_without_reply"] == json!(true)
        || p["allow_sending_without_reply"] == json!(true);
    let mut reply_to = match reply_id {
        Some(id) if chat.messages.contains_key(&id) => Some(id),
        Some(_) if !may_lose_reply => {
            return Err(TgError::bad_request("message to be replied not found"));
        }
        _ => None,
    };
    let mut thread_id = None;
    if chat.chat.is_forum {
        thread_id = as_int(&p["message_thread_id"])
            .or_else(|| reply_to.and_then(|id| chat.messages[&id].thread_id));
        if let Some(thread) = thread_id {
            chat.ensure_topic(thread, "Topic", bot.clone());
            reply_to = reply_to.or(Some(thread));
        }
    }
    let mut msg = Msg::new(bot, media, None);
    if let Some(text) = text {
        msg.text = Some(text.text);
        msg.entities = text.entities;
        msg.sent_text = Some(text.sent);
        msg.parse_mode = text.parse_mode;
    }
    msg.thread_id = thread_id;
    msg.reply_to = reply_to;
    msg.reply_markup = markup;
    let id = chat.add(msg);
    Ok(Answer::new(chat.render(&chat.messages[&id], true)))
}

/// The bot's own message that an edit addresses.
fn edit_target<'a>(s: &'a mut State, p: &Value) -> Result<(&'a mut ChatState, i64), TgError> {
    if !p["inline_message_id"].is_null() {
        return Err(TgError::bad_request("MESSAGE_ID_INVALID"));
    }
    let chat_id = chat_id(s, p)?;
    let id = as_int(&p["message_id"])
        .ok_or_else(|| TgError::bad_request("message identifier is not specified"))?;
    let chat = chat_mut(s, chat_id);
    match chat.messages.get(&id) {
        None => Err(TgError::bad_request("message to edit not found")),
        Some(msg) if !msg.from_bot => Err(TgError::bad_request("message can't be edited")),
        Some(_) => Ok((chat, id)),
    }
}

fn not_modified() -> TgError {
    TgError::bad_request(
        "message is not modified: specified new message content and reply markup are exactly \
         the same as a current content and reply markup of the message",
    )
}

fn edit_text(s: &mut State, p: &Value) -> Outcome {
    let raw = text_param(&p["text"]);
    if raw.trim().is_empty() {
        return Err(TgError::bad_request("message text is empty"));
    }
    // Edits report the limit in TDLib's words, unlike sendMessage.
    let text = formatted(s, &raw, p, "entities", (MAX_TEXT, "MESSAGE_TOO_LONG"))?;
    if text.text.trim().is_empty() {
        return Err(TgError::bad_request("message text is empty"));
    }
    // An edit without reply_markup removes the keyboard, as on Telegram.
    let markup = inline_markup(p)?;
    let (chat, id) = edit_target(s, p)?;
    let msg = chat.messages.get_mut(&id).expect("edit target exists");
    if !matches!(msg.media, Media::Text) {
        return Err(TgError::bad_request(
            "there is no text in the message to edit",
        ));
    }
    if msg.text.as_deref() == Some(text.text.as_str())
        && msg.entities == text.entities
        && msg.reply_markup == markup
    {
        return Err(not_modified());
    }
    msg.text = Some(text.text);
    msg.entities = text.entities;
    msg.sent_text = Some(text.sent);
    msg.parse_mode = text.parse_mode;
    msg.reply_markup = markup;
    msg.edit_date = Some(now());
    msg.edit_count += 1;
    Ok(Answer::new(chat.render(&chat.messages[&id], true)))
}

fn edit_markup(s: &mut State, p: &Value) -> Outcome {
    let markup = inline_markup(p)?;
    let (chat, id) = edit_target(s, p)?;
    let msg = chat.messages.get_mut(&id).expect("edit target exists");
    if msg.reply_markup == markup {
        return Err(not_modified());
    }
    msg.reply_markup = markup;
    msg.edit_date = Some(now());
    msg.edit_count += 1;
    Ok(Answer::new(chat.render(&chat.messages[&id], true)))
}

fn delete_message(s: &mut State, p: &Value) -> Outcome {
    let chat_id = chat_id(s, p)?;
    let id = as_int(&p["message_id"])
        .ok_or_else(|| TgError::bad_request("message identifier is not specified"))?;
    match chat_mut(s, chat_id).messages.remove(&id) {
        Some(_) => Ok(Answer::new(json!(true))),
        None => Err(TgError::bad_request("message to delete not found")),
    }
}

fn answer_callback(s: &mut State, p: &Value) -> Outcome {
    let id = p["callback_query_id"].as_str().unwrap_or("");
    match s.callback_queries.get_mut(id) {
        Some(answered) if !*answered => {
            *answered = true;
            Ok(Answer::new(json!(true)))
        }
        _ => Err(TgError::bad_request(
            "query is too old and response timeout expired or query ID is invalid",
        )),
    }
}

fn chat_action(s: &mut State, p: &Value) -> Outcome {
    chat_id(s, p)?;
    let action = p["action"].as_str().unwrap_or("");
    if !CHAT_ACTIONS.contains(&action) {
        return Err(TgError::bad_request("wrong parameter action in request"));
    }
    Ok(Answer::new(json!(true)))
}

/// Command lists are kept per scope and language, as Telegram does.
pub(super) fn commands_key(p: &Value) -> String {
    let scope = match &p["scope"] {
        Value::Null => json!({"type": "default"}),
        scope => scope.clone(),
    };
    format!("{scope}|{}", p["language_code"].as_str().unwrap_or(""))
}

fn set_commands(s: &mut State, p: &Value) -> Outcome {
    let Some(commands) = p["commands"].as_array() else {
        return Err(TgError::bad_request("parameter \"commands\" is required"));
    };
    if commands.len() > 100 {
        return Err(TgError::bad_request("too many commands specified"));
    }
    let mut kept = Vec::new();
    for command in commands {
        let name = command["command"].as_str().unwrap_or("");
        let valid_name = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid_name {
            return Err(TgError::bad_request("BOT_COMMAND_INVALID"));
        }
        let description = command["description"].as_str().unwrap_or("");
        if !(1..=256).contains(&description.chars().count()) {
            return Err(TgError::bad_request("BOT_COMMAND_DESCRIPTION_INVALID"));
        }
        kept.push(json!({"command": name, "description": description}));
    }
    s.commands.insert(commands_key(p), json!(kept));
    Ok(Answer::new(json!(true)))
}
