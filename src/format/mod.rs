//! The LLM's markdown replies rendered for chat platforms, as pure functions (no I/O):
//! Telegram HTML ([`telegram_html`]), Matrix `formatted_body` HTML ([`matrix_html`]),
//! plain text ([`plain_text`], Telegram's fallback and Matrix's `body`), and splitting a
//! long reply into messages within a platform's limit ([`split_telegram_html`],
//! [`split_plain`]); what to send instead of a reply that renders to nothing
//! ([`shown_as_written`]); a stored text as one short line around a searched word
//! ([`snippet`]).
//!
//! Every renderer escapes the model's text, shows its raw HTML as text, and links only to
//! http, https, tg and mailto URLs: the model's output is untrusted input for the client.

mod layout;
mod markdown;
mod matrix_html;
mod plain_text;
pub mod snippet;
mod split;
mod telegram_html;
mod written;

#[cfg(test)]
mod split_tests;

pub use matrix_html::matrix_html;
pub use plain_text::plain_text;
pub use split::{TELEGRAM_MESSAGE_LIMIT, split_plain, split_telegram_html};
pub use telegram_html::telegram_html;
pub use written::{EMPTY_ANSWER, escape_html, shown_as_written};
