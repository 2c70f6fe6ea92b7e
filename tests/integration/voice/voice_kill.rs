//! A voice note through kill -9 of the real binary: killed while the transcription backend
//! works, the note is transcribed again after the restart; killed once its transcript is
//! stored, while the model works, it is never transcribed again. Either way it is answered
//! once, quoting what was understood.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::test_config::TestConfig;
use crate::support::transcription_server::{Step as Heard, TranscriptionServer};
use crate::support::voice::{field, file, post_form_to, spoken_ogg, transcribing_on};

const WAIT: Duration = Duration::from_secs(15);

/// Waits until `done` holds, naming `what` if it never does.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what} never happened");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Sends `note` as alice's message `voice-1` to the first hearth, waits for `killed_at`,
/// kills it with SIGKILL, and returns the answer the restarted hearth gives the same
/// message id.
async fn killed_then_answered(
    llm: &ScriptedLlmServer,
    whisper: &TranscriptionServer,
    killed_at: impl Fn() -> bool,
) -> Value {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), &llm.base_url()).write(folder.path());
    let attachments = folder.path().join("attachments").display().to_string();
    let files = [(
        "HEARTH__CHANNELS__TELEGRAM__ATTACHMENTS_DIR",
        attachments.as_str(),
    )];
    let mut env = test_env(&[]);
    env.extend(transcribing_on(whisper, &files));
    let note = spoken_ogg("Remind me to buy milk");
    let client = reqwest::Client::new();

    let first = Hearth::spawn(&config, &env);
    let sending = {
        let (client, url, note) = (client.clone(), first.base_url.clone(), note.clone());
        tokio::spawn(async move {
            let parts = [
                file("audio", "milk.ogg", "audio/ogg", &note),
                field("user_id", "alice"),
                field("message_id", "voice-1"),
            ];
            post_form_to(&client, &url, &parts).await
        })
    };
    until("the step before the kill", killed_at).await;
    first.kill();
    assert!(
        sending.await.unwrap().is_none(),
        "the killed hearth answered"
    );

    let second = Hearth::spawn(&config, &env);
    let deadline = Instant::now() + WAIT;
    loop {
        // The same message id again: a duplicate, told with the original's state.
        let parts = [
            file("audio", "milk.ogg", "audio/ogg", &note),
            field("user_id", "alice"),
            field("message_id", "voice-1"),
        ];
        let (status, body) = post_form_to(&client, &second.base_url, &parts)
            .await
            .expect("the restarted hearth answers");
        if body["status"] == "answered" {
            drop(second);
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "not answered after restart: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_while_transcribing_the_note_is_transcribed_again_and_answered_once() {
    let llm = ScriptedLlmServer::start();
    let whisper = TranscriptionServer::start();
    whisper.push(Heard::Hang);
    whisper.push(Heard::Text("Remind me to buy milk.".into()));
    llm.push(Step::Reply("I'll remind you.".into()));

    let answer = killed_then_answered(&llm, &whisper, || !whisper.received().is_empty()).await;

    assert_eq!(
        answer["reply"],
        "🎤 “Remind me to buy milk.”\n\nI'll remind you."
    );
    assert_eq!(whisper.received().len(), 2, "the hung one, then once more");
    assert_eq!(llm.request_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_once_the_transcript_is_stored_the_note_is_never_transcribed_again() {
    let llm = ScriptedLlmServer::start();
    let whisper = TranscriptionServer::start();
    whisper.push(Heard::Text("Remind me to buy milk.".into()));
    llm.push(Step::Hang);
    llm.push(Step::Reply("I'll remind you.".into()));

    let answer = killed_then_answered(&llm, &whisper, || llm.request_count() == 1).await;

    assert_eq!(
        answer["reply"],
        "🎤 “Remind me to buy milk.”\n\nI'll remind you."
    );
    assert_eq!(
        whisper.received().len(),
        1,
        "transcribed once, before the kill"
    );
    let seen = llm.requests()[1].body["messages"].to_string();
    assert!(seen.contains("Remind me to buy milk."), "{seen}");
    assert_eq!(llm.request_count(), 2, "the hung call, then the answer");
}
