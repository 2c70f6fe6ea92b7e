//! The bot's token tried once with `getMe`, on the same client settings as the channel:
//! what `hearth doctor` asks of Telegram, without polling or touching the stored offset.

use std::time::Duration;

use teloxide::requests::Requester;
use teloxide::{ApiError, RequestError};

use super::{TelegramStartError, bot};

/// Why `getMe` did not introduce the bot.
#[derive(Debug, thiserror::Error)]
pub enum TelegramCheckError {
    #[error(transparent)]
    Settings(#[from] TelegramStartError),
    /// Telegram answered 401 (or 404, which the Bot API gives a token of the wrong form).
    #[error("the bot api refused the token (401)")]
    Refused,
    #[error("the bot api cannot be reached: {0}")]
    Unreachable(String),
    #[error("the bot api answered getMe with an error: {0}")]
    Failed(String),
}

/// The bot's @username, from one `getMe` with `token` at `api_url`, within `timeout`.
pub async fn introduce_once(
    api_url: &str,
    token: &str,
    timeout: Duration,
) -> Result<String, TelegramCheckError> {
    let bot = bot(api_url, token, timeout)?;
    match bot.get_me().await {
        Ok(me) => Ok(me.username().to_owned()),
        Err(RequestError::Api(ApiError::InvalidToken)) => Err(TelegramCheckError::Refused),
        // teloxide takes the token out of a network error's url; the causes say why.
        Err(RequestError::Network(error)) => {
            let mut reason = error.to_string();
            let mut source = std::error::Error::source(error.as_ref());
            while let Some(cause) = source {
                reason.push_str(": ");
                reason.push_str(&cause.to_string());
                source = cause.source();
            }
            Err(TelegramCheckError::Unreachable(reason))
        }
        Err(error) => Err(TelegramCheckError::Failed(error.to_string())),
    }
}
