//! The HTTP API and the family's web page: its channel started in the context the queue
//! already delivers to, the routes' state, the server bound, and where it listens written
//! down (for `/signin` links, the other workers and `hearth chat`).

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix::{Addr, AsyncContext, Context};
use actix_web::dev::ServerHandle;

use super::family::FamilyParts;
use super::foundation::Foundation;
use super::{StartError, models, platforms, secret_named_by};
use crate::actors::channels::{HttpChannel, MembershipParts, PlatformRoutes, SignInLinks};
use crate::actors::llm_broker::LlmBroker;
use crate::actors::request_queue::RequestQueue;
use crate::actors::scheduler::Scheduler;
use crate::calendar::CalendarToolset;
use crate::config::LoadedConfig;
use crate::http::{self, ApiKeys, HttpState, WebCalendar};
use crate::identity::Identity;
use crate::local_time::ZoneName;
use crate::plugins::PluginRuntime;
use crate::reminders::{RemindersParts, RemindersToolset};
use crate::storage::instance_lock::InstanceLock;

/// What the HTTP API serves besides the stores: the running actors it sends to, the
/// family, the platforms' routes, the plugins, the reminder form's parts, sign-in, the
/// family's forms and the web page's Calendar.
pub(super) struct HttpParts {
    pub queue: Addr<RequestQueue>,
    pub scheduler: Addr<Scheduler>,
    pub broker: Addr<LlmBroker>,
    pub family: Arc<crate::family::Family>,
    pub platform_routes: Vec<PlatformRoutes>,
    pub plugins: Arc<PluginRuntime>,
    pub reminders: RemindersParts,
    pub sign_in: SignInLinks,
    pub membership: MembershipParts,
    pub calendar: WebCalendar,
}

/// Who a request on HTTP speaks as (sessions, sign-in codes and links, member tokens), and
/// the page's address, known once the server listens. Made before the channels, whose
/// `/signin` sends links to the page.
pub(super) fn sign_in_links(loaded: &LoadedConfig, base: &Foundation) -> SignInLinks {
    SignInLinks {
        identity: Identity::new(
            base.stores.web_access.clone(),
            loaded.config.http.session_days,
        ),
        page_url: Arc::new(OnceLock::new()),
    }
}

/// The web page's Calendar: the default profile's calendars and its calendar tools (in
/// its zone), and its intents when it runs the intents engine.
pub(super) fn web_calendar(
    loaded: &LoadedConfig,
    family: &FamilyParts,
    default_calendars: Option<Arc<crate::calendar::ProfileCalendars>>,
    default_intents: Option<Arc<crate::intents::IntentsRegistry>>,
) -> WebCalendar {
    let web_toolset = default_calendars.clone().map(|calendars| {
        Arc::new(CalendarToolset::new(
            calendars,
            family.family.clone(),
            default_zone(loaded),
        ))
    });
    WebCalendar::of_default_profile(loaded, default_calendars, web_toolset, default_intents)
}

/// The default profile's zone, the zone of members without one of their own.
fn default_zone(loaded: &LoadedConfig) -> ZoneName {
    loaded
        .profile(&loaded.default_profile_id)
        .map(|profile| ZoneName::from(profile.processing.timezone))
        .unwrap_or_else(|| chrono_tz::UTC.into())
}

/// The HTTP channel started in `context` (whose address the queue already delivers to) and
/// the server bound, when hearth serves HTTP; where it listens is set for the sign-in
/// links, told to this process's worker and written into the database's lock file. Last
/// of the actors: it serves the platforms' routes, and sends to the queue, the scheduler
/// and the broker.
pub(super) async fn start_http(
    loaded: &LoadedConfig,
    context: Option<Context<HttpChannel>>,
    base: &Foundation,
    instance_lock: &mut Option<InstanceLock>,
    parts: HttpParts,
) -> Result<Option<(ServerHandle, SocketAddr)>, StartError> {
    let Some(context) = context else {
        return Ok(None);
    };
    let config = &loaded.config;
    let stores = &base.stores;
    let channel = context.address();
    let actor = HttpChannel::new(parts.queue.clone());
    context.run(match &base.shared_worker {
        Some(worker) => {
            actor.shared_with(worker.clone(), stores.inbox.clone(), stores.pending.clone())
        }
        None => actor,
    });
    let keys = config.http.auth_enabled.then(|| {
        ApiKeys::new(
            secret_named_by(loaded, &config.http.auth_api_key_env),
            secret_named_by(loaded, &config.http.plugin_api_key_env),
            secret_named_by(loaded, &config.http.admin_api_key_env),
        )
    });
    let page_url = parts.sign_in.page_url.clone();
    let state = HttpState {
        queue: parts.queue,
        channel,
        inbox: stores.inbox.clone(),
        pending: stores.pending.clone(),
        family: parts.family,
        metrics: base.metrics.clone(),
        readiness: base.readiness.clone(),
        keys,
        metrics_auth: config.http.metrics_auth,
        reply_timeout: Duration::from_secs(config.http.reply_timeout_seconds),
        platform_routes: parts.platform_routes,
        plugins: parts.plugins,
        registered_plugins: stores.registered_plugins.clone(),
        broker: parts.broker.recipient(),
        default_llm: loaded
            .profile(&loaded.default_profile_id)
            .map(|profile| profile.processing.llm_model.clone())
            .unwrap_or_default(),
        llm_names: models::chat_llm_names(config),
        schedules: stores.schedules.clone(),
        reminders: Some(parts.scheduler.clone().recipient()),
        cancel_reminder: Some(parts.scheduler.recipient()),
        // Members without a zone of their own are in the default profile's.
        reminder_forms: Some(Arc::new(RemindersToolset::new(
            parts.reminders,
            default_zone(loaded),
        ))),
        notes: stores.notes.clone(),
        usage: stores.usage.clone(),
        script_workflows: stores.script_workflows.clone(),
        identity: parts.sign_in.identity,
        memory: stores.memory.clone(),
        membership: Some(parts.membership),
        calendar: Arc::new(parts.calendar),
        attachments_dir: platforms::http_attachments_dir(loaded),
        max_attachment_bytes: config.http.max_attachment_bytes,
        client: http::client::ClientView::of(&config.http),
    };
    let (handle, address) = http::serve(&config.http.bind, config.http.max_body_bytes, state)?;
    let _ = page_url.set(config.http.page_url(Some(address)));
    if let Some(worker) = &base.worker {
        worker.record_http_address(address);
    }
    if let Some(lock) = instance_lock
        && let Err(error) = lock.record_http_address(address).await
    {
        // Serving goes on; only `hearth chat` cannot find this hearth's address.
        tracing::warn!(%error, "http address not written to the database lock file");
    }
    tracing::info!(%address, "http api listening");
    Ok(Some((handle, address)))
}
