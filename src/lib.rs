//! hearth: a family assistant built as actix actors.
//!
//! Family members send messages through a channel (Telegram, Matrix, HTTP, console).
//! The [`actors::request_queue::RequestQueue`] stores each one durably, keeps
//! conversations in order and hands turns to one [`actors::processing::ProcessingService`]
//! per service profile, which runs the LLM tool loop through the
//! [`actors::llm_broker::LlmBroker`] — the only door to LLM backends.
//!
//! Codemap:
//! - [`config`]: the YAML configuration, environment overrides, profile merging, validation,
//!   and the names it is written in (`confirm_tools` entries, MCP tool names, YAML files).
//! - [`app`]: start-up wiring of every actor: `app::start_with_models` is the list of steps.
//! - [`doctor`]: `hearth doctor`, every part the configuration names tried once.
//! - [`actors`]: the actors and their messages (`request_queue`, `processing`,
//!   `delegation`, `llm_broker`, `channels` with `telegram` and `matrix`, `scheduler`).
//! - [`http`]: the actix-web routes, and the family's web page (`http/page`).
//! - [`identity`]: who a request on HTTP speaks as: sign-in codes and links, sessions,
//!   member tokens; [`secrets`]: the secrets hearth makes and the hashes it keeps.
//! - [`llm`]: wire-neutral chat types, the `LlmProvider` port and its providers, and
//!   `GenerateChat`, the request every LLM call is made with.
//! - [`local_model`]: the small local model (llama.cpp serving SmolLM2-135M) run as a child
//!   process when no other model is configured or `--local-model` asks for it.
//! - [`tools`]: the `ToolsProvider` port and its stack.
//! - [`turn`]: a running turn's messages, shared by processing, the intents engine, the queue
//!   and delegation, and what a turn asks or tells its member through the queue.
//! - [`ports`]: the storage-shaped ports (`Inbox`, `ConversationMemory`, `UserProfiles`,
//!   `PendingActions`, `ChannelState`, `TelemetrySink`, `Schedules`, `Notes`, ...); [`storage`]: their
//!   three adapters, each filling every port: SQLite (one file written by one process, under
//!   its instance lock), PostgreSQL (one database shared by several workers, nothing cached)
//!   and in memory (tests); most ports' SQL is written once for both databases
//!   (`storage/sql/`).
//! - [`format`]: the model's markdown as Telegram HTML, Matrix HTML or plain text.
//! - [`local_time`]: members' local dates, times, ISO 8601 delays and recurrences to instants
//!   (DST-aware, in their IANA zone), and the words that say them back.
//! - [`plugins`]: plugin manifests, the parameter resolver, calling plugins, `route_to_plugin`.
//! - [`intents`]: the intents engine of `engine: intents` profiles.
//! - [`scripts`]: the family's scripts (`scripts_dir`), their workflow state and toolset.
//! - [`reminders`]: reminders and scheduled tasks: when, for whom, where, what they say, who
//!   may see and cancel them, and the tools; the scheduler actor fires them.
//! - [`calendar`]: a profile's calendars (CalDAV and subscribed `.ics`), read within bounds
//!   off the actors' thread, their recurring events expanded within a budget, the tools.
//! - [`voice`]: voice notes: what waits for its transcript, audio measured from its file,
//!   what the member is told when one cannot be understood.
//! - [`workers`]: this process as one worker of its database: heartbeats, leases and the
//!   trust in them, wake-ups from the other workers.
//! - [`recall`]: what the family told hearth found again: texts cut into chunks, full-text
//!   and vector rankings fused, the `search_memory` tool and the snippets of `recall: auto`.
//! - [`notes`]: the family's notes: who reads, changes and deletes which, the tools, and the
//!   titles given to the model each turn.
//! - [`ids`]: member, confirmation, conversation and prompt ids, each parsed once where it
//!   comes in and written back in the form hearth stores and sends.
//! - [`family`], [`metrics`], [`readiness`]: the allow-list, Prometheus counters, `/readyz`.
//! - [`actor_thread`]: the actors' thread watched: how late its timers run, and a stall
//!   logged with the spans it was inside.
//! - [`redaction`]: the password of a url, never shown.
//! - [`retention`]: the background pruning of what is kept only for a while.
//! - [`backoff`]: how long every retry loop waits after failures in a row.
//! - [`clock`]: the wall clock every expiry, retry and time-to-live reads; tests make it
//!   follow tokio's paused clock.
//! - `fuzzing` (hidden): the entry points of the fuzz targets in `fuzz/` that are not public
//!   otherwise.
//!
//! Cargo features: `telegram`, `matrix` (the chat platforms) and `mcp` (the MCP client), all
//! in the default build; config that needs one left out is refused at start-up.
//!
//! ARCHITECTURE.md states the layers the modules stand in and the invariants.

pub mod actor_thread;
pub mod actors;
pub mod app;
pub mod backoff;
pub mod calendar;
pub mod clock;
pub mod config;
pub mod doctor;
pub mod family;
pub mod format;
#[doc(hidden)]
pub mod fuzzing;
pub mod http;
pub mod identity;
pub mod ids;
pub mod intents;
pub mod llm;
pub mod local_model;
pub mod local_time;
pub mod metrics;
pub mod notes;
pub mod plugins;
pub mod ports;
pub mod readiness;
pub mod recall;
pub mod redaction;
pub mod reminders;
pub mod retention;
pub mod scripts;
pub mod secrets;
pub mod storage;
pub mod tools;
pub mod turn;
pub mod voice;
pub mod workers;
