//! Notes over HTTP, Matrix and Telegram.

mod notes_http;
mod notes_matrix;
mod notes_telegram;
