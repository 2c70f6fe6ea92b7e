//! The HTTP API (actix-web): `POST /inbound` (JSON, or a form with an audio file),
//! `POST /inbound/confirm`, `GET /inbound/{id}`,
//! the plugin API (`POST /api/plugins/register`, `POST /api/plugins/llm/generate`), the
//! members' reminders (`GET /api/reminders`, `POST /api/reminders/{occurrence}/done|snooze`),
//! `GET /healthz`, `GET /readyz`, `GET /metrics`, and the routes a chat platform adds (Telegram's
//! webhook, in webhook mode) through the channels' `PlatformRoutes`. Routes only translate HTTP to actor
//! messages; this module knows no chat platform.
//!
//! - `inbound.rs`: `POST /inbound`, `POST /inbound/confirm` and `GET /inbound/{id}`, in each
//!   member's own conversations; `inbound_form.rs`: the same message as a
//!   `multipart/form-data` form with one audio file, streamed to disk within
//!   `http.max_attachment_bytes`;
//! - `health.rs`: health, readiness and metrics; `plugins.rs`: the plugin API;
//!   `reminders.rs`: the members' reminders;
//! - `auth.rs`: the API keys and their scopes, compared by their digests, and who an
//!   inbound request speaks as (the shared key, or a member's own token), the family read
//!   again first when it changed;
//! - `client.rs`: who a request comes from (its address through the trusted proxies) and
//!   whether over HTTPS, never by the `Host` header;
//! - `page/`: the family's web page (its `mod.rs` lists a file per page);
//! - here: `serve`, every route of the API, and every answer's security headers.

mod auth;
pub mod client;
mod health;
mod inbound;
pub(crate) mod inbound_form;
mod page;
mod plugins;
mod reminders;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, Recipient};
use actix_web::dev::ServerHandle;
use actix_web::{App, HttpResponse, HttpServer, error, web};

use crate::actors::channels::{HttpChannel, MembershipParts, PlatformRoutes};
use crate::actors::request_queue::RequestQueue;
use crate::family::Family;
use crate::identity::Identity;
use crate::llm::GenerateChat;
use crate::metrics::Metrics;
use crate::plugins::PluginRuntime;
use crate::ports::{
    ConversationMemory, Inbox, Notes, PendingActions, RegisteredPlugins, Schedules,
};
use crate::readiness::Readiness;

pub use auth::{ApiKeys, Scope};
pub use page::WebCalendar;

/// Everything a route needs, shared by every HTTP worker.
pub struct HttpState {
    pub queue: Addr<RequestQueue>,
    pub channel: Addr<HttpChannel>,
    pub inbox: Arc<dyn Inbox>,
    /// Read only: the confirmation a suspended message waits for (`GET /inbound/{id}`).
    pub pending: Arc<dyn PendingActions>,
    pub family: Arc<Family>,
    pub metrics: Arc<Metrics>,
    pub readiness: Arc<Readiness>,
    /// Each scope's key; `None` when `http.auth_enabled` is false.
    pub keys: Option<ApiKeys>,
    /// `/metrics` and `/readyz` details need the admin key.
    pub metrics_auth: bool,
    pub reply_timeout: Duration,
    /// The chat platforms' own routes (Telegram's webhook, in webhook mode).
    pub platform_routes: Vec<PlatformRoutes>,
    /// Plugins registering over the API join this runtime's catalog.
    pub plugins: Arc<PluginRuntime>,
    pub registered_plugins: Arc<dyn RegisteredPlugins>,
    /// The plugin LLM API's way to the models, and what it may name.
    pub broker: Recipient<GenerateChat>,
    pub default_llm: String,
    pub llm_names: Vec<String>,
    /// Read only: the members' reminders (`GET /api/reminders`).
    pub schedules: Arc<dyn Schedules>,
    /// Done and Snooze go to the scheduler; `None` when it is not running.
    pub reminders: Option<Recipient<crate::reminders::SettleReminder>>,
    /// A cancel from the page goes to the scheduler, as from a chat's list; `None` when it
    /// is not running.
    pub cancel_reminder: Option<Recipient<crate::reminders::CancelReminder>>,
    /// The page's reminder forms: added and edited through the `schedule_reminder` tool's
    /// code; `None` when the scheduler is not running.
    pub reminder_forms: Option<Arc<crate::reminders::RemindersToolset>>,
    /// The family's notes, each read as the signed-in member (the page's `/notes`).
    pub notes: Arc<dyn Notes>,
    /// Read only: the family script runs that ended (the family page's activity).
    pub script_workflows: Arc<dyn crate::ports::ScriptWorkflows>,
    /// Read only: what each member used per day (the family page).
    pub usage: Arc<dyn crate::ports::UsageReport>,
    /// Sign-in codes and links, sessions, member tokens.
    pub identity: Identity,
    /// Read only: a member's web conversation, shown on the page.
    pub memory: Arc<dyn ConversationMemory>,
    /// A member's own chats, where sign-in codes are sent; `None` without chat platforms.
    pub membership: Option<MembershipParts>,
    /// The calendars of the profile a web message goes to, and its rules (`/calendar`).
    pub calendar: Arc<WebCalendar>,
    /// Where an audio file sent to `POST /inbound` is kept, one folder per message: the
    /// chat platforms' attachments folder, which retention prunes.
    pub attachments_dir: PathBuf,
    /// An audio file larger than this is refused.
    pub max_attachment_bytes: u64,
    /// Who a request comes from and whether over HTTPS (`http.public_url`,
    /// `http.trusted_proxies`).
    pub client: client::ClientView,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot listen on http.bind {bind:?}: {source}")]
pub struct BindError {
    pub bind: String,
    pub source: std::io::Error,
}

/// Bind and start the server; returns its handle and the address it listens on.
pub fn serve(
    bind: &str,
    max_body_bytes: usize,
    state: HttpState,
) -> Result<(ServerHandle, SocketAddr), BindError> {
    let platform_routes = state.platform_routes.clone();
    let state = web::Data::new(state);
    let server = HttpServer::new(move || {
        let mut app = App::new();
        for routes in &platform_routes {
            app = app.configure(|config| routes(config));
        }
        let mut headers = actix_web::middleware::DefaultHeaders::new();
        for header in page::SECURITY_HEADERS {
            headers = headers.add(header);
        }
        app.wrap(headers)
            .app_data(state.clone())
            .app_data(json_config(max_body_bytes))
            .app_data(web::FormConfig::default().limit(max_body_bytes))
            .configure(page::routes)
            .route(
                "/inbound",
                web::post()
                    .guard(actix_web::guard::fn_guard(inbound_form::is_multipart))
                    .to(inbound_form::post_inbound_form),
            )
            .route("/inbound", web::post().to(inbound::post_inbound))
            .route("/inbound/confirm", web::post().to(inbound::post_confirm))
            .route("/inbound/{id}", web::get().to(inbound::get_inbound))
            .route(
                "/api/plugins/register",
                web::post().to(plugins::post_register),
            )
            .route(
                "/api/plugins/llm/generate",
                web::post().to(plugins::post_generate),
            )
            .route("/api/reminders", web::get().to(reminders::get_reminders))
            .route(
                "/api/reminders/{occurrence}/{answer}",
                web::post().to(reminders::post_answer),
            )
            .route("/healthz", web::get().to(health::healthz))
            .route("/readyz", web::get().to(health::readyz))
            .route("/metrics", web::get().to(health::metrics))
    })
    .workers(2)
    .shutdown_timeout(5)
    .disable_signals()
    .bind(bind)
    .map_err(|source| BindError {
        bind: bind.to_string(),
        source,
    })?;
    let address = server.addrs().first().copied().ok_or_else(|| BindError {
        bind: bind.to_string(),
        source: std::io::Error::other("no address bound"),
    })?;
    let server = server.run();
    let handle = server.handle();
    actix::spawn(async move {
        if let Err(error) = server.await {
            tracing::error!(%error, "http server stopped");
        }
    });
    Ok((handle, address))
}

/// JSON bodies: size-limited, and every parse problem answered as JSON with a reason.
fn json_config(max_body_bytes: usize) -> web::JsonConfig {
    web::JsonConfig::default()
        .limit(max_body_bytes)
        .error_handler(move |problem, _request| {
            let response = match &problem {
                error::JsonPayloadError::Overflow { .. }
                | error::JsonPayloadError::OverflowKnownLength { .. } => {
                    HttpResponse::PayloadTooLarge().json(serde_json::json!({
                        "error": format!("request body is larger than {max_body_bytes} bytes")
                    }))
                }
                error::JsonPayloadError::ContentType => {
                    HttpResponse::UnsupportedMediaType().json(serde_json::json!({
                        "error": "send the body as JSON with content-type: application/json"
                    }))
                }
                other => HttpResponse::BadRequest().json(serde_json::json!({
                    "error": format!("malformed JSON body: {other}")
                })),
            };
            error::InternalError::from_response(problem, response).into()
        })
}
