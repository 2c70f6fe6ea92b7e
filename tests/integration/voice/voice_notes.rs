//! Voice notes reach hearth as audio attachments on Telegram and over the HTTP API: a real
//! OGG/Opus note spoken by espeak-ng (`support::voice`) is stored in the inbox with its
//! duration, its bytes on disk and, once transcribed, its transcript; over the size limit,
//! with the reason and no file, and the member told why.
//! Matrix's voice messages are in `matrix_media.rs`.

use std::path::Path;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::files_in;
use crate::support::telegram::{InboundMessage, TelegramServer, TgChat};
use crate::support::telegram_family::{TOKEN, alice, bot_says, start_on_telegram};
use crate::support::transcription_server::{Step as Heard, TranscriptionServer};
use crate::support::voice::{
    borrowed, field, file, is_ogg, opusinfo_seconds, post_form, spoken_ogg, stored_audio,
    transcribing_on,
};

#[actix::test]
async fn a_telegram_voice_note_and_audio_file_are_stored_as_audio_with_their_duration() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let limit = [(
        "HEARTH__CHANNELS__TELEGRAM__MAX_ATTACHMENT_BYTES",
        "1048576",
    )];
    let whisper = TranscriptionServer::start();
    let env = transcribing_on(&whisper, &limit);
    let app = start_on_telegram(&llm, &telegram, &[], None, &borrowed(&env)).await;
    let chat = TgChat::private(&alice());
    let note = spoken_ogg("Please buy milk and bread on the way home");
    whisper.push(Heard::Text(
        "Please buy milk and bread on the way home.".into(),
    ));
    whisper.push(Heard::Text("A memo.".into()));
    let seconds = opusinfo_seconds(&note).round() as u32;

    llm.push(Step::Reply("Milk and bread, noted.".into()));
    telegram.push_voice(
        &chat,
        &alice(),
        &note,
        seconds,
        Some("for the shopping list"),
    );
    bot_says(&telegram, 1001, "Milk and bread, noted.").await;
    llm.push(Step::Reply("A memo, noted.".into()));
    let memo = InboundMessage::audio("memo.ogg", "audio/ogg", &note, seconds, None);
    telegram.push_message(&chat, &alice(), memo);
    bot_says(&telegram, 1001, "A memo, noted.").await;

    let stored = stored_audio(&app.folder().join("hearth.db")).await;
    assert_eq!(stored.len(), 2, "{stored:?}");
    let (text, voice) = &stored[0];
    assert_eq!(
        text, "Please buy milk and bread on the way home.\n\nfor the shopping list",
        "the words, then the caption"
    );
    assert_eq!(voice.mime_type.as_deref(), Some("audio/ogg"));
    assert_eq!(voice.duration_seconds, Some(seconds));
    assert_eq!(voice.size_bytes, note.len() as u64);
    assert_eq!(voice.note, None);
    assert_eq!(
        voice.transcript.as_deref(),
        Some("Please buy milk and bread on the way home.")
    );
    let kept = std::fs::read(voice.path.as_deref().expect("the voice note was kept")).unwrap();
    assert!(is_ogg(&kept));
    assert_eq!(kept, note);
    let (text, memo) = &stored[1];
    assert_eq!(text, "A memo.");
    assert_eq!(memo.file_name, "memo.ogg");
    assert_eq!(memo.duration_seconds, Some(seconds));
    assert!(is_ogg(
        &std::fs::read(memo.path.as_deref().unwrap()).unwrap()
    ));
    app.stop().await;
}

#[actix::test]
async fn a_telegram_voice_note_over_the_limit_is_stored_with_the_reason_and_no_file() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    // These tests' limit is 4096 bytes: a spoken sentence is larger.
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let chat = TgChat::private(&alice());
    let note = spoken_ogg("This voice note is a little too long for the limit");
    assert!(note.len() > 4096);

    telegram.push_voice(&chat, &alice(), &note, 3, None);
    // Only an attachment and no text: still a message, not "nothing to read"; told why.
    bot_says(
        &telegram,
        1001,
        "I couldn't get that voice note: it is larger than the 4 KB hearth accepts.",
    )
    .await;

    let stored = stored_audio(&app.folder().join("hearth.db")).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let (_, voice) = &stored[0];
    assert_eq!(voice.path, None);
    assert_eq!(
        voice.note.as_deref(),
        Some("it is larger than the 4 KB hearth accepts")
    );
    assert_eq!(voice.duration_seconds, Some(3));
    assert!(telegram.calls_of("getFile").is_empty(), "never downloaded");
    assert_eq!(
        llm.request_count(),
        0,
        "no model is asked about what nobody heard"
    );
    let kept = files_in(&app.folder().join("attachments"));
    assert!(kept.is_empty(), "{kept:?}");
    app.stop().await;
}

#[actix::test]
async fn an_http_api_form_with_a_voice_note_is_stored_as_audio_with_the_files_duration() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let attachments = folder.path().join("attachments");
    let attachments_dir = attachments.display().to_string();
    let overrides = [
        ("HEARTH__HTTP__MAX_ATTACHMENT_BYTES", "100000"),
        (
            "HEARTH__CHANNELS__TELEGRAM__ATTACHMENTS_DIR",
            attachments_dir.as_str(),
        ),
    ];
    let whisper = TranscriptionServer::start();
    let env = transcribing_on(&whisper, &overrides);
    let app = Hearth::start_in(folder, &llm.base_url(), &borrowed(&env)).await;
    let note = spoken_ogg("Is the school closed on Friday");

    let (status, body) = post_form(&app, &[field("user_id", "alice")]).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("no `audio` file"),
        "{body}"
    );

    let png = file("audio", "photo.png", "image/png", &[1u8; 100]);
    let (status, body) = post_form(&app, &[field("user_id", "alice"), png]).await;
    assert_eq!(status, 400, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("`audio`") && error.contains("image/png"),
        "{body}"
    );

    let big: Vec<u8> = note.iter().copied().cycle().take(150_000).collect();
    let too_big = file("audio", "long.ogg", "audio/ogg", &big);
    let (status, body) = post_form(&app, &[field("user_id", "alice"), too_big]).await;
    assert_eq!(status, 413, "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("100000 bytes") && error.contains("http.max_attachment_bytes"),
        "{body}"
    );
    assert!(files_in(&attachments).is_empty(), "nothing refused is kept");
    assert_eq!(
        std::fs::read_dir(&attachments)
            .map(|entries| entries.count())
            .unwrap_or(0),
        0,
        "no folder of a refused message is left"
    );
    assert_eq!(llm.request_count(), 0, "nothing refused reached the model");

    llm.push(Step::Reply("I will check the school's page.".into()));
    whisper.push(Heard::Text("Is the school closed on Friday?".into()));
    let voice = file("audio", "question.ogg", "audio/ogg", &note);
    let (status, body) = post_form(
        &app,
        &[
            voice,
            field("user_id", "alice"),
            field("session_id", "kitchen"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["reply"],
        "🎤 “Is the school closed on Friday?”\n\nI will check the school's page."
    );
    let id = body["id"].as_str().unwrap();
    let record = app.app().stores.inbox.get(id).await.unwrap().unwrap();
    assert_eq!(record.inbound.text, "Is the school closed on Friday?");
    assert_eq!(
        record.inbound.conversation.conversation_id(),
        "alice/kitchen"
    );
    let audio = &record.inbound.extras.attachments[0];
    assert_eq!(audio.kind, hearth::ports::AttachmentKind::Audio);
    assert_eq!(audio.file_name, "question.ogg");
    assert_eq!(audio.mime_type.as_deref(), Some("audio/ogg"));
    assert_eq!(audio.size_bytes, note.len() as u64);
    let expected = opusinfo_seconds(&note);
    let duration = f64::from(audio.duration_seconds.expect("read from the file"));
    assert!(
        (duration - expected).abs() <= 1.0,
        "{duration} s, opusinfo says {expected} s"
    );
    let path = audio.path.as_deref().unwrap();
    assert_eq!(
        Path::new(path),
        attachments.join(id).join("question.ogg"),
        "kept in the attachments folder, under the message"
    );
    assert_eq!(std::fs::read(path).unwrap(), note);
    assert_eq!(files_in(&attachments).len(), 1);

    // A form with only text is a message as the JSON one is.
    llm.push(Step::Reply("Text works too.".into()));
    let (status, body) = post_form(&app, &[field("user_id", "alice"), field("text", "hi")]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], "Text works too.");
    app.stop().await;
}
