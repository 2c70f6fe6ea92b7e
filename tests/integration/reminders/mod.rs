//! Reminders and scheduled tasks over HTTP, Matrix and Telegram.

mod reminders_http;
mod reminders_matrix;
mod reminders_telegram;
mod reminders_telegram_kill;
mod reminders_telegram_lists;
