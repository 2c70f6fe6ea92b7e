//! The chat platforms this binary was built with (Cargo features `telegram` and `matrix`):
//! each is the channel core's actor over the platform's adapter, made from config, started
//! once the queue runs, and stopped with the app. The only part of the wiring that names
//! a platform.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use actix::Recipient;
#[cfg(any(feature = "telegram", feature = "matrix"))]
use actix::{AsyncContext, Context};

use super::{ExtraChannels, StartError};
use crate::actors::channels::core::StopChannel;
use crate::actors::channels::{ChannelDeps, DeliverStored, PlatformRoutes};
use crate::config::{FamilyMember, LoadedConfig};
use crate::ids::{ConversationKey, MemberId};

#[cfg(any(feature = "telegram", feature = "matrix"))]
use super::secret_named_by;
#[cfg(any(feature = "telegram", feature = "matrix"))]
use crate::actors::channels::core::{ChannelActor, ProfileCommands};
#[cfg(feature = "matrix")]
use crate::actors::channels::matrix::{
    MATRIX_CHANNEL, MatrixAdapter, MatrixChannel, MatrixSettings,
};
#[cfg(feature = "telegram")]
use crate::actors::channels::telegram::{
    TELEGRAM_CHANNEL, TelegramAdapter, TelegramChannel, TelegramSettings, TelegramWebhook,
};
#[cfg(feature = "telegram")]
use crate::config::TelegramMode;
#[cfg(any(feature = "telegram", feature = "matrix"))]
use std::time::Duration;

/// The platforms' actor contexts, made before the queue so their addresses can be given
/// to it; each actor starts in its context once the queue runs.
pub(super) struct PlatformContexts {
    #[cfg(feature = "telegram")]
    telegram: Option<Context<TelegramChannel>>,
    #[cfg(feature = "matrix")]
    matrix: Option<Context<MatrixChannel>>,
}

/// The chat platforms running, and what they serve on the HTTP API.
#[derive(Default)]
pub struct Platforms {
    /// Each platform's channel, to stop it.
    channels: Vec<Recipient<StopChannel>>,
    pub(super) http_routes: Vec<PlatformRoutes>,
}

impl PlatformContexts {
    /// A context for each platform enabled in config (none when `serve` is off); their
    /// addresses join `channels` under the platform's channel name.
    #[cfg_attr(
        not(any(feature = "telegram", feature = "matrix")),
        allow(unused_variables)
    )]
    pub(super) fn new(loaded: &LoadedConfig, serve: bool, channels: &mut ExtraChannels) -> Self {
        let enabled = &loaded.config.channels;
        #[cfg(feature = "telegram")]
        let telegram = (serve && enabled.telegram.enabled).then(Context::<TelegramChannel>::new);
        #[cfg(feature = "telegram")]
        if let Some(context) = &telegram {
            channels.insert(TELEGRAM_CHANNEL.into(), context.address().recipient());
        }
        #[cfg(feature = "matrix")]
        let matrix = (serve && enabled.matrix.enabled).then(Context::<MatrixChannel>::new);
        #[cfg(feature = "matrix")]
        if let Some(context) = &matrix {
            channels.insert(MATRIX_CHANNEL.into(), context.address().recipient());
        }
        PlatformContexts {
            #[cfg(feature = "telegram")]
            telegram,
            #[cfg(feature = "matrix")]
            matrix,
        }
    }

    /// The channels that deliver through the durable outbox: every chat platform started.
    pub(super) fn durable_channels(&self) -> HashSet<String> {
        #[allow(unused_mut)]
        let mut channels = HashSet::new();
        #[cfg(feature = "telegram")]
        if self.telegram.is_some() {
            channels.insert(TELEGRAM_CHANNEL.to_string());
        }
        #[cfg(feature = "matrix")]
        if self.matrix.is_some() {
            channels.insert(MATRIX_CHANNEL.to_string());
        }
        channels
    }

    /// Where each platform started takes the stored outbox rows others than the queue
    /// write (a fired reminder), by channel name.
    pub(super) fn stored_deliveries(&self) -> HashMap<String, Recipient<DeliverStored>> {
        #[allow(unused_mut)]
        let mut deliveries = HashMap::new();
        #[cfg(feature = "telegram")]
        if let Some(context) = &self.telegram {
            deliveries.insert(TELEGRAM_CHANNEL.to_string(), context.address().recipient());
        }
        #[cfg(feature = "matrix")]
        if let Some(context) = &self.matrix {
            deliveries.insert(MATRIX_CHANNEL.to_string(), context.address().recipient());
        }
        deliveries
    }

    /// Starts each platform's actor (Matrix logs in first).
    #[cfg_attr(
        not(any(feature = "telegram", feature = "matrix")),
        allow(unused_variables, clippy::unused_async)
    )]
    pub(super) async fn start(
        self,
        loaded: &LoadedConfig,
        deps: ChannelDeps,
    ) -> Result<Platforms, StartError> {
        #[allow(unused_mut)]
        let mut platforms = Platforms::default();
        #[cfg(feature = "telegram")]
        if let Some(context) = self.telegram {
            let settings = telegram_settings(loaded);
            if let Some(webhook) = webhook_of(&settings, &context) {
                platforms.http_routes.push(webhook.routes());
            }
            let adapter = TelegramAdapter::new(settings, &deps)?;
            platforms.channels.push(context.address().recipient());
            context.run(ChannelActor::new(
                adapter,
                deps.clone(),
                handled_kept_for(loaded),
            ));
        }
        #[cfg(feature = "matrix")]
        if let Some(context) = self.matrix {
            let adapter = MatrixAdapter::build(matrix_settings(loaded), &deps).await?;
            platforms.channels.push(context.address().recipient());
            context.run(ChannelActor::new(adapter, deps, handled_kept_for(loaded)));
        }
        Ok(platforms)
    }
}

impl Platforms {
    /// Stops every platform's channel: no more events are taken, and the parts being sent
    /// are sent first (each channel waits at most `STOP_WAIT` for them).
    pub(super) async fn stop(&self) {
        let stopping = self
            .channels
            .iter()
            .map(|channel| channel.send(StopChannel));
        futures::future::join_all(stopping).await;
    }
}

/// Each member's own chats known from the roster, where a request escalated to them or a
/// reminder set for them goes: their private chat on Telegram (whose id is their user
/// id), per channel, read anew with the roster. Matrix adds its rooms as it finds them.
pub(super) fn roster_chats(
    members: &[FamilyMember],
) -> Vec<(&'static str, Vec<(MemberId, ConversationKey)>)> {
    #[cfg(feature = "telegram")]
    {
        let chats = members
            .iter()
            .filter_map(|member| {
                let user_id = member.telegram_user_id?;
                let chat = ConversationKey::new(TELEGRAM_CHANNEL, &user_id.to_string()).ok()?;
                Some((member.id.clone(), chat))
            })
            .collect();
        vec![(TELEGRAM_CHANNEL, chats)]
    }
    #[cfg(not(feature = "telegram"))]
    {
        let _ = members;
        Vec::new()
    }
}

/// The folders the enabled platforms download attachments to, and the HTTP API's (for
/// retention).
pub(super) fn attachment_dirs(loaded: &LoadedConfig) -> Vec<PathBuf> {
    let channels = &loaded.config.channels;
    let mut folders: Vec<PathBuf> = Vec::new();
    let http = loaded
        .config
        .http
        .enabled
        .then(|| http_attachments_dir(loaded));
    for (enabled, folder) in [
        (
            channels.telegram.enabled,
            PathBuf::from(&channels.telegram.attachments_dir),
        ),
        (
            channels.matrix.enabled,
            PathBuf::from(&channels.matrix.attachments_dir),
        ),
    ]
    .into_iter()
    .chain(http.map(|folder| (true, folder)))
    {
        if enabled && !folders.contains(&folder) {
            folders.push(folder);
        }
    }
    folders
}

/// Where the HTTP API keeps an audio file sent to `POST /inbound`: the attachments folder
/// of the first enabled chat platform, else Telegram's configured one (by default
/// `data/attachments`), so one folder holds every channel's files.
pub(super) fn http_attachments_dir(loaded: &LoadedConfig) -> PathBuf {
    let channels = &loaded.config.channels;
    let folder = if !channels.telegram.enabled && channels.matrix.enabled {
        &channels.matrix.attachments_dir
    } else {
        &channels.telegram.attachments_dir
    };
    PathBuf::from(folder)
}

/// How long a handled command is remembered, so a redelivery changes nothing: as long as
/// the inbox recognises a redelivered message.
#[cfg(any(feature = "telegram", feature = "matrix"))]
fn handled_kept_for(loaded: &LoadedConfig) -> Duration {
    let days = loaded.config.retention.answered_inbox_days;
    Duration::from_secs(24 * 3600).saturating_mul(u32::try_from(days).unwrap_or(u32::MAX))
}

/// The Telegram channel's settings from config, its secrets resolved (validation made
/// sure they are there).
#[cfg(feature = "telegram")]
pub(crate) fn telegram_settings(loaded: &LoadedConfig) -> TelegramSettings {
    let telegram = &loaded.config.channels.telegram;
    TelegramSettings {
        token: secret_named_by(loaded, &telegram.token_env).unwrap_or_default(),
        api_url: telegram.api_url.clone(),
        mode: telegram.mode,
        poll_timeout: Duration::from_secs(telegram.poll_timeout_seconds),
        webhook_url: telegram.webhook_url.clone(),
        webhook_secret: secret_named_by(loaded, &telegram.webhook_secret_env),
        max_attachment_bytes: telegram.max_attachment_bytes,
        attachments_dir: telegram.attachments_dir.clone().into(),
        commands: channel_commands(loaded),
    }
}

/// The Matrix channel's settings from config, its secrets resolved (validation made
/// sure they are there).
#[cfg(feature = "matrix")]
pub(crate) fn matrix_settings(loaded: &LoadedConfig) -> MatrixSettings {
    let matrix = &loaded.config.channels.matrix;
    MatrixSettings {
        homeserver_url: matrix.homeserver_url.clone().unwrap_or_default(),
        user_id: matrix.user_id.clone().unwrap_or_default(),
        password: secret_named_by(loaded, &matrix.password_env),
        access_token: secret_named_by(loaded, &matrix.access_token_env),
        store_path: matrix.store_path.clone().into(),
        store_passphrase: secret_named_by(loaded, &matrix.store_passphrase_env).unwrap_or_default(),
        recovery_key: secret_named_by(loaded, &matrix.recovery_key_env),
        device_name: matrix.device_name.clone(),
        max_attachment_bytes: matrix.max_attachment_bytes,
        attachments_dir: matrix.attachments_dir.clone().into(),
        commands: channel_commands(loaded),
    }
}

/// Each profile's slash commands (without the slash, lowercase) with what the profile
/// is for, and what the default profile is for: what `/help` lists on every platform.
#[cfg(any(feature = "telegram", feature = "matrix"))]
fn channel_commands(loaded: &LoadedConfig) -> ProfileCommands {
    let default_description = loaded
        .profile(&loaded.default_profile_id)
        .map(|profile| profile.description.clone())
        .unwrap_or_default();
    let commands = loaded
        .profiles
        .iter()
        .flat_map(|profile| {
            profile.slash_commands.iter().map(|command| {
                (
                    command.trim_start_matches('/').to_lowercase(),
                    profile.description.clone(),
                )
            })
        })
        .collect();
    ProfileCommands {
        commands,
        default_description,
    }
}

/// The webhook route to serve, in webhook mode.
#[cfg(feature = "telegram")]
fn webhook_of(
    settings: &TelegramSettings,
    channel: &Context<TelegramChannel>,
) -> Option<TelegramWebhook> {
    if settings.mode != TelegramMode::Webhook {
        return None;
    }
    let url = reqwest::Url::parse(settings.webhook_url.as_deref()?).ok()?;
    Some(TelegramWebhook {
        path: url.path().to_string(),
        secret: settings.webhook_secret.clone()?,
        channel: channel.address().recipient(),
    })
}
