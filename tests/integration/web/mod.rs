//! The web page: signing in, joining, the chat, the calendar, questions, forms.

mod sign_in_guessing;
mod web_calendar;
mod web_chat_stream;
mod web_join;
mod web_page;
mod web_page_calendar;
mod web_pages;
mod web_pages_forms;
mod web_questions;
mod web_sign_in;
