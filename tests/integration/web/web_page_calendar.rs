//! The web page's Calendar in a real headless Chromium (WebDriver) against a real Radicale:
//! alice, signed in with a one-time link, adds an event with the page's form and finds it
//! listed and on Radicale; the page is saved as a screenshot at phone and desktop width.

use chrono::TimeDelta;

use crate::support::browser::{Browser, Width};
use crate::support::hearth_app::Hearth;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::radicale::{PASSWORD, Radicale, write_calendar_config};

#[actix::test]
async fn alice_adds_an_event_with_the_calendar_page_in_a_browser() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let Some(mut browser) = Browser::start_or_skip("web_calendar_add").await else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = write_calendar_config(folder.path(), &llm.base_url(), &radicale.base_url(), true);
    let app = Hearth::start_from(folder, &path, &[("TEST_CALDAV_PASSWORD", PASSWORD)]).await;

    let identity = hearth::identity::Identity::new(app.app().stores.web_access.clone(), 30);
    let secret = identity
        .new_sign_in_link(&"alice".parse().unwrap(), hearth::ports::now_ms())
        .await
        .unwrap();
    browser
        .goto(&format!("{}/sign-in/link/{secret}", app.base_url))
        .await
        .unwrap();
    browser
        .click("form[action='/sign-in/link'] button")
        .await
        .unwrap();
    browser.wait_for("form#chat-form").await.unwrap();

    browser
        .goto(&format!("{}/calendar", app.base_url))
        .await
        .unwrap();
    browser.wait_for("form.event").await.unwrap();
    let day = (chrono::Utc::now().with_timezone(&chrono_tz::Europe::Berlin) + TimeDelta::days(1))
        .format("%Y-%m-%d")
        .to_string();
    browser
        .fill("input#title", "Parents' evening")
        .await
        .unwrap();
    browser.fill("input#date", &day).await.unwrap();
    browser.fill("input#time", "19:00").await.unwrap();
    browser.fill("input#end_time", "20:30").await.unwrap();
    browser.fill("input#location", "School hall").await.unwrap();
    browser.click("form.event button").await.unwrap();
    browser.wait_for("p.notice").await.unwrap();
    let main = browser.text_of("main").await.unwrap();
    assert!(main.contains("Added to the calendar."), "{main}");
    assert!(main.contains("Parents' evening, at School hall"), "{main}");
    for width in [Width::Phone, Width::Desktop] {
        browser.set_width(width).await.unwrap();
        browser.screenshot("calendar").await.unwrap();
    }
    let stored: Vec<_> = radicale
        .events(&family)
        .await
        .into_iter()
        .filter(|event| event.text.contains("SUMMARY:Parents' evening"))
        .collect();
    assert_eq!(stored.len(), 1);
    assert!(stored[0].text.contains("T190000"), "{}", stored[0].text);
    browser.close().await.unwrap();
}
