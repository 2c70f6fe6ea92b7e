//! The bot's Matrix login tried once, as `hearth doctor` does, beside a running hearth and
//! without changing what it keeps.
//!
//! The client-server API is spoken directly here instead of through a second matrix-sdk
//! client: the running bot's store holds its device's encryption keys, and another client
//! on that device (or on a copy of its store) would upload or rotate keys the bot relies
//! on. So a kept session (or a configured access token) is checked with `whoami` and one
//! sync of nothing, which changes nothing on the server; a password, with no session kept
//! yet, by logging in as a new device that is logged out again at once.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::MatrixSettings;
use super::session::{self, LoginError, SESSION_FILE};

/// How the login was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoginChecked {
    /// The session the bot keeps in its store.
    KeptSession,
    /// The access token the config names.
    AccessToken,
    /// A password login as a new device, logged out again.
    Password,
}

/// The account and device the login reached, and how it was checked.
#[derive(Debug, Clone)]
pub struct MatrixLogin {
    pub user_id: String,
    pub device_id: String,
    pub checked: LoginChecked,
}

/// Why the login or the sync did not work.
#[derive(Debug, thiserror::Error)]
pub enum MatrixCheckError {
    #[error("channels.matrix.user_id: {0:?} is not a matrix user id")]
    BadUserId(String),
    #[error("neither a password nor an access token is configured")]
    NoCredentials,
    #[error("the access token kept in {0} was refused; remove the file to log in again")]
    KeptSessionRefused(String),
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("the saved session is unreadable: {0}")]
    Session(String),
    #[error(
        "logged in, but the device {device} made for the check could not be logged out \
         ({reason}); remove it among the account's sessions in a matrix client"
    )]
    NotLoggedOut { device: String, reason: String },
}

impl From<LoginError> for MatrixCheckError {
    fn from(error: LoginError) -> Self {
        match error {
            LoginError::Refused(reason) => MatrixCheckError::Refused(reason),
            LoginError::Unavailable(reason) => MatrixCheckError::Unavailable(reason),
            error @ LoginError::Session { .. } => MatrixCheckError::Session(error.to_string()),
        }
    }
}

/// One request's time limit.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// Logs in as the bot would (its kept session first) and syncs once.
pub async fn check_login(settings: &MatrixSettings) -> Result<MatrixLogin, MatrixCheckError> {
    settings
        .user_id
        .parse::<matrix_sdk::ruma::OwnedUserId>()
        .map_err(|_| MatrixCheckError::BadUserId(settings.user_id.clone()))?;
    let http = reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|error| MatrixCheckError::Unavailable(error.to_string()))?;
    let kept = settings.store_path.join(SESSION_FILE);
    if let Some(session) = session::read_session(&kept).await? {
        let token = &session.tokens.access_token;
        let (user_id, device_id) =
            session::whoami(settings, token)
                .await
                .map_err(|error| match error {
                    LoginError::Refused(_) => {
                        MatrixCheckError::KeptSessionRefused(kept.display().to_string())
                    }
                    other => other.into(),
                })?;
        sync_once(&http, settings, token).await?;
        return Ok(MatrixLogin {
            user_id: user_id.to_string(),
            device_id: device_id.to_string(),
            checked: LoginChecked::KeptSession,
        });
    }
    // A password first, as the bot logs in.
    let Some(password) = &settings.password else {
        let Some(token) = &settings.access_token else {
            return Err(MatrixCheckError::NoCredentials);
        };
        let (user_id, device_id) = session::whoami(settings, token).await?;
        sync_once(&http, settings, token).await?;
        return Ok(MatrixLogin {
            user_id: user_id.to_string(),
            device_id: device_id.to_string(),
            checked: LoginChecked::AccessToken,
        });
    };
    let login = log_in(&http, settings, password).await?;
    let synced = sync_once(&http, settings, &login.access_token).await;
    // Logged out whatever the sync said: the device was made for this check only.
    let logged_out = log_out(&http, settings, &login.access_token).await;
    synced?;
    logged_out.map_err(|reason| MatrixCheckError::NotLoggedOut {
        device: login.device_id.clone(),
        reason,
    })?;
    Ok(MatrixLogin {
        user_id: login.user_id,
        device_id: login.device_id,
        checked: LoginChecked::Password,
    })
}

#[derive(Deserialize)]
struct LoggedIn {
    user_id: String,
    access_token: String,
    device_id: String,
}

/// The homeserver's error body: `errcode` and `error`.
#[derive(Deserialize, Default)]
struct MatrixErrorBody {
    #[serde(default)]
    errcode: String,
    #[serde(default)]
    error: String,
}

fn endpoint(settings: &MatrixSettings, path: &str) -> String {
    format!(
        "{}/_matrix/client/v3/{path}",
        settings.homeserver_url.trim_end_matches('/')
    )
}

fn unreachable(error: &reqwest::Error) -> MatrixCheckError {
    // Without the url: the homeserver is named by the caller, and a query could carry more.
    MatrixCheckError::Unavailable(format!(
        "the homeserver cannot be reached: {}",
        describe(error)
    ))
}

/// reqwest's message and its causes ("error sending request" alone hides "connection refused").
fn describe(error: &reqwest::Error) -> String {
    let mut message = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

async fn error_of(response: reqwest::Response) -> String {
    let status = response.status().as_u16();
    let body: MatrixErrorBody = response.json().await.unwrap_or_default();
    if body.errcode.is_empty() {
        format!("http {status}")
    } else {
        format!("http {status} {}: {}", body.errcode, body.error)
    }
}

async fn log_in(
    http: &reqwest::Client,
    settings: &MatrixSettings,
    password: &str,
) -> Result<LoggedIn, MatrixCheckError> {
    let body = json!({
        "type": "m.login.password",
        "identifier": {"type": "m.id.user", "user": settings.user_id},
        "password": password,
        "initial_device_display_name": format!("{} (hearth doctor)", settings.device_name),
    });
    let response = http
        .post(endpoint(settings, "login"))
        .json(&body)
        .send()
        .await
        .map_err(|error| unreachable(&error))?;
    match response.status().as_u16() {
        200 => response
            .json()
            .await
            .map_err(|error| MatrixCheckError::Unavailable(describe(&error))),
        400 | 401 | 403 => Err(MatrixCheckError::Refused(format!(
            "the homeserver refused the login ({})",
            error_of(response).await
        ))),
        _ => Err(MatrixCheckError::Unavailable(format!(
            "cannot log in: {}",
            error_of(response).await
        ))),
    }
}

/// One sync that asks for no rooms, no presence and no account data, and sets no presence.
async fn sync_once(
    http: &reqwest::Client,
    settings: &MatrixSettings,
    token: &str,
) -> Result<(), MatrixCheckError> {
    #[derive(Deserialize)]
    struct Synced {
        #[allow(dead_code)]
        next_batch: String,
    }
    let filter = json!({
        "room": {"rooms": []},
        "presence": {"types": []},
        "account_data": {"types": []},
    })
    .to_string();
    let mut url = reqwest::Url::parse(&endpoint(settings, "sync")).map_err(|error| {
        MatrixCheckError::Unavailable(format!("channels.matrix.homeserver_url: {error}"))
    })?;
    url.query_pairs_mut()
        .append_pair("timeout", "0")
        .append_pair("set_presence", "offline")
        .append_pair("filter", &filter);
    let response = http
        .get(url)
        .bearer_auth(token)
        .send()
        .await
        .map_err(|error| unreachable(&error))?;
    if !response.status().is_success() {
        return Err(MatrixCheckError::Unavailable(format!(
            "the sync failed: {}",
            error_of(response).await
        )));
    }
    response
        .json::<Synced>()
        .await
        .map(|_| ())
        .map_err(|error| {
            MatrixCheckError::Unavailable(format!("the sync answer is unreadable: {error}"))
        })
}

async fn log_out(
    http: &reqwest::Client,
    settings: &MatrixSettings,
    token: &str,
) -> Result<(), String> {
    let response = http
        .post(endpoint(settings, "logout"))
        .bearer_auth(token)
        .json(&json!({}))
        .send()
        .await
        .map_err(|error| describe(&error))?;
    if response.status().is_success() {
        Ok(())
    } else {
        Err(error_of(response).await)
    }
}
