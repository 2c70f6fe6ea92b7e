//! Memory in the configuration: the indexer on by default every 5 seconds, turned off or
//! timed otherwise (never every 0 seconds); `kind: embedding` entries on `provider: openai`
//! only, `memory.embedding_model` naming one of them, no chat key naming one, the keys of
//! the embedding model and the transcription entry read from the environment; each error at
//! its key, naming the value and what to write.

use hearth::config::LlmKind;

use super::{MINIMAL, assert_problem, load_error, load_text};

const VECTORS: &str = r#"  vectors: { kind: embedding, provider: openai, base_url: "http://127.0.0.1:11434/v1", model: nomic-embed-text, backend: local, cost_per_million_input_tokens: 0.02 }
"#;

const WHISPER: &str = r#"  whisper: { kind: transcription, provider: openai, base_url: "http://127.0.0.1:8082/v1", model: whisper-1 }
"#;

#[test]
fn an_embedding_entry_named_by_memory_loads_and_is_found() {
    let loaded = load_text(
        &format!("{MINIMAL}{VECTORS}memory: {{ embedding_model: vectors }}\n"),
        &[],
    );
    let (name, vectors) = loaded.config.embedding_llm().unwrap();
    assert_eq!(name, "vectors");
    assert_eq!(vectors.kind, LlmKind::Embedding);
    assert_eq!(vectors.model, "nomic-embed-text");
    assert_eq!(vectors.cost_per_million_input_tokens, 0.02);
    assert!(!vectors.is_chat());

    // Every key is optional: without memory, or with it empty, no model embeds.
    for text in [
        format!("{MINIMAL}{VECTORS}"),
        format!("{MINIMAL}{VECTORS}memory:\n"),
    ] {
        let loaded = load_text(&text, &[]);
        assert_eq!(loaded.config.memory.embedding_model, None);
        assert!(loaded.config.embedding_llm().is_none());
    }
}

#[test]
fn the_indexer_runs_every_five_seconds_unless_told_otherwise() {
    let memory = load_text(MINIMAL, &[]).config.memory;
    assert!(memory.enabled);
    assert_eq!(memory.index_interval_seconds, 5);
    let memory = load_text(
        &format!("{MINIMAL}memory: {{ enabled: false, index_interval_seconds: 30 }}\n"),
        &[],
    )
    .config
    .memory;
    assert!(!memory.enabled);
    assert_eq!(memory.index_interval_seconds, 30);
    let (message, file) = load_error(
        &format!("{MINIMAL}memory: {{ index_interval_seconds: 0 }}\n"),
        &[],
    );
    assert_problem(
        &message,
        &file,
        "memory.index_interval_seconds",
        "must be at least 1, found 0",
    );
}

#[test]
fn the_keys_of_the_embedding_model_and_the_transcription_entry_are_read() {
    let text = format!(
        "{MINIMAL}  vectors: {{ kind: embedding, provider: openai, base_url: \"https://api.openai.com/v1\", model: text-embedding-3-small, api_key_env: TEST_EMBED_KEY }}\n  whisper: {{ kind: transcription, provider: openai, base_url: \"https://api.groq.com/openai/v1\", model: whisper-large-v3, api_key_env: TEST_WHISPER_KEY }}\nmemory: {{ embedding_model: vectors }}\n"
    );
    let loaded = load_text(
        &text,
        &[
            ("TEST_EMBED_KEY", "sk-embed"),
            ("TEST_WHISPER_KEY", "gsk-whisper"),
        ],
    );
    assert_eq!(loaded.secret("TEST_EMBED_KEY"), Some("sk-embed"));
    assert_eq!(loaded.secret("TEST_WHISPER_KEY"), Some("gsk-whisper"));

    let (message, file) = load_error(&text, &[]);
    assert_problem(
        &message,
        &file,
        "llms.vectors.api_key_env",
        "environment variable TEST_EMBED_KEY is unset or empty",
    );
    assert_problem(
        &message,
        &file,
        "llms.whisper.api_key_env",
        "environment variable TEST_WHISPER_KEY is unset or empty",
    );

    // An embedding entry memory does not name is not used: its key is not needed.
    let unused = text.replace("memory: { embedding_model: vectors }\n", "");
    let loaded = load_text(&unused, &[("TEST_WHISPER_KEY", "gsk-whisper")]);
    assert_eq!(loaded.secret("TEST_EMBED_KEY"), None);
}

#[test]
fn each_memory_error_names_its_key_and_what_to_write() {
    let cases: Vec<(String, &str, &str)> = vec![
        (
            format!(
                "{MINIMAL}  vectors: {{ kind: vectors, provider: openai, base_url: \"http://h/v1\", model: e }}\n"
            ),
            "llms.vectors.kind",
            "unknown value `vectors`, expected one of `chat`, `transcription`, `embedding`",
        ),
        (
            format!(
                "{MINIMAL}  vectors: {{ kind: embedding, provider: anthropic, base_url: \"http://h\", model: e }}\n"
            ),
            "llms.vectors.provider",
            "\"anthropic\" cannot embed: an embedding entry speaks the OpenAI-compatible \
             /v1/embeddings (OpenAI, Ollama, llama.cpp's server, vLLM); write provider: openai",
        ),
        (
            format!("{MINIMAL}{VECTORS}memory: {{ embedding_model: vector }}\n"),
            "memory.embedding_model",
            "\"vector\" names no entry of llms: the embedding entries of llms are vectors, or \
             leave memory.embedding_model out to turn nothing into vectors",
        ),
        (
            format!("{MINIMAL}memory: {{ embedding_model: vectors }}\n"),
            "memory.embedding_model",
            "\"vectors\" names no entry of llms: no entry of llms has kind: embedding; add one",
        ),
        (
            format!("{MINIMAL}{VECTORS}memory: {{ embedding_model: main }}\n"),
            "memory.embedding_model",
            "\"main\" is a chat entry of llms (kind: chat), which answers a chat; name an entry \
             with kind: embedding, or write kind: embedding on llms.main if it is an embedding \
             model",
        ),
        (
            format!("{MINIMAL}{WHISPER}memory: {{ embedding_model: whisper }}\n"),
            "memory.embedding_model",
            "\"whisper\" is the transcription entry of llms (kind: transcription)",
        ),
        (
            format!("{MINIMAL}memory: {{ embeding_model: vectors }}\n"),
            "memory.embeding_model",
            "unknown key",
        ),
        (
            format!(
                "{MINIMAL}{VECTORS}service_profiles:\n  - id: a\n    processing_config: {{ llm_model: vectors }}\n"
            ),
            "service_profiles[0].processing_config.llm_model",
            "\"vectors\" is an embedding entry of llms (kind: embedding), which turns text into \
             vectors for memory's search and cannot answer a chat; name a chat model here",
        ),
        (
            format!(
                "{MINIMAL}{VECTORS}default_profile_settings:\n  processing_config: {{ llm_fallback_model: vectors }}\n"
            ),
            "default_profile_settings.processing_config.llm_fallback_model",
            "\"vectors\" is an embedding entry of llms",
        ),
        (
            "http: { auth_enabled: false }\nllms:\n  main: { kind: embedding, provider: openai, base_url: \"http://h/v1\", model: e }\n  chat: { provider: openai, base_url: \"http://h/v1\", model: c }\n"
                .to_owned(),
            "default_profile_settings.processing_config.llm_model",
            "use \"main\", but \"main\" is an embedding entry",
        ),
    ];
    for (text, key_path, fragment) in cases {
        let (message, file) = load_error(&text, &[]);
        assert_problem(&message, &file, key_path, fragment);
    }
}
