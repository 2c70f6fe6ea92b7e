//! A Telegram update as the Bot API sends it (webhook body or `getUpdates` entry), read by
//! the Telegram adapter into what the channel core handles
//! (`hearth::fuzzing::read_update_json`).
//!
//! Properties, checked against the update's JSON: a message from a person is read with its
//! sender's id, the conversation of its chat (and forum topic, only for topic messages),
//! the event id `<chat>:<message>` and its text or caption (none when the Bot API types
//! cannot read what kind of message it is: the member is told so; an update they cannot
//! read at all is ignored); a bot's message, a message
//! without a sender and any other kind of update are ignored; a button press is an answer
//! to the prompt its data names (`hc:<prompt>:y|n`), a cancel of the list entry it names
//! (`hr:<schedule>`), or refused as not hearth's, with the event id `press:<query id>`.
#![no_main]

use hearth::fuzzing::{BotApiReading, IncomingReading, bot_api_reading, read_update_json};
use hearth::ids::PromptId;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn id_text(value: &Value) -> String {
    value
        .as_i64()
        .map(|id| id.to_string())
        .or_else(|| value.as_u64().map(|id| id.to_string()))
        .unwrap_or_else(|| panic!("an id that is not a number was read: {value}"))
}

fn check_message(message: &Value, reading: &IncomingReading, kind_read: bool) {
    let from = &message["from"];
    // Telegram's four kinds of chat: an update naming another is not Telegram's, and the
    // Bot API types refuse it whole.
    let known_chat = matches!(
        message["chat"]["type"].as_str(),
        Some("private" | "group" | "supergroup" | "channel")
    );
    let is_person = known_chat && from.is_object() && !from["is_bot"].as_bool().unwrap_or(false);
    let IncomingReading::Message {
        sender,
        sender_name,
        conversation,
        event_id,
        text,
    } = reading
    else {
        assert!(!is_person, "a person's message read as {reading:?}");
        return;
    };
    assert!(is_person, "a message of no person read: {reading:?}");
    assert_eq!(sender, &id_text(&from["id"]));
    let first_name = from["first_name"].as_str().unwrap_or_default();
    let expected_name = Some(first_name.to_string()).filter(|name| !name.trim().is_empty());
    assert_eq!(sender_name, &expected_name);
    let chat = id_text(&message["chat"]["id"]);
    assert_eq!(
        event_id,
        &format!("{chat}:{}", id_text(&message["message_id"]))
    );
    let topic = message["is_topic_message"].as_bool().unwrap_or(false);
    let expected_conversation = match message["message_thread_id"].as_i64() {
        Some(thread) if topic => format!("telegram:{chat}/{thread}"),
        _ => format!("telegram:{chat}"),
    };
    assert_eq!(conversation.to_string(), expected_conversation);
    assert_eq!(conversation.channel(), "telegram");
    let expected_text = match kind_read {
        true => message["text"]
            .as_str()
            .or_else(|| message["caption"].as_str())
            .unwrap_or_default(),
        false => "",
    };
    assert_eq!(text, expected_text);
}

/// The entry a list's cancel button names: `hr:` and digits only.
fn cancel_number(data: &str) -> Option<i64> {
    let number = data.strip_prefix("hr:")?;
    if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    number.parse().ok()
}

fn check_press(query: &Value, reading: &IncomingReading) {
    let data = query["data"].as_str().unwrap_or_default();
    let press_id = format!("press:{}", query["id"].as_str().unwrap_or_default());
    let presser = id_text(&query["from"]["id"]);
    match reading {
        IncomingReading::Answer {
            sender,
            event_id,
            prompt,
            approve,
            ..
        } => {
            assert_eq!((sender, event_id), (&presser, &press_id));
            assert_eq!(
                cancel_number(data),
                None,
                "a list's button read as an answer"
            );
            let answer = if *approve { ":y" } else { ":n" };
            let named = data
                .strip_prefix("hc:")
                .and_then(|rest| rest.strip_suffix(answer))
                .unwrap_or_else(|| panic!("answer {prompt} {approve} read from {data:?}"));
            assert_eq!(named.parse::<PromptId>().as_ref(), Ok(prompt));
            assert_eq!(prompt.to_string().parse::<PromptId>().as_ref(), Ok(prompt));
        }
        IncomingReading::Cancel {
            sender,
            event_id,
            schedule_id,
            ..
        } => {
            assert_eq!((sender, event_id), (&presser, &press_id));
            assert_eq!(cancel_number(data), Some(*schedule_id), "{data:?}");
        }
        IncomingReading::NotMine => {
            assert_eq!(
                cancel_number(data),
                None,
                "a list's button refused: {data:?}"
            );
        }
        other => panic!("a button press read as {other:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let Ok(reading) = read_update_json(text) else {
        return;
    };
    // JSON naming a key twice is read one way by serde_json's Value and may be read the
    // other by hearth's reader; no platform sends it.
    if hearth_fuzz_checks::json::has_duplicate_keys(text) {
        return;
    }
    // A number beyond what serde_json's Value holds, in a field hearth never reads, is
    // no reason to refuse the rest; the properties are checked where the JSON reads.
    let Ok(update) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let bot_api = bot_api_reading(text);
    if bot_api == BotApiReading::Unreadable {
        assert_eq!(reading, IncomingReading::Ignored, "{text}");
    } else if update["message"].is_object() {
        let kind_read = bot_api == BotApiReading::Whole;
        check_message(&update["message"], &reading, kind_read);
    } else if update["callback_query"].is_object() {
        check_press(&update["callback_query"], &reading);
    } else {
        assert_eq!(reading, IncomingReading::Ignored, "{text}");
    }
});
