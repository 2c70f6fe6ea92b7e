//! A Matrix room message event as a sync delivers it, read by the Matrix adapter
//! (`hearth::fuzzing::read_room_message`) before it asks the homeserver or the store
//! anything.
//!
//! Input: the room id on the first line, the event's JSON after it.
//!
//! Properties, checked against the JSON: an edit (`m.replace`) and a bot's `m.notice` are
//! not new messages; any other message is in the conversation of its room, or of the
//! thread its `m.thread` relation names (when that root is an event id), and that
//! conversation's id reads back to the same room and thread; it replies to the event its
//! `m.in_reply_to` names (not in a thread's fallback); its text is the member's own words,
//! trimmed, without a reply's quoted fallback; its file (image, file, audio) is kept under
//! a name that cannot leave the message's folder, an audio clip with its stated duration
//! in whole seconds.
#![no_main]

use hearth::fuzzing::{RoomMessageReading, is_event_id, read_room_message};
use hearth::ports::AttachmentKind;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// A file name that cannot leave its folder or confuse a shell or a client.
fn check_file_name(name: &str) {
    assert!(!name.is_empty() && name.chars().count() <= 120, "{name:?}");
    assert!(
        !name
            .chars()
            .any(|c| matches!(c, '/' | '\\' | '\0' | ':') || c.is_control()),
        "{name:?}"
    );
    assert!(!name.starts_with('.') && !name.ends_with('.'), "{name:?}");
}

fn check(room: &str, event: &Value, read: &RoomMessageReading) {
    let content = &event["content"];
    let relation = &content["m.relates_to"];
    let rel_type = relation["rel_type"].as_str();
    let thread_root = (rel_type == Some("m.thread"))
        .then(|| relation["event_id"].as_str())
        .flatten()
        .filter(|root| is_event_id(root));
    // A thread whose root is no event id is no relation hearth knows.
    let rel_type = rel_type.filter(|&kind| kind != "m.thread" || thread_root.is_some());
    match &read.conversation {
        Ok(conversation) => {
            assert_eq!(conversation.channel(), "matrix");
            let expected = match thread_root {
                Some(root) => format!("{room}/{root}"),
                None => room.to_string(),
            };
            assert_eq!(conversation.conversation_id(), expected);
            assert_eq!(
                read.conversation_read_back,
                Some((room.to_string(), thread_root.map(str::to_string))),
                "conversation {conversation} does not read back"
            );
        }
        Err(error) => {
            let id = format!("{room}{}", thread_root.unwrap_or_default());
            assert!(
                id.chars().any(char::is_control) || room.contains('/'),
                "{error} for {id:?}"
            );
        }
    }
    let in_reply_to = relation["m.in_reply_to"]["event_id"].as_str();
    let falling_back = relation["is_falling_back"].as_bool().unwrap_or(false);
    let expected_reply = match rel_type {
        Some("m.thread") if falling_back => None,
        _ => in_reply_to,
    };
    assert_eq!(read.replied_to.as_deref(), expected_reply);
    assert_eq!(read.text, read.text.trim(), "text not trimmed");
    let msgtype = content["msgtype"].as_str().unwrap_or_default();
    let body = content["body"].as_str().unwrap_or_default();
    if matches!(msgtype, "m.text" | "m.emote") {
        if read.replied_to.is_none() || !body.starts_with("> ") {
            assert_eq!(read.text, body.trim());
        } else {
            assert!(
                body.contains(&read.text),
                "{:?} is not in {body:?}",
                read.text
            );
        }
    }
    if let Some(entry) = read.list_entry {
        assert!(
            entry >= 0 && read.text.chars().any(|c| c.is_ascii_digit()),
            "{entry} from {:?}",
            read.text
        );
    }
    match (msgtype, &read.file) {
        ("m.image" | "m.file" | "m.audio", Some(file)) => {
            check_file_name(&file.file_name);
            let expected_kind = match msgtype {
                "m.image" => AttachmentKind::Image,
                "m.file" => AttachmentKind::File,
                _ => AttachmentKind::Audio,
            };
            assert_eq!(file.kind, expected_kind);
            let stated = content["info"]["duration"].as_u64();
            match (msgtype, stated) {
                ("m.audio", Some(millis)) => assert_eq!(
                    file.duration_seconds.map(u64::from),
                    u32::try_from((millis + 500) / 1000).ok().map(u64::from)
                ),
                _ => assert_eq!(file.duration_seconds, None),
            }
        }
        ("m.image" | "m.file" | "m.audio", None) => panic!("a {msgtype} without its file"),
        (_, None) => {}
        (_, Some(file)) => panic!("a {msgtype} with a file {file:?}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let Some((room, event_json)) = text.split_once('\n') else {
        return;
    };
    let Ok(read) = read_room_message(room, event_json) else {
        return;
    };
    // JSON naming a key twice is read one way by serde_json's Value and may be read the
    // other by hearth's reader; no platform sends it.
    if hearth_fuzz_checks::json::has_duplicate_keys(event_json) {
        return;
    }
    // A number beyond what serde_json's Value holds, in a field hearth never reads, is
    // no reason to refuse the rest; the properties are checked where the JSON reads.
    let Ok(event) = serde_json::from_str::<Value>(event_json) else {
        return;
    };
    let content = &event["content"];
    match read {
        None => assert!(
            content["m.relates_to"]["rel_type"] == "m.replace" || content["msgtype"] == "m.notice",
            "a message not read: {event_json}"
        ),
        Some(read) => {
            assert!(content["msgtype"] != "m.notice", "a notice read");
            assert!(
                content["m.relates_to"]["rel_type"] != "m.replace",
                "an edit read"
            );
            check(room, &event, &read);
        }
    }
});
