//! The Telegram channel against the fake Bot API, and the fake itself.

mod telegram_buttons;
mod telegram_channel;
mod telegram_fake_server;
