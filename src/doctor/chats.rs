//! The chat platforms: Telegram's token tried with `getMe`, Matrix's login and one sync,
//! each through its channel's own check; a platform that is disabled, or not built into
//! this binary, is skipped.

#[cfg(feature = "matrix")]
use std::time::Duration;

use super::Check;
#[cfg(any(not(feature = "telegram"), not(feature = "matrix")))]
use super::NOT_BUILT;
#[cfg(any(feature = "telegram", feature = "matrix"))]
use super::within;
use crate::config::LoadedConfig;

const TELEGRAM: &str = "telegram";
const MATRIX: &str = "matrix";
#[cfg(any(feature = "telegram", feature = "matrix"))]
const DISABLED: &str = "skipped (disabled)";

#[cfg(not(feature = "telegram"))]
pub(super) async fn telegram(_loaded: &LoadedConfig) -> Check {
    Check::skipped(TELEGRAM, NOT_BUILT)
}

#[cfg(feature = "telegram")]
pub(super) async fn telegram(loaded: &LoadedConfig) -> Check {
    use crate::actors::channels::telegram::{TelegramCheckError, introduce_once};

    let config = &loaded.config.channels.telegram;
    if !config.enabled {
        return Check::skipped(TELEGRAM, DISABLED);
    }
    let settings = crate::app::telegram_settings(loaded);
    let variable = config
        .token_env
        .clone()
        .unwrap_or_else(|| "the variable channels.telegram.token_env names".to_owned());
    let look_at = format!(
        "channels.telegram.api_url ({}) and the network",
        settings.api_url
    );
    let check = async {
        match introduce_once(&settings.api_url, &settings.token, super::CHECK_TIMEOUT).await {
            Ok(username) => Check::ok(TELEGRAM, format!("@{username} (getMe)")),
            Err(TelegramCheckError::Refused) => Check::failed(
                TELEGRAM,
                format!("the token in {variable} was refused (401); get a new one from @BotFather"),
            ),
            Err(error @ TelegramCheckError::Unreachable(_)) => {
                Check::failed(TELEGRAM, format!("{error}; check {look_at}"))
            }
            Err(error) => Check::failed(TELEGRAM, error.to_string()),
        }
    };
    within(super::CHECK_TIMEOUT, TELEGRAM, &look_at, check).await
}

#[cfg(not(feature = "matrix"))]
pub(super) async fn matrix(_loaded: &LoadedConfig) -> Check {
    Check::skipped(MATRIX, NOT_BUILT)
}

/// Each request of the Matrix check has its own limit (`CHECK_TIMEOUT`); the whole is given
/// room for all of them, so that a login made for the check is never cut off before it is
/// logged out again.
#[cfg(feature = "matrix")]
const MATRIX_TIMEOUT: Duration = Duration::from_secs(45);

#[cfg(feature = "matrix")]
pub(super) async fn matrix(loaded: &LoadedConfig) -> Check {
    use crate::actors::channels::matrix::{LoginChecked, MatrixCheckError, check_login};

    let config = &loaded.config.channels.matrix;
    if !config.enabled {
        return Check::skipped(MATRIX, DISABLED);
    }
    let settings = crate::app::matrix_settings(loaded);
    let homeserver = &settings.homeserver_url;
    let look_at = format!("channels.matrix.homeserver_url ({homeserver}) and the network");
    let check = async {
        match check_login(&settings).await {
            Ok(login) => {
                let how = match login.checked {
                    LoginChecked::KeptSession => "the kept session: whoami and one sync",
                    LoginChecked::AccessToken => "the access token: whoami and one sync",
                    LoginChecked::Password => "a password login, one sync, logged out again",
                };
                Check::ok(
                    MATRIX,
                    format!(
                        "{} on {homeserver}, device {} ({how})",
                        login.user_id, login.device_id
                    ),
                )
            }
            Err(error @ MatrixCheckError::Refused(_)) => {
                // The one the check used: the password when there is one, as the bot does.
                let credential = match (&config.password_env, &config.access_token_env) {
                    (Some(variable), _) if settings.password.is_some() => {
                        format!("the password in {variable}")
                    }
                    (_, Some(variable)) => format!("the access token in {variable}"),
                    _ => "channels.matrix.password_env or access_token_env".to_owned(),
                };
                Check::failed(
                    MATRIX,
                    format!("{error}; check channels.matrix.user_id and {credential}"),
                )
            }
            Err(error @ MatrixCheckError::Unavailable(_)) => {
                Check::failed(MATRIX, format!("{error}; check {look_at}"))
            }
            Err(error) => Check::failed(MATRIX, error.to_string()),
        }
    };
    within(MATRIX_TIMEOUT, MATRIX, &look_at, check).await
}
