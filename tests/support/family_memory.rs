//! Family memory for the tests of `search_memory` and `recall`: what hearth holds put into
//! the store through the `FamilyMemory` port as the indexer writes it (each chat-text entry
//! of the history a `chat` source read by its conversation's writers, each note a `note`
//! source of its title and content read by the family or its author, their texts cut by
//! `recall::chunks`), so every source is a real history row or note and an indexer running
//! beside the test writes the same; vectors of a test's choosing, under each chunk's hash;
//! and a member's search as the model makes it, with what the tool answered.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use hearth::config::{LlmBackend, LlmModelConfig, LlmProviderKind};
use hearth::ids::MemberId;
use hearth::llm::hashed_embedding;
use hearth::ports::{MemoryKind, MemoryReaders, MemorySource, Note, NoteVisibility, NoteWrite};
use hearth::recall::chunks::chunks_of;
use serde_json::Value;

use super::hearth_app::Hearth;
use super::llm_server::{EMBEDDING_DIMENSIONS, RecordedRequest, ScriptedLlmServer, Step};
use super::test_config::TestConfig;

/// The `llms` entry of the embedding model and the model name its vectors are kept under.
pub const EMBEDDING_LLM: &str = "vectors";
pub const EMBEDDING_MODEL: &str = "scripted-embedding";

/// `config` with an embedding model on the scripted server at `llm_base_url`, named by
/// `memory.embedding_model`.
pub fn with_embeddings(config: TestConfig, llm_base_url: &str) -> TestConfig {
    let llm_base_url = llm_base_url.to_owned();
    config.with(move |config| {
        config.llms.insert(
            EMBEDDING_LLM.to_owned(),
            LlmModelConfig {
                kind: hearth::config::LlmKind::Embedding,
                provider: LlmProviderKind::OpenAi,
                base_url: llm_base_url,
                model: EMBEDDING_MODEL.to_owned(),
                api_key_env: None,
                backend: LlmBackend::Cloud,
                timeout_seconds: 5,
                max_tokens: None,
                cost_per_million_input_tokens: 0.0,
                cost_per_million_output_tokens: 0.0,
                vision: false,
                cost_per_audio_minute: 0.0,
            },
        );
        config.memory.embedding_model = Some(EMBEDDING_LLM.to_owned());
    })
}

/// A note written by `writer` at `at_ms`, through the notes port.
pub async fn write_note(
    app: &Hearth,
    writer: &str,
    title: &str,
    content: &str,
    private: bool,
    at_ms: i64,
) -> Note {
    let visibility = if private {
        NoteVisibility::Private
    } else {
        NoteVisibility::Family
    };
    app.app()
        .stores
        .notes
        .save(&NoteWrite {
            title: title.to_owned(),
            content: content.to_owned(),
            visibility: Some(visibility),
            writer: writer.parse().unwrap(),
            at_ms,
        })
        .await
        .expect("note saved")
        .note()
        .clone()
}

/// Everything hearth holds now (the chat-text entries of every conversation, every note)
/// put into family memory as sources, each with its real row's number.
pub async fn remember_everything(app: &Hearth) {
    let memory = &app.app().stores.family_memory;
    let chats = memory
        .chats_after(0, i64::MAX, 10_000)
        .await
        .expect("chats read");
    let mut sources: Vec<MemorySource> = chats
        .into_iter()
        .map(|chat| MemorySource {
            kind: MemoryKind::Chat,
            reference: chat.message_id.to_string(),
            title: String::new(),
            readers: MemoryReaders::Conversation,
            member: chat.member,
            conversation: Some(chat.conversation_key),
            created_at_ms: chat.created_at_ms,
            chunks: chunks_of(&chat.text),
        })
        .collect();
    let notes = memory.notes_to_index(10_000).await.expect("notes read");
    sources.extend(notes.into_iter().map(|note| MemorySource {
        kind: MemoryKind::Note,
        reference: note.id.to_string(),
        title: note.title.clone(),
        readers: match note.visibility {
            NoteVisibility::Family => MemoryReaders::Family,
            NoteVisibility::Private => MemoryReaders::Member,
        },
        member: Some(note.author.clone()),
        conversation: None,
        created_at_ms: note.updated_at_ms,
        chunks: chunks_of(&format!("{}\n\n{}", note.title, note.content)),
    }));
    memory
        .put_sources(&sources, None, hearth::clock::now_ms())
        .await
        .expect("sources put");
}

/// The vector of the embedding model for each note's chunks (as `remember_everything` cuts
/// them): `meaning(chunk)`'s hashed vector, as a model that reads the chunk so would give
/// it. Kept under each chunk's hash whether or not it has a vector already.
pub async fn give_vectors(app: &Hearth, notes: &[&Note], meaning: impl Fn(&str) -> String) {
    let vectors: Vec<(String, Vec<f32>)> = notes
        .iter()
        .flat_map(|note| chunks_of(&format!("{}\n\n{}", note.title, note.content)))
        .map(|chunk| {
            let vector = hashed_embedding(&meaning(&chunk), EMBEDDING_DIMENSIONS);
            (hearth::secrets::sha256_hex(chunk.as_bytes()), vector)
        })
        .collect();
    app.app()
        .stores
        .family_memory
        .put_vectors(EMBEDDING_MODEL, &vectors)
        .await
        .expect("vectors put");
}

/// The embedding requests the scripted server got for `text` alone (a query's).
pub fn embedded(llm: &ScriptedLlmServer, text: &str) -> usize {
    llm.embedding_requests()
        .iter()
        .filter(|request| request.body["input"] == serde_json::json!([text]))
        .count()
}

/// The requests for chat completions the scripted server got (not its embeddings').
pub fn chat_requests(llm: &ScriptedLlmServer) -> Vec<RecordedRequest> {
    llm.requests()
        .into_iter()
        .filter(|request| request.path.ends_with("/chat/completions"))
        .collect()
}

/// The last tool result the model was shown in its latest chat request.
pub fn last_tool_result(llm: &ScriptedLlmServer) -> String {
    let requests = chat_requests(llm);
    let last = requests.last().expect("the model was asked");
    last.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .rev()
        .find(|message| message["role"] == "tool")
        .and_then(|message| message["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// `member` asks over HTTP; the model calls `search_memory` with `arguments`, then answers:
/// what the tool told the model.
pub async fn search_as(
    app: &Hearth,
    llm: &ScriptedLlmServer,
    member: &str,
    arguments: Value,
) -> String {
    llm.push_many([
        Step::ToolCalls(vec![("search_memory".into(), arguments)]),
        Step::Reply("Here is what I found.".into()),
    ]);
    assert_eq!(
        app.ask(member, "what do you remember?").await,
        "Here is what I found."
    );
    last_tool_result(llm)
}

/// A member's id.
pub fn member(id: &str) -> MemberId {
    id.parse().unwrap()
}
