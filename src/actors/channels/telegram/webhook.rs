//! Webhook mode: Telegram posts each update to `channels.telegram.webhook_url`, whose
//! path hearth serves on the HTTP API's listener.
//!
//! A post must carry the secret token hearth registered (`X-Telegram-Bot-Api-Secret-Token`,
//! compared in constant time); anything else is refused. An update is answered `200` only
//! once it is handled for good, so Telegram delivers it again after a failure, and the
//! inbox recognises a message it already has.

use std::time::Duration;

use actix::Recipient;
use actix_web::{HttpRequest, HttpResponse, web};
use subtle::ConstantTimeEq;
use teloxide::payloads::SetWebhookSetters;
use teloxide::requests::Requester;
use teloxide::types::{AllowedUpdate, Update};

use super::{TELEGRAM_CHANNEL, TelegramAdapter};
use crate::actors::channels::core::EventReceived;

const SECRET_HEADER: &str = "x-telegram-bot-api-secret-token";
/// Updates are small; a photo arrives as file ids, not bytes.
const MAX_UPDATE_BYTES: usize = 1024 * 1024;

/// What the HTTP API needs to serve the webhook.
#[derive(Clone)]
pub(crate) struct TelegramWebhook {
    /// The path of `webhook_url`, e.g. `/telegram/webhook`.
    pub(crate) path: String,
    pub(crate) secret: String,
    pub(crate) channel: Recipient<EventReceived<Update>>,
}

impl TelegramWebhook {
    /// The webhook's route, for the HTTP API to serve.
    pub(crate) fn routes(self) -> crate::actors::channels::PlatformRoutes {
        let webhook = web::Data::new(self);
        std::sync::Arc::new(move |config: &mut web::ServiceConfig| {
            config.app_data(webhook.clone()).service(
                web::resource(webhook.path.as_str())
                    .app_data(web::PayloadConfig::new(MAX_UPDATE_BYTES))
                    .route(web::post().to(telegram_webhook_route)),
            );
        })
    }
}

/// Register the webhook with Telegram, again until it is accepted.
pub(super) async fn register(adapter: &TelegramAdapter) {
    let (Some(url), Some(secret)) = (
        adapter.settings.webhook_url.as_deref(),
        adapter.settings.webhook_secret.as_deref(),
    ) else {
        // Validation requires both in webhook mode.
        tracing::error!("telegram webhook mode without webhook_url or its secret");
        return;
    };
    let url = match reqwest::Url::parse(url) {
        Ok(url) => url,
        Err(error) => {
            tracing::error!(url, %error, "telegram webhook url is not valid");
            return;
        }
    };
    let mut delay = Duration::from_secs(1);
    loop {
        let registered = adapter
            .bot
            .set_webhook(url.clone())
            .secret_token(secret)
            .allowed_updates([AllowedUpdate::Message, AllowedUpdate::CallbackQuery])
            .await;
        match registered {
            Ok(_) => {
                tracing::info!(%url, "telegram webhook registered");
                adapter
                    .readiness
                    .set(TELEGRAM_CHANNEL, true, "receiving updates by webhook");
                return;
            }
            Err(error) => {
                let detail = format!("setWebhook failed: {error}");
                adapter.readiness.set(TELEGRAM_CHANNEL, false, &detail);
                tracing::warn!(%error, retry_s = delay.as_secs(), "telegram webhook not registered");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(60));
            }
        }
    }
}

/// `POST <webhook path>`: one update from Telegram.
async fn telegram_webhook_route(
    request: HttpRequest,
    webhook: web::Data<TelegramWebhook>,
    body: web::Bytes,
) -> HttpResponse {
    let presented = request
        .headers()
        .get(SECRET_HEADER)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    if !bool::from(presented.ct_eq(webhook.secret.as_bytes())) {
        tracing::warn!("telegram webhook call without the right secret token refused");
        return HttpResponse::Unauthorized().finish();
    }
    let update: Update = match serde_json::from_slice(&body) {
        Ok(update) => update,
        Err(error) => {
            // Telegram would send it again and again: accept and drop it, loudly.
            tracing::error!(%error, "telegram webhook update unreadable; dropped");
            return HttpResponse::Ok().finish();
        }
    };
    match webhook.channel.send(EventReceived(update)).await {
        Ok(Ok(())) => HttpResponse::Ok().finish(),
        // Telegram delivers it again later.
        Ok(Err(_)) | Err(_) => HttpResponse::ServiceUnavailable().finish(),
    }
}
