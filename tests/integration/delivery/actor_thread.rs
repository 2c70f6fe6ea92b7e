//! The actors' thread stays free while a very large reply is rendered: a reply of a few
//! hundred kilobytes of markdown reaches Telegram whole, split under its limit, and the
//! stall histogram counts no tick held over a second, on `/metrics` too.

use std::time::{Duration, Instant};

use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::{TOKEN, alice, start_on_telegram};

const WAIT: Duration = Duration::from_secs(60);

/// Markdown of about `kilobytes` KB: headings, emphasis, lists, code and links.
fn large_markdown(kilobytes: usize) -> String {
    let section = "## Week plan\n\nMonday brings **football** at five and *piano* at six; \
                   bring the `blue bag`. See [the club](https://example.org/club).\n\n\
                   - pack the kit\n- fill the bottle\n- find the shin pads\n\n";
    section.repeat(kilobytes * 1024 / section.len() + 1)
}

/// What a Telegram client shows of `html`: its text, tags dropped and entities read.
fn shown_text(html: &str) -> String {
    let mut shown = String::new();
    let mut in_tag = false;
    for character in html.chars() {
        match character {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            character if !in_tag => shown.push(character),
            _ => {}
        }
    }
    shown
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

#[actix::test]
async fn a_very_large_reply_is_delivered_whole_and_no_tick_is_held_over_a_second() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, &[], None, &[]).await;
    let markdown = large_markdown(300);
    let expected = shown_text(&hearth::format::telegram_html(&markdown));
    llm.push(Step::Reply(markdown.clone()));
    telegram.push_private_text(&alice(), "plan the whole year");

    let deadline = Instant::now() + WAIT;
    let words = |texts: &[String]| -> Vec<String> {
        texts
            .iter()
            .flat_map(|text| text.split_whitespace())
            .map(str::to_string)
            .collect()
    };
    let wanted: Vec<String> = expected.split_whitespace().map(str::to_string).collect();
    loop {
        let said = telegram.bot_texts_in(1001);
        if words(&said).len() >= wanted.len() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {} of {} words delivered",
            words(&said).len(),
            wanted.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let parts = telegram.bot_messages_in(1001);
    assert!(parts.len() > 50, "{} parts", parts.len());
    assert!(
        parts
            .iter()
            .all(|part| part.text.as_ref().unwrap().encode_utf16().count() <= 4096)
    );
    assert_eq!(
        words(&telegram.bot_texts_in(1001)),
        wanted,
        "delivered whole"
    );

    let stalls = app.app().metrics.actor_thread_stalls();
    assert!(stalls.count > 0, "the tick ran: {stalls:?}");
    assert_eq!(stalls.count_above(1.0), Some(0), "{stalls:?}");
    let (_, metrics) = app.get("/metrics").await;
    let count_line = metrics
        .lines()
        .find(|line| line.starts_with("hearth_actor_thread_stall_seconds_count "))
        .unwrap_or_else(|| panic!("{metrics}"));
    let within_a_second = metrics
        .lines()
        .find(|line| line.starts_with("hearth_actor_thread_stall_seconds_bucket{le=\"1\"} "))
        .unwrap_or_else(|| panic!("{metrics}"));
    assert_eq!(
        count_line.rsplit(' ').next(),
        within_a_second.rsplit(' ').next(),
        "every tick ran within a second: {metrics}"
    );
    app.stop().await;
}
