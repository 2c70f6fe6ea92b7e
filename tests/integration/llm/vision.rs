//! Photos sent on Telegram reach the model as images when its config says it can see
//! (`llms.<name>.vision`), and as a line of text otherwise: checked in the request bodies
//! the scripted LLM server received. History keeps only the text, a turn waiting for a
//! confirmation stores no image yet sees it again when resumed, and a fallback model that
//! cannot see gets a note instead of the image.

use std::time::Duration;

use hearth::llm::IMAGES_NOT_SHOWN;
use serde_json::{Value, json};

use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{TelegramServer, TgChat};
use crate::support::telegram_family::{TOKEN, alice, bot_says, secure_profile, start_on_telegram};

const SEES: (&str, &str) = ("HEARTH__LLMS__MAIN__VISION", "true");
const FALLBACK: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__LLM_FALLBACK_MODEL",
    "backup",
);

/// A photo under the tests' 4 KB attachment limit whose base64 is known without an encoder:
/// every "Man" is "TWFu".
fn photo() -> (Vec<u8>, String) {
    (b"Man".repeat(300), "TWFu".repeat(300))
}

/// The last message of a recorded OpenAI request: the member's message of that turn.
fn last_message(body: &Value) -> &Value {
    body["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .expect("a message")
}

#[actix::test]
async fn a_photo_is_shown_to_a_model_that_can_see_and_history_keeps_the_text() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[SEES]).await;
    let chat = TgChat::private(&alice());
    let (bytes, base64) = photo();

    llm.push(Step::Reply("A nice picture.".into()));
    telegram.push_photo(&chat, &alice(), &bytes, Some("what is this?"));
    bot_says(&telegram, 1001, "A nice picture.").await;
    let asked = llm.requests()[0].body.clone();
    let parts = last_message(&asked)["content"]
        .as_array()
        .expect("content as parts")
        .clone();
    assert_eq!(parts.len(), 2, "{parts:?}");
    assert_eq!(parts[0]["type"], "text");
    let text = parts[0]["text"].as_str().unwrap();
    assert!(
        text.starts_with("what is this?\n(Attached: an image"),
        "{text}"
    );
    assert!(text.ends_with(", image/jpeg, shown below.)"), "{text}");
    assert_eq!(parts[1]["type"], "image_url");
    assert_eq!(
        parts[1]["image_url"]["url"],
        format!("data:image/jpeg;base64,{base64}")
    );

    // The next turn reads the photo's message from history: words only, no image.
    llm.push(Step::Reply("You are welcome.".into()));
    telegram.push_private_text(&alice(), "thanks");
    bot_says(&telegram, 1001, "You are welcome.").await;
    let asked = llm.requests()[1].body.clone();
    let earlier = asked["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|message| {
            message["content"]
                .as_str()
                .is_some_and(|text| text.starts_with("what is this?"))
        })
        .expect("the photo's message in history")
        .clone();
    let earlier = earlier["content"].as_str().unwrap();
    assert!(
        earlier.ends_with("shown with this message only; it cannot be seen again.)"),
        "{earlier}"
    );
    assert!(!asked.to_string().contains("base64"), "{asked}");
    assert_eq!(last_message(&asked)["content"], "thanks");
    app.stop().await;
}

#[actix::test]
async fn a_model_that_cannot_see_gets_only_the_note() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let chat = TgChat::private(&alice());
    let (bytes, _) = photo();

    llm.push(Step::Reply("I cannot see it.".into()));
    telegram.push_photo(&chat, &alice(), &bytes, Some("what is this?"));
    bot_says(&telegram, 1001, "I cannot see it.").await;
    let asked = llm.requests()[0].body.clone();
    let text = last_message(&asked)["content"]
        .as_str()
        .expect("content as a plain string");
    assert!(
        text.starts_with("what is this?\n(Attached: an image"),
        "{text}"
    );
    assert!(
        text.ends_with("This assistant cannot see images; say so if its contents matter.)"),
        "{text}"
    );
    let body = asked.to_string();
    assert!(
        !body.contains("image_url") && !body.contains("base64"),
        "{body}"
    );
    app.stop().await;
}

#[actix::test]
async fn a_fallback_model_that_cannot_see_gets_a_note_instead_of_the_image() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[SEES, FALLBACK]).await;
    let chat = TgChat::private(&alice());
    let (bytes, _) = photo();

    // A permanent error: no retries, straight to the fallback.
    llm.push(Step::Error {
        status: 400,
        retry_after: None,
        body: "no".into(),
    });
    llm.push(Step::Reply("Something went wrong with the picture.".into()));
    telegram.push_photo(&chat, &alice(), &bytes, Some("what is this?"));
    bot_says(&telegram, 1001, "Something went wrong").await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "scripted-main");
    assert!(requests[0].body.to_string().contains("image_url"));
    let fallback = &requests[1].body;
    assert_eq!(fallback["model"], "scripted-backup");
    let text = last_message(fallback)["content"]
        .as_str()
        .expect("content as a plain string");
    assert!(
        text.ends_with(&format!("shown below.)\n{IMAGES_NOT_SHOWN}")),
        "{text}"
    );
    assert!(!fallback.to_string().contains("base64"), "{fallback}");
    app.stop().await;
}

#[actix::test]
async fn a_turn_waiting_for_confirmation_stores_no_image_and_sees_it_again_when_resumed() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &[SEES]).await;
    let chat = TgChat::private(&alice());
    let (bytes, base64) = photo();
    let data_url = format!("data:image/jpeg;base64,{base64}");

    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "city", "value": "Oslo"}),
        )]),
        Step::Reply("Saved: Oslo.".into()),
    ]);
    telegram.push_photo(
        &chat,
        &alice(),
        &bytes,
        Some("/secure my city is on this sign"),
    );
    let prompt = telegram
        .wait_for_message(
            1001,
            |message| !message.button_data().is_empty(),
            Duration::from_secs(10),
        )
        .await
        .expect("a confirmation with buttons");
    let open = app.app().stores.pending.open().await.unwrap();
    assert_eq!(open.len(), 1);
    let stored = open[0].confirmation.turn_state.to_string();
    assert!(!stored.contains(&base64), "the stored turn holds the image");
    assert!(stored.contains("shown below"), "{stored}");

    telegram.push_callback(
        &alice(),
        prompt.chat_id,
        prompt.message_id,
        &prompt.button_data()[0],
    );
    bot_says(&telegram, 1001, "Saved: Oslo.").await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let member = request.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|message| message["role"] == "user")
            .expect("the member's message")
            .clone();
        assert_eq!(member["content"][1]["image_url"]["url"], data_url.as_str());
    }
    assert_eq!(
        requests[1].body["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["role"],
        "tool"
    );

    // The photo deleted while the turn waits: the resumed turn says so instead.
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "city", "value": "Bergen"}),
        )]),
        Step::Reply("Saved: Bergen.".into()),
    ]);
    telegram.push_photo(&chat, &alice(), &bytes, Some("/secure and now this one"));
    let prompt = telegram
        .wait_for_message(
            1001,
            |message| message.message_id > prompt.message_id && !message.button_data().is_empty(),
            Duration::from_secs(10),
        )
        .await
        .expect("a second confirmation with buttons");
    std::fs::remove_dir_all(app.folder().join("attachments")).unwrap();
    telegram.push_callback(
        &alice(),
        prompt.chat_id,
        prompt.message_id,
        &prompt.button_data()[0],
    );
    bot_says(&telegram, 1001, "Saved: Bergen.").await;
    let resumed = llm.requests()[3].body["messages"].to_string();
    assert!(!resumed.contains(&base64), "{resumed}");
    assert!(
        resumed.contains("cannot be shown again: the file is no longer there.)"),
        "{resumed}"
    );
    app.stop().await;
}
