//! Voice notes in the configuration: `llms.<name>.kind` (a wrong name lists the right
//! ones), the one transcription entry on `provider: openai`, no chat key naming it, and the
//! bounds of `voice_notes`; each error at its key, naming the value and what to write.

use super::{MINIMAL, assert_problem, load_error, load_text};

const WHISPER: &str = r#"  whisper: { kind: transcription, provider: openai, base_url: "http://127.0.0.1:8082/v1", model: whisper-1, cost_per_audio_minute: 0.006 }
"#;

#[test]
fn a_transcription_entry_loads_and_is_found() {
    let loaded = load_text(
        &format!("{MINIMAL}{WHISPER}voice_notes: {{ max_duration_seconds: 120, language: de }}\n"),
        &[],
    );
    let (name, whisper) = loaded.config.transcription_llm().unwrap();
    assert_eq!(name, "whisper");
    assert_eq!(whisper.cost_per_audio_minute, 0.006);
    assert!(!whisper.is_chat());
    assert!(
        loaded.config.llms["main"].is_chat(),
        "chat is the default kind"
    );
    assert_eq!(loaded.config.voice_notes.language.as_deref(), Some("de"));
}

#[test]
fn each_voice_note_error_names_its_key_and_what_to_write() {
    let other = r#"  other: { kind: transcription, provider: openai, base_url: "http://127.0.0.1:8083/v1", model: whisper-1 }
"#;
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!(
                "{MINIMAL}  whisper: {{ kind: speech, provider: openai, base_url: \"http://h/v1\", model: w }}\n"
            ),
            "llms.whisper.kind",
            "unknown value `speech`, expected one of `chat`, `transcription`, `embedding`",
        ),
        (
            format!(
                "{MINIMAL}  whisper: {{ kind: transcription, provider: anthropic, base_url: \"http://h\", model: w }}\n"
            ),
            "llms.whisper.provider",
            "\"anthropic\" cannot transcribe",
        ),
        (
            format!("{MINIMAL}{WHISPER}{other}"),
            "llms.whisper.kind",
            "llms.other is already the transcription entry; voice notes are transcribed by one \
             entry, so write kind: transcription on only one of llms.other and llms.whisper",
        ),
        (
            format!(
                "{MINIMAL}  whisper: {{ kind: transcription, provider: openai, base_url: \"http://h/v1\", model: w, cost_per_audio_minute: -1 }}\n"
            ),
            "llms.whisper.cost_per_audio_minute",
            "must be a number of at least 0, found -1",
        ),
        (
            format!(
                "{MINIMAL}{WHISPER}service_profiles:\n  - id: a\n    processing_config: {{ llm_model: whisper }}\n"
            ),
            "service_profiles[0].processing_config.llm_model",
            "\"whisper\" is the transcription entry of llms",
        ),
        (
            format!(
                "{MINIMAL}{WHISPER}default_profile_settings:\n  processing_config: {{ llm_fallback_model: whisper }}\n"
            ),
            "default_profile_settings.processing_config.llm_fallback_model",
            "name a chat model here",
        ),
        (
            "http: { auth_enabled: false }\nllms:\n  main: { kind: transcription, provider: openai, base_url: \"http://h/v1\", model: w }\n  chat: { provider: openai, base_url: \"http://h/v1\", model: c }\n"
                .to_owned(),
            "default_profile_settings.processing_config.llm_model",
            "use \"main\", but \"main\" is the transcription entry",
        ),
        (
            format!("{MINIMAL}voice_notes: {{ max_duration_seconds: 0 }}\n"),
            "voice_notes.max_duration_seconds",
            "0 is out of range: write a number of seconds from 1 to 3600",
        ),
        (
            format!("{MINIMAL}voice_notes: {{ max_duration_seconds: 7200 }}\n"),
            "voice_notes.max_duration_seconds",
            "7200 is out of range",
        ),
        (
            format!("{MINIMAL}voice_notes: {{ language: en-US }}\n"),
            "voice_notes.language",
            "\"en-US\" is not a language code",
        ),
    ];
    for (text, key_path, fragment) in cases {
        let (message, file) = load_error(&text, &[]);
        assert_problem(&message, &file, key_path, fragment);
    }
}
