//! Voice notes answered as if typed: a real espeak-ng voice note goes through the channel,
//! the scripted transcription server (real multipart over a real socket) is sent the file,
//! the transcript reaches the model with a note that it was spoken, and the answer starts
//! with what was understood. A spoken slash command picks its profile, and one whose tool
//! asks first waits for the member's press as a typed one does; a backend that is
//! down is told once and the note answered on a retry; a note too long (as measured from
//! its file), unmeasurable, not kept or with no backend configured is told plainly and
//! never sent to a model.

use hearth::voice::TRANSCRIPTION_DELAYED;
use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::reminders::{REMIND_TOOLS, script_reminder};
use crate::support::telegram::{TelegramServer, TgChat};
use crate::support::telegram_family::{
    TOKEN, alice, bot_says, press, prompt_in, secure_profile, start_on_telegram,
};
use crate::support::transcription_server::{Step as Heard, TranscriptionServer};
use crate::support::voice::{
    borrowed, field, file, opusinfo_seconds, post_form, spoken_ogg, stored_audio, transcribing_on,
};

/// A test's folder, and its attachments folder, where the HTTP API keeps files too.
fn folder_with_attachments() -> (tempfile::TempDir, String) {
    let folder = tempfile::tempdir().unwrap();
    let attachments = folder.path().join("attachments").display().to_string();
    (folder, attachments)
}

/// The text of the last user message the model was sent in request `index`.
fn user_text_seen(llm: &ScriptedLlmServer, index: usize) -> String {
    let request = &llm.requests()[index];
    let messages = request.body["messages"].as_array().unwrap();
    let last_user = messages
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .unwrap();
    last_user["content"].to_string()
}

#[actix::test]
async fn a_voice_note_saying_remind_me_to_buy_milk_is_answered_as_if_typed() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let whisper = TranscriptionServer::start();
    let tools = [(
        "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
        REMIND_TOOLS,
    )];
    let env = transcribing_on(&whisper, &tools);
    let app = start_on_telegram(&llm, &telegram, &[], None, &borrowed(&env)).await;
    let note = spoken_ogg("Remind me to buy milk in ten minutes");
    let seconds = opusinfo_seconds(&note).round() as u32;

    whisper.push(Heard::Text(
        " Remind me to buy milk in ten minutes. ".into(),
    ));
    script_reminder(
        &llm,
        json!({"text": "buy milk", "delay": "PT10M"}),
        "I'll remind you to buy milk in ten minutes.",
    );
    telegram.push_voice(&TgChat::private(&alice()), &alice(), &note, seconds, None);
    bot_says(&telegram, 1001, "I'll remind you to buy milk").await;

    // The backend got the real file, as a transcription client sends it.
    let received = whisper.received();
    assert_eq!(received.len(), 1, "{received:?}");
    let heard = &received[0];
    assert_eq!(heard.path, "/v1/audio/transcriptions");
    assert_eq!(heard.model.as_deref(), Some("whisper-1"));
    assert_eq!(heard.language.as_deref(), Some("en"));
    assert_eq!(heard.content_type.as_deref(), Some("audio/ogg"));
    assert_eq!(heard.file_size, note.len());
    assert_eq!(heard.file_start, b"OggS");
    // The model read the words, and that they were spoken, and set the reminder.
    let seen = user_text_seen(&llm, 0);
    assert!(
        seen.contains("Remind me to buy milk in ten minutes."),
        "{seen}"
    );
    assert!(seen.contains("(Spoken in a voice note"), "{seen}");
    assert!(llm.tool_result_seen(1).contains("buy milk"));
    // The member sees what was understood before the answer.
    let answer = telegram.bot_texts_in(1001);
    assert_eq!(
        answer,
        vec![
            "🎤 “Remind me to buy milk in ten minutes.”\n\n\
             I'll remind you to buy milk in ten minutes."
                .to_string()
        ]
    );
    // The transcript is kept with the message, and the history keeps it spoken.
    let stored = stored_audio(&app.folder().join("hearth.db")).await;
    assert_eq!(stored[0].0, "Remind me to buy milk in ten minutes.");
    assert_eq!(
        stored[0].1.transcript.as_deref(),
        Some("Remind me to buy milk in ten minutes.")
    );
    llm.push(Step::Reply("You asked about milk.".into()));
    telegram.push_private_text(&alice(), "what did I just ask?");
    bot_says(&telegram, 1001, "You asked about milk.").await;
    let history = llm.requests()[2].body["messages"].to_string();
    assert!(
        history.contains("Remind me to buy milk in ten minutes."),
        "{history}"
    );
    assert!(history.contains("Spoken in a voice note"), "{history}");
    assert_eq!(whisper.received().len(), 1, "transcribed once");
    app.stop().await;
}

#[actix::test]
async fn a_spoken_slash_command_picks_its_profile() {
    let llm = ScriptedLlmServer::start();
    let whisper = TranscriptionServer::start();
    let (folder, attachments) = folder_with_attachments();
    let env = transcribing_on(
        &whisper,
        &[("HEARTH__CHANNELS__TELEGRAM__ATTACHMENTS_DIR", &attachments)],
    );
    let app = Hearth::start_in(folder, &llm.base_url(), &borrowed(&env)).await;
    let note = spoken_ogg("Slash focus, what is next");

    whisper.push(Heard::Text("Slash focus, what is next?".into()));
    llm.push(Step::Reply("The dentist at three.".into()));
    let voice = file("audio", "next.ogg", "audio/ogg", &note);
    let (status, body) = post_form(&app, &[voice, field("user_id", "alice")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "🎤 “Slash focus, what is next?”\n\nThe dentist at three."
    );
    let request = &llm.requests()[0];
    let system = request.body["messages"][0]["content"].to_string();
    assert!(system.contains("You are focused."), "{system}");
    let seen = user_text_seen(&llm, 0);
    assert!(
        seen.starts_with("\"what is next?"),
        "the command is not read: {seen}"
    );
    let id = body["id"].as_str().unwrap();
    let record = app.app().stores.inbox.get(id).await.unwrap().unwrap();
    assert_eq!(record.inbound.text, "/focus what is next?");
    app.stop().await;
}

#[actix::test]
async fn a_transcription_backend_that_is_down_is_told_once_and_the_note_answered_later() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let whisper = TranscriptionServer::start();
    let env = transcribing_on(&whisper, &[]);
    let app = start_on_telegram(&llm, &telegram, &[], None, &borrowed(&env)).await;
    let note = spoken_ogg("Is it raining");

    // The broker's three attempts fail, then the queue's retry succeeds.
    for _ in 0..3 {
        whisper.push(Heard::Error {
            status: 503,
            retry_after: None,
        });
    }
    whisper.push(Heard::Text("Is it raining?".into()));
    llm.push(Step::Reply("Not right now.".into()));
    telegram.push_voice(&TgChat::private(&alice()), &alice(), &note, 1, None);
    bot_says(&telegram, 1001, "Not right now.").await;

    let said = telegram.bot_texts_in(1001);
    assert_eq!(
        said,
        vec![
            TRANSCRIPTION_DELAYED.to_string(),
            "🎤 “Is it raining?”\n\nNot right now.".to_string()
        ]
    );
    assert_eq!(whisper.received().len(), 4);
    assert_eq!(
        llm.request_count(),
        1,
        "the model is asked once, with the words"
    );
    app.stop().await;
}

#[actix::test]
async fn a_voice_note_too_long_unmeasurable_or_not_kept_is_told_plainly_and_reaches_no_model() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let whisper = TranscriptionServer::start();
    let limits = [("HEARTH__VOICE_NOTES__MAX_DURATION_SECONDS", "1")];
    let env = transcribing_on(&whisper, &limits);
    let app = start_on_telegram(&llm, &telegram, &[], None, &borrowed(&env)).await;
    let chat = TgChat::private(&alice());
    let note = spoken_ogg("This one goes on and on and on, far longer than it should");
    let seconds = opusinfo_seconds(&note).round() as u32;

    // Measured from its file: over the limit, it is never transcribed.
    telegram.push_voice(&chat, &alice(), &note, 421, None);
    bot_says(&telegram, 1001, "That voice note is").await;
    // A file that is no audio at all cannot be measured: refused, in words.
    let not_audio = b"This file holds no audio at all. ".repeat(40);
    telegram.push_voice(&chat, &alice(), &not_audio, 1, None);
    bot_says(
        &telegram,
        1001,
        "I couldn't tell how long that voice note plays",
    )
    .await;
    // Too large to download: told why, in words.
    let too_large = vec![7u8; 1_048_577];
    telegram.push_voice(&chat, &alice(), &too_large, 1, None);
    bot_says(
        &telegram,
        1001,
        "I couldn't get that voice note: it is larger than",
    )
    .await;

    assert!(whisper.received().is_empty());
    assert_eq!(llm.request_count(), 0);
    let said = telegram.bot_texts_in(1001);
    assert_eq!(
        said[0],
        format!(
            "That voice note is {seconds} s long, and I can only listen to voice notes up to \
             1 s. Please send a shorter one, or type your message."
        )
    );
    assert_eq!(
        said[1],
        "I couldn't tell how long that voice note plays: its file is in no format I can read \
         (OGG, WAV, MP3, M4A or FLAC). Please record it again, or type your message."
    );
    assert_eq!(said.len(), 3, "{said:?}");
    app.stop().await;
}

#[actix::test]
async fn without_a_transcription_backend_a_voice_note_is_answered_with_what_to_do() {
    let llm = ScriptedLlmServer::start();
    let (folder, attachments) = folder_with_attachments();
    let env = [(
        "HEARTH__CHANNELS__TELEGRAM__ATTACHMENTS_DIR",
        attachments.as_str(),
    )];
    let app = Hearth::start_in(folder, &llm.base_url(), &env).await;
    let note = spoken_ogg("Hello");
    let voice = file("audio", "hello.ogg", "audio/ogg", &note);
    let (status, body) = post_form(&app, &[voice, field("user_id", "alice")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "I can't listen to voice notes here: no transcription service is set up. \
         Please type your message."
    );
    assert_eq!(body["status"], "failed");
    assert_eq!(llm.request_count(), 0);
    app.stop().await;
}

#[actix::test]
async fn a_spoken_request_asks_for_approval_as_a_typed_one_does() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let whisper = TranscriptionServer::start();
    let env = transcribing_on(&whisper, &[]);
    let app = start_on_telegram(&llm, &telegram, &[secure_profile()], None, &borrowed(&env)).await;
    let note = spoken_ogg("Slash secure, I live in Berlin");

    whisper.push(Heard::Text("Slash secure, I live in Berlin.".into()));
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "city", "value": "Berlin"}),
        )]),
        Step::Reply("Done: Berlin.".into()),
    ]);
    telegram.push_voice(&TgChat::private(&alice()), &alice(), &note, 2, None);
    // The spoken command picked the profile that asks before it writes.
    let prompt = prompt_in(&telegram, 1001).await;
    let shown = prompt.text.clone().unwrap();
    assert!(
        shown.contains("profile_update") && shown.contains("Berlin"),
        "{shown}"
    );
    assert_eq!(
        press(&telegram, &alice(), &prompt, 0).await,
        ("Confirmed.".into(), false)
    );
    bot_says(&telegram, 1001, "Done: Berlin.").await;
    let said = telegram.bot_texts_in(1001);
    assert_eq!(
        said.last().map(String::as_str),
        Some("🎤 “Slash secure, I live in Berlin.”\n\nDone: Berlin.")
    );
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Berlin"));
    assert_eq!(
        whisper.received().len(),
        1,
        "the approval transcribes nothing again"
    );
    app.stop().await;
}
