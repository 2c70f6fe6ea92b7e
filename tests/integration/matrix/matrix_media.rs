//! Matrix attachments are streamed to disk and cut off at `max_attachment_bytes` whatever
//! the event says: the real binary, sent 50 MB (once declared, once hidden behind a false
//! small size), refuses the file without ever holding it in memory, and tells the model why;
//! a voice message in an encrypted room is stored decrypted as an audio attachment, its
//! length measured from the decrypted file, and answered with what was understood of it.

use std::time::Duration;

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    files_in, homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;
use crate::support::transcription_server::{Step as Heard, TranscriptionServer};
use crate::support::voice::{is_ogg, opusinfo_seconds, spoken_ogg, stored_audio, transcribing_on};

/// The highest resident memory the process ever had, in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_attachment_is_refused_without_being_held_in_memory() {
    let Some(server) = homeserver("matrix_big_attachment").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = write_matrix_config(folder.path(), &llm, &server, &[]);
    let mut env = matrix_env();
    env.push(("HEARTH__CHANNELS__MATRIX__MAX_ATTACHMENT_BYTES", "1048576"));
    let hearth = Hearth::spawn(&config, &test_env(&env));
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, false, &[]).await;
    let fifty_mb: Vec<u8> = (0..50_000_000u32)
        .map(|index| (index % 253) as u8)
        .collect();
    let before = peak_rss_kb(hearth.pid());

    // Said to be 50 MB: not downloaded at all.
    llm.push(Step::Reply("Too big, as declared.".into()));
    alice
        .send_image_claiming(&room, "declared.png", fifty_mb.clone(), Some(50_000_000))
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "Too big, as declared."
    })
    .await;
    // Said to be a kilobyte, really 50 MB: the download stops at the limit.
    llm.push(Step::Reply("Too big, whatever it said.".into()));
    alice
        .send_image_claiming(&room, "lying.png", fifty_mb, Some(1000))
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "Too big, whatever it said."
    })
    .await;

    let after = peak_rss_kb(hearth.pid());
    assert!(
        after < before + 20 * 1024,
        "peak memory grew from {before} kB to {after} kB: the file was held in memory"
    );
    for index in 0..2 {
        let seen = llm.requests()[index].body["messages"].to_string();
        assert!(
            seen.contains("It could not be kept: it is larger than the 1024 KB"),
            "{seen}"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let kept = files_in(&folder.path().join("attachments"));
    assert!(kept.is_empty(), "nothing is left on disk: {kept:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_message_in_an_encrypted_room_is_stored_decrypted_with_its_duration() {
    let Some(server) = homeserver("matrix_voice").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = write_matrix_config(folder.path(), &llm, &server, &[]);
    let whisper = TranscriptionServer::start();
    let mut env = test_env(&matrix_env());
    env.extend(transcribing_on(&whisper, &[]));
    let _hearth = Hearth::spawn(&config, &env);
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    let note = spoken_ogg("Remind me to water the plants tonight");

    whisper.push(Heard::Text("Remind me to water the plants tonight.".into()));
    llm.push(Step::Reply("I heard a voice message.".into()));
    alice
        .send_voice(
            &room,
            "voice-message.ogg",
            note.clone(),
            Duration::from_millis(3_400),
        )
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "🎤 “Remind me to water the plants tonight.”\n\nI heard a voice message."
    })
    .await;
    // The backend got the decrypted file, and the model the words.
    let heard = whisper.received();
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0].file_start, b"OggS");
    assert_eq!(heard[0].file_size, note.len());
    let seen = llm.requests()[0].body["messages"].to_string();
    assert!(
        seen.contains("Remind me to water the plants tonight."),
        "{seen}"
    );

    let stored = stored_audio(&folder.path().join("hearth.db")).await;
    assert_eq!(stored.len(), 1, "{stored:?}");
    let (text, audio) = &stored[0];
    assert_eq!(text, "Remind me to water the plants tonight.", "its words");
    assert_eq!(audio.file_name, "voice-message.ogg");
    assert_eq!(audio.mime_type.as_deref(), Some("audio/ogg"));
    // Measured from the decrypted file, not the 3.4 s its event states.
    let measured = opusinfo_seconds(&note).round() as u32;
    assert_eq!(audio.duration_seconds, Some(measured));
    assert_eq!(
        audio.transcript.as_deref(),
        Some("Remind me to water the plants tonight.")
    );
    assert_eq!(audio.size_bytes, note.len() as u64);
    let path = audio.path.as_deref().expect("the voice message was kept");
    let kept = std::fs::read(path).unwrap();
    assert!(is_ogg(&kept), "stored decrypted");
    assert_eq!(kept, note);
    let kept_files = files_in(&folder.path().join("attachments"));
    assert_eq!(kept_files.len(), 1, "no ciphertext is left: {kept_files:?}");
}
