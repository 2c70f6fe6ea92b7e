//! The bot's Matrix session: one device, kept for good.
//!
//! The client's SQLite state and crypto store lives in `store_path`, encrypted with the
//! store passphrase. The first start logs in (password, or an access token whose device
//! `whoami` names) and saves the session in `store_path/session.json` (owner-only); every
//! later start restores it, so the bot keeps its device id and its encryption keys, and
//! members never have to verify a new device after a restart.

use std::path::{Path, PathBuf};
use std::time::Duration;

use matrix_sdk::authentication::matrix::MatrixSession;
use matrix_sdk::ruma::{OwnedDeviceId, OwnedUserId};
use matrix_sdk::{Client, SessionMeta, SessionTokens};

use super::MatrixSettings;

pub(super) const SESSION_FILE: &str = "session.json";

#[derive(Debug, thiserror::Error)]
pub enum MatrixStartError {
    #[error("channels.matrix.store_path: cannot create {path}: {reason}")]
    StoreFolder { path: PathBuf, reason: String },
    #[error(
        "channels.matrix: cannot open the matrix store in {path} (a wrong store passphrase, \
         or a store of another account?): {reason}"
    )]
    Store { path: PathBuf, reason: String },
    #[error("channels.matrix.user_id: {0:?} is not a matrix user id")]
    BadUserId(String),
}

/// Why logging in did not work (yet).
#[derive(Debug, thiserror::Error)]
pub(super) enum LoginError {
    /// The homeserver refused the credentials: trying again will not help.
    #[error("the homeserver refused the login: {0}")]
    Refused(String),
    /// The homeserver could not be reached or failed: worth trying again.
    #[error("cannot log in: {0}")]
    Unavailable(String),
    #[error("the saved session in {path} is unreadable: {reason}")]
    Session { path: PathBuf, reason: String },
}

pub(super) async fn build_client(settings: &MatrixSettings) -> Result<Client, MatrixStartError> {
    let store = settings.store_path.join("store");
    tokio::fs::create_dir_all(&store)
        .await
        .map_err(|error| MatrixStartError::StoreFolder {
            path: store.clone(),
            reason: error.to_string(),
        })?;
    restrict_to_owner(&settings.store_path, true).await;
    settings
        .user_id
        .parse::<OwnedUserId>()
        .map_err(|_| MatrixStartError::BadUserId(settings.user_id.clone()))?;
    Client::builder()
        .homeserver_url(&settings.homeserver_url)
        .sqlite_store(&store, Some(&settings.store_passphrase))
        .handle_refresh_tokens()
        .build()
        .await
        .map_err(|error| MatrixStartError::Store {
            path: store,
            reason: error.to_string(),
        })
}

/// Restore the saved session, or log in and save it.
pub(super) async fn log_in(client: &Client, settings: &MatrixSettings) -> Result<(), LoginError> {
    let path = settings.store_path.join(SESSION_FILE);
    if let Some(session) = read_session(&path).await? {
        client
            .restore_session(session)
            .await
            .map_err(|error| LoginError::Unavailable(error.to_string()))?;
        tracing::info!(device = ?client.device_id(), "matrix session restored");
        return Ok(());
    }
    if let Some(password) = &settings.password {
        client
            .matrix_auth()
            .login_username(&settings.user_id, password)
            .initial_device_display_name(&settings.device_name)
            .send()
            .await
            .map_err(classify)?;
    } else if let Some(token) = &settings.access_token {
        let (user_id, device_id) = whoami(settings, token).await?;
        let session = MatrixSession {
            meta: SessionMeta { user_id, device_id },
            tokens: SessionTokens {
                access_token: token.clone(),
                refresh_token: None,
            },
        };
        client
            .restore_session(session)
            .await
            .map_err(|error| LoginError::Unavailable(error.to_string()))?;
    } else {
        return Err(LoginError::Refused(
            "neither a password nor an access token is configured".into(),
        ));
    }
    let session = client
        .matrix_auth()
        .session()
        .ok_or_else(|| LoginError::Unavailable("no session after logging in".into()))?;
    write_session(&path, &session).await?;
    tracing::info!(device = %session.meta.device_id, "matrix device logged in and saved");
    Ok(())
}

/// Restore cross-signing and the key backup from the recovery key, when one is configured.
pub(super) async fn recover(client: &Client, settings: &MatrixSettings) {
    let Some(key) = &settings.recovery_key else {
        return;
    };
    match client.encryption().recovery().recover(key).await {
        Ok(()) => tracing::info!("matrix identity restored from the recovery key"),
        Err(error) => {
            tracing::error!(%error, "matrix recovery key not accepted; this device stays unverified")
        }
    }
}

fn classify(error: matrix_sdk::Error) -> LoginError {
    use matrix_sdk::ruma::api::error::ErrorKind;
    match error.client_api_error_kind() {
        Some(ErrorKind::Forbidden | ErrorKind::UserDeactivated | ErrorKind::InvalidParam) => {
            LoginError::Refused(error.to_string())
        }
        _ => LoginError::Unavailable(error.to_string()),
    }
}

/// The user and device an access token belongs to.
pub(super) async fn whoami(
    settings: &MatrixSettings,
    token: &str,
) -> Result<(OwnedUserId, OwnedDeviceId), LoginError> {
    #[derive(serde::Deserialize)]
    struct WhoAmI {
        user_id: OwnedUserId,
        device_id: Option<OwnedDeviceId>,
    }
    let url = format!(
        "{}/_matrix/client/v3/account/whoami",
        settings.homeserver_url.trim_end_matches('/')
    );
    let response = reqwest::Client::new()
        .get(url)
        .bearer_auth(token)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map_err(|error| LoginError::Unavailable(error.to_string()))?;
    match response.status().as_u16() {
        200 => {}
        401 | 403 => {
            return Err(LoginError::Refused(
                "the access token is not valid (whoami refused it)".into(),
            ));
        }
        status => {
            return Err(LoginError::Unavailable(format!("whoami answered {status}")));
        }
    }
    let who: WhoAmI = response
        .json()
        .await
        .map_err(|error| LoginError::Unavailable(error.to_string()))?;
    let device_id = who.device_id.ok_or_else(|| {
        LoginError::Refused("the access token belongs to no device; log in with a password".into())
    })?;
    Ok((who.user_id, device_id))
}

pub(super) async fn read_session(path: &Path) -> Result<Option<MatrixSession>, LoginError> {
    match tokio::fs::read_to_string(path).await {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|error| LoginError::Session {
                path: path.to_path_buf(),
                reason: error.to_string(),
            }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(LoginError::Session {
            path: path.to_path_buf(),
            reason: error.to_string(),
        }),
    }
}

async fn write_session(path: &Path, session: &MatrixSession) -> Result<(), LoginError> {
    let failed = |error: std::io::Error| LoginError::Session {
        path: path.to_path_buf(),
        reason: error.to_string(),
    };
    let text = serde_json::to_string(session).map_err(|error| LoginError::Session {
        path: path.to_path_buf(),
        reason: error.to_string(),
    })?;
    // Written aside and renamed: a crash never leaves half a session behind.
    let partial = path.with_extension("json.partial");
    tokio::fs::write(&partial, text).await.map_err(failed)?;
    restrict_to_owner(&partial, false).await;
    tokio::fs::rename(&partial, path).await.map_err(failed)
}

/// The session holds the bot's access token: only its owner may read it.
async fn restrict_to_owner(path: &Path, is_folder: bool) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = if is_folder { 0o700 } else { 0o600 };
        if let Err(error) =
            tokio::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).await
        {
            tracing::warn!(path = %path.display(), %error, "cannot restrict permissions");
        }
    }
    #[cfg(not(unix))]
    let _ = (path, is_folder);
}
