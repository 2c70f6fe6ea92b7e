//! Joining and linking on the web page (no browser needed: plain form posts over loopback
//! against the app with the fake Telegram Bot API): an invite code entered on the page makes
//! a member with the invite's role and the name given, signed in, and the parents are told
//! in their Telegram chats; a `/link` code from a member's Telegram chat signs them in as
//! themselves, one identity: what they are asked on Telegram waits for them on the page and
//! is answered there; wrong codes are limited per visitor.

use std::time::Duration;

use serde_json::json;

use crate::support::hearth_app::TestApp;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::telegram::TelegramServer;
use crate::support::telegram_family::code_said;
use crate::support::telegram_family::{TOKEN, alice, bot_says, start_on_telegram};

const CONFIRM_PROFILE_UPDATE: (&str, &str) = (
    "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
    "profile_update",
);

/// A visitor of the page: keeps the cookies it is given, follows no redirect.
pub(crate) struct Visitor {
    client: reqwest::Client,
    base: String,
    cookies: std::sync::Mutex<Vec<(String, String)>>,
    /// The address a trusted proxy would say it forwards for (`X-Forwarded-For`).
    forwarded_for: Option<String>,
}

impl Visitor {
    pub(crate) fn new(app: &TestApp) -> Visitor {
        Visitor::at(&app.base_url)
    }

    /// A visitor of the page at `base_url` (any worker's).
    pub(crate) fn at(base_url: &str) -> Visitor {
        Visitor {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: base_url.to_string(),
            cookies: Default::default(),
            forwarded_for: None,
        }
    }

    /// A visitor from `address`, as the proxy in front of the page (loopback, trusted by
    /// `http.trusted_proxies`) says.
    pub(crate) fn from_address(base_url: &str, address: &str) -> Visitor {
        Visitor {
            forwarded_for: Some(address.to_string()),
            ..Visitor::at(base_url)
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .lock()
            .unwrap()
            .iter()
            .map(|(name, value)| format!("{name}={value}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn keep_cookies(&self, response: &reqwest::Response) {
        let mut kept = self.cookies.lock().unwrap();
        for set in response.headers().get_all("set-cookie") {
            let set = set.to_str().unwrap();
            let (name, rest) = set.split_once('=').unwrap();
            let value = rest.split(';').next().unwrap().to_string();
            kept.retain(|(kept, _)| kept != name);
            if !value.is_empty() {
                kept.push((name.to_string(), value));
            }
        }
    }

    pub(crate) async fn get(&self, path: &str) -> (u16, String, Option<String>) {
        self.send(self.client.get(format!("{}{path}", self.base)))
            .await
    }

    pub(crate) async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
    ) -> (u16, String, Option<String>) {
        self.send(self.client.post(format!("{}{path}", self.base)).form(form))
            .await
    }

    /// Send `request` with the cookies kept, keep those it sets: status, body, location.
    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, String, Option<String>) {
        let request = match &self.forwarded_for {
            Some(address) => request.header("x-forwarded-for", address.as_str()),
            None => request,
        };
        let response = request
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.keep_cookies(&response);
        let location = response
            .headers()
            .get("location")
            .map(|value| value.to_str().unwrap().to_string());
        (
            response.status().as_u16(),
            response.text().await.unwrap(),
            location,
        )
    }

    /// The value of the hidden field `name` on `page`.
    pub(crate) fn field(page: &str, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let at = page
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name} in {page}"))
            + marker.len();
        page[at..].split('"').next().unwrap().to_string()
    }

    /// Enter `code` and `name` on the join page; status and where it sends the visitor.
    pub(crate) async fn join(&self, code: &str, name: &str) -> (u16, String, Option<String>) {
        let (_, page, _) = self.get("/join").await;
        let form = Visitor::field(&page, "form");
        self.post("/join", &[("form", &form), ("code", code), ("name", name)])
            .await
    }
}

#[actix::test]
async fn an_invite_code_entered_on_the_page_makes_a_member_and_tells_the_parents() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, "", None, &[]).await;
    telegram.push_private_text(&alice(), "/invite child Max");
    let code = code_said(&telegram, 1001, "Invite code for Max as a child").await;

    let max = Visitor::new(&app);
    // A form without its token joins nobody, and does not spend the code.
    let (status, _, _) = max
        .post(
            "/join",
            &[("form", "nope"), ("code", &code), ("name", "Max")],
        )
        .await;
    assert_eq!(status, 403);
    let (status, body, location) = max.join(&code.to_lowercase(), "").await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/chat")),
        "{body}"
    );
    let (status, page, _) = max.get("/chat").await;
    assert_eq!(status, 200);
    assert!(page.contains("<span class=\"who\">Max</span>"), "{page}");
    // A child: no family page, and the invite's role is what the policy sees.
    assert!(!page.contains("href=\"/family\""));
    assert_eq!(max.get("/family").await.0, 404);
    bot_says(
        &telegram,
        1001,
        "Max joined the family as a child (on the web page, invited by Alice)",
    )
    .await;
    let member = app.running.membership.family().member("max").unwrap();
    assert_eq!(member.role.as_str(), "child");
    assert!(member.telegram_user_id.is_none() && member.matrix_user_id.is_none());

    // Used once.
    let other = Visitor::new(&app);
    let (status, page, _) = other.join(&code, "Mallory").await;
    assert_eq!(status, 400);
    assert!(page.contains("That code is not valid"), "{page}");
    app.stop().await;
}

#[actix::test]
async fn a_link_code_signs_a_member_in_as_themselves_with_their_telegram_questions() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, "", None, &[CONFIRM_PROFILE_UPDATE]).await;
    telegram.push_private_text(&alice(), "/link");
    let code = code_said(&telegram, 1001, "To be the same Alice").await;
    let web = Visitor::new(&app);
    let (status, _, location) = web.join(&code, "").await;
    assert_eq!((status, location.as_deref()), (303, Some("/chat")));
    assert!(
        web.get("/chat")
            .await
            .1
            .contains("<span class=\"who\">Alice</span>")
    );

    // Asked on Telegram, waiting on the page, answered there: the outcome goes to Telegram.
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "2 Oak Road"}),
        )]),
        Step::Reply("Saved your address.".into()),
    ]);
    telegram.push_private_text(&alice(), "I moved to 2 Oak Road");
    bot_says(&telegram, 1001, "Run profile_update?").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let page = loop {
        let (_, page, _) = web.get("/waiting").await;
        if page.contains("2 Oak Road") {
            break page;
        }
        assert!(std::time::Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(page.contains("You were asked on Telegram"), "{page}");
    let at = page.find("action=\"/waiting/").unwrap() + 17;
    let id = page[at..].split('"').next().unwrap().to_string();
    let csrf = Visitor::field(&page, "csrf");
    let (status, _, location) = web
        .post(
            &format!("/waiting/{id}"),
            &[("csrf", &csrf), ("answer", "approve"), ("back", "waiting")],
        )
        .await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/waiting?answered=approve"))
    );
    bot_says(&telegram, 1001, "Saved your address.").await;
    assert_eq!(llm.last_tool_result(), "saved address = 2 Oak Road");
    // Answered once: the same answer again finds nothing open.
    let (status, _, _) = web
        .post(
            &format!("/waiting/{id}"),
            &[("csrf", &csrf), ("answer", "approve")],
        )
        .await;
    assert_eq!(status, 409);
    app.stop().await;
}

#[actix::test]
async fn wrong_codes_on_the_page_are_limited() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let app = start_on_telegram(&llm, &telegram, "", None, &[]).await;
    let guesser = Visitor::new(&app);
    for _ in 0..5 {
        let (status, page, _) = guesser.join("AAAA-AAAA", "Eve").await;
        assert_eq!(status, 400);
        assert!(page.contains("That code is not valid"), "{page}");
    }
    // Now even a right code is refused for an hour from this address.
    telegram.push_private_text(&alice(), "/invite child Eve");
    let code = code_said(&telegram, 1001, "Invite code for Eve").await;
    let (status, page, _) = guesser.join(&code, "Eve").await;
    assert_eq!(status, 400);
    assert!(page.contains("Too many wrong codes"), "{page}");
    assert!(app.running.membership.family().member("eve").is_none());
    app.stop().await;
}
