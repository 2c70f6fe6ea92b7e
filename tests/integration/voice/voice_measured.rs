//! A voice note's length is measured from its file, whatever Telegram states, through the
//! real `hearth run` binary: a note stated short but long in fact is refused above the
//! limit and never reaches the transcription server; a note stated long but short in fact
//! is transcribed, and its cost is counted on the measured seconds. The binary's `/metrics`
//! shows the actors' thread's stall histogram.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::{TelegramServer, TgChat};
use crate::support::telegram_family::{
    TOKEN, alice, bot_says, telegram_env, write_telegram_config,
};
use crate::support::transcription_server::{Step as Heard, TranscriptionServer};
use crate::support::voice::{
    borrowed, opusinfo_seconds, spoken_ogg, stored_audio, transcribing_on,
};

const WAIT: Duration = Duration::from_secs(20);

/// The real binary on `telegram`, transcribing on `whisper`, with `extra` settings.
fn hearth_on(
    folder: &Path,
    llm: &ScriptedLlmServer,
    telegram: &TelegramServer,
    whisper: &TranscriptionServer,
    extra: &[(&str, &str)],
) -> Hearth {
    let config = write_telegram_config(folder, llm, telegram, &[]);
    let transcribing = transcribing_on(whisper, extra);
    let env: BTreeMap<String, String> = telegram_env(&borrowed(&transcribing));
    Hearth::spawn(&config, &env)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_stated_short_but_long_in_fact_is_measured_and_refused_above_the_limit() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let whisper = TranscriptionServer::start();
    let folder = tempfile::tempdir().unwrap();
    let note = spoken_ogg(
        "This voice note says it lasts two seconds, but it goes on and on for much longer \
         than that, well past the limit hearth was given",
    );
    let seconds = opusinfo_seconds(&note).round() as u32;
    assert!(seconds > 4, "the note plays {seconds} s");
    let hearth = hearth_on(
        folder.path(),
        &llm,
        &telegram,
        &whisper,
        &[("HEARTH__VOICE_NOTES__MAX_DURATION_SECONDS", "3")],
    );
    // Anything transcribed would be answered: nothing may be.
    whisper.push(Heard::Text("Words that must never be heard.".into()));
    llm.push(Step::Reply("An answer that must never be given.".into()));

    telegram.push_voice(&TgChat::private(&alice()), &alice(), &note, 2, None);
    bot_says(&telegram, 1001, "That voice note is").await;

    assert_eq!(
        telegram.bot_texts_in(1001),
        vec![format!(
            "That voice note is {seconds} s long, and I can only listen to voice notes up to \
             3 s. Please send a shorter one, or type your message."
        )]
    );
    assert!(whisper.received().is_empty(), "no transcription was asked");
    assert_eq!(llm.request_count(), 0, "no model was asked");
    let log = hearth.log();
    assert!(
        log.contains("stated_seconds=2") && log.contains(&format!("measured_seconds={seconds}")),
        "the disagreement is logged with both values: {log}"
    );
    let (_, metrics) = hearth.get("/metrics").await;
    assert!(
        metrics.contains("# TYPE hearth_actor_thread_stall_seconds histogram")
            && metrics.contains("hearth_actor_thread_stall_seconds_bucket{le=\"1\"}"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_stated_long_but_short_in_fact_is_transcribed_and_billed_on_its_measured_seconds() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let whisper = TranscriptionServer::start();
    let folder = tempfile::tempdir().unwrap();
    let note = spoken_ogg("Buy milk");
    let seconds = opusinfo_seconds(&note).round() as u32;
    assert!(seconds <= 3, "the note plays {seconds} s");
    let hearth = hearth_on(
        folder.path(),
        &llm,
        &telegram,
        &whisper,
        &[
            ("HEARTH__VOICE_NOTES__MAX_DURATION_SECONDS", "60"),
            // One cent a second: the cost says which seconds were counted.
            ("HEARTH__LLMS__WHISPER__COST_PER_AUDIO_MINUTE", "0.6"),
        ],
    );
    whisper.push(Heard::Text("Buy milk.".into()));
    llm.push(Step::Reply("Milk it is.".into()));

    // Stated as ten minutes: above the limit, were the statement believed.
    telegram.push_voice(&TgChat::private(&alice()), &alice(), &note, 600, None);
    bot_says(&telegram, 1001, "Milk it is.").await;

    assert_eq!(
        telegram.bot_texts_in(1001),
        vec!["🎤 “Buy milk.”\n\nMilk it is.".to_string()]
    );
    assert_eq!(whisper.received().len(), 1);
    assert_eq!(whisper.received()[0].file_size, note.len());
    let database = folder.path().join("hearth.db");
    let stored = stored_audio(&database).await;
    assert_eq!(stored[0].1.duration_seconds, Some(seconds), "{stored:?}");
    let cost = transcription_cost(&database).await;
    assert!(
        (cost - f64::from(seconds) * 0.01).abs() < 1e-9,
        "billed {cost} for a note of {seconds} s"
    );
    drop(hearth);
}

/// What the transcription call recorded as its cost, once its telemetry is written.
async fn transcription_cost(database: &Path) -> f64 {
    let url = format!("sqlite://{}", database.display());
    let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let cost: Option<f64> = sqlx::query_scalar(
            "SELECT cost_usd FROM llm_calls WHERE llm_name = 'whisper' AND outcome = 'ok'",
        )
        .fetch_optional(&pool)
        .await
        .unwrap();
        if let Some(cost) = cost {
            pool.close().await;
            return cost;
        }
        assert!(
            Instant::now() < deadline,
            "the transcription call was never recorded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
