//! The web page as a member's browser uses it, without a browser: hearth started with the
//! reminder and note tools (`start`); a signed-in member (`Member`) keeping the session
//! cookie and posting forms; a visitor before signing in (`Visitor`); signing in by code
//! (`ask_code`, `enter_code`, `codes_in`) or by link (`link_in`, `use_link`), also behind a
//! proxy (`start_behind_proxy`); and values read back from a page (`field`, `web_link`).

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use std::path::Path;

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use super::hearth_app::Hearth;
use super::llm_server::ScriptedLlmServer;
use super::reminders::REMIND_TOOLS;
use super::telegram::TelegramServer;
use super::telegram_family::{bot_says, start_on_telegram};
use super::test_config::TestConfig;
use super::tool_lists::NOTE_TOOLS;

/// hearth with the reminder and note tools; alice a parent, bob a child.
pub async fn start(llm: &ScriptedLlmServer) -> Hearth {
    let folder = tempfile::tempdir().unwrap();
    let path = TestConfig::new(folder.path(), &llm.base_url())
        .child("bob")
        .default_tools(&format!("profile_get, {REMIND_TOOLS}, {NOTE_TOOLS}"))
        .write(folder.path());
    Hearth::start_from(folder, &path, &[]).await
}

/// The value of cookie `name` among a response's `Set-Cookie` headers.
pub fn cookie_set(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|value| value.strip_prefix(&format!("{name}=")))
        .and_then(|value| value.split(';').next())
        .unwrap_or_else(|| panic!("no {name} cookie set"))
        .to_string()
}

/// The value of the first field `name` on a page.
pub fn field(page: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name}: {page}"))
        + marker.len();
    page[at..].split('"').next().unwrap().to_string()
}

/// A signed-in member's browser, without the browser: the session cookie on every request,
/// no redirect followed.
pub struct Member {
    client: reqwest::Client,
    base: String,
    pub(crate) csrf: String,
}

/// An answer: status, `Location`, body.
pub struct Answer {
    pub(crate) status: u16,
    pub(crate) location: String,
    pub(crate) body: String,
}

pub async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get(LOCATION)
        .map(|value| value.to_str().unwrap().to_string())
        .unwrap_or_default();
    Answer {
        status,
        location,
        body: response.text().await.unwrap(),
    }
}

impl Member {
    /// Sign `member` in with a one-time link, as the page's link form does.
    pub(crate) async fn sign_in(app: &Hearth, member: &str) -> Member {
        Member::sign_in_at(app.app().stores.web_access.clone(), &app.base_url, member).await
    }

    /// Sign `member` in at `base_url` (any worker of the database `web_access` is on) with
    /// a one-time link made in that database.
    pub(crate) async fn sign_in_at(
        web_access: std::sync::Arc<dyn hearth::ports::WebAccess>,
        base_url: &str,
        member: &str,
    ) -> Member {
        let identity = hearth::identity::Identity::new(web_access, 30);
        let secret = identity
            .new_sign_in_link(&member.parse().unwrap(), hearth::ports::now_ms())
            .await
            .unwrap();
        Member::sign_in_with_link(base_url, &secret).await
    }

    /// Sign in on the hearth at `base_url` with a one-time link's `secret` (what follows
    /// `/sign-in/link/`), as the page's link form does.
    pub(crate) async fn sign_in_with_link(base_url: &str, secret: &str) -> Member {
        let plain = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let shown = plain
            .get(format!("{base_url}/sign-in/link/{secret}"))
            .send()
            .await
            .unwrap();
        let form_cookie = cookie_set(&shown, "hearth_form");
        let form = field(&shown.text().await.unwrap(), "form");
        assert_eq!(form, form_cookie);
        let signed_in = plain
            .post(format!("{base_url}/sign-in/link"))
            .header(COOKIE, format!("hearth_form={form_cookie}"))
            .form(&[("form", form.as_str()), ("link", secret)])
            .send()
            .await
            .unwrap();
        assert_eq!(signed_in.status().as_u16(), 303);
        let session = cookie_set(&signed_in, "hearth_session");
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(COOKIE, format!("hearth_session={session}").parse().unwrap());
        let client = reqwest::Client::builder()
            .default_headers(headers)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let mut member = Member {
            client,
            base: base_url.to_owned(),
            csrf: String::new(),
        };
        member.csrf = field(&member.page("/settings").await, "csrf");
        member
    }

    pub(crate) async fn get(&self, path: &str) -> Answer {
        answer(
            self.client
                .get(format!("{}{path}", self.base))
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// A page that must answer 200.
    pub(crate) async fn page(&self, path: &str) -> String {
        let shown = self.get(path).await;
        assert_eq!(shown.status, 200, "{path}: {}", shown.body);
        shown.body
    }

    /// Post `form` with this session's CSRF token.
    pub(crate) async fn post(&self, path: &str, form: &[(&str, &str)]) -> Answer {
        let mut form = form.to_vec();
        form.push(("csrf", &self.csrf));
        self.post_without_token(path, &form).await
    }

    /// Post `form` (with the CSRF token) asking for the streamed answer, as the page's
    /// script does; every server-sent event until the stream ends, as (name, data).
    pub(crate) async fn post_for_events(
        &self,
        path: &str,
        form: &[(&str, &str)],
    ) -> Vec<(String, serde_json::Value)> {
        let mut form = form.to_vec();
        form.push(("csrf", &self.csrf));
        let response = self
            .client
            .post(format!("{}{path}", self.base))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let text = response.text().await.unwrap();
        text.split("\n\n")
            .filter(|event| !event.trim().is_empty())
            .map(|event| {
                let line = |name: &str| {
                    event
                        .lines()
                        .find_map(|line| line.strip_prefix(name))
                        .unwrap_or_else(|| panic!("no {name} in {event:?}"))
                        .to_string()
                };
                let data = serde_json::from_str(&line("data: ")).unwrap();
                (line("event: "), data)
            })
            .collect()
    }

    pub(crate) async fn post_without_token(&self, path: &str, form: &[(&str, &str)]) -> Answer {
        answer(
            self.client
                .post(format!("{}{path}", self.base))
                .form(form)
                .send()
                .await
                .unwrap(),
        )
        .await
    }
}

/// A visitor of the page: keeps the cookies it is given, follows no redirect.
pub struct Visitor {
    client: reqwest::Client,
    base: String,
    cookies: std::sync::Mutex<Vec<(String, String)>>,
    /// The address a trusted proxy would say it forwards for (`X-Forwarded-For`).
    forwarded_for: Option<String>,
}

impl Visitor {
    pub(crate) fn new(app: &Hearth) -> Visitor {
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

/// `hearth web-link --user member` of the real binary, beside the running hearth.
pub fn web_link(
    config: &Path,
    env: &std::collections::BTreeMap<String, String>,
    member: &str,
) -> String {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(config)
        .args(["web-link", "--user", member])
        .envs(env)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// The codes the bot sent to `chat`, oldest first.
pub fn codes_in(telegram: &TelegramServer, chat: i64) -> Vec<String> {
    telegram
        .bot_messages_in(chat)
        .into_iter()
        .filter_map(|message| message.text)
        .filter(|text| text.starts_with("Your code to sign in to hearth's web page"))
        .filter_map(|text| {
            text.split(|c: char| !c.is_ascii_digit())
                .find(|part| part.len() == 6)
                .map(str::to_string)
        })
        .collect()
}

pub async fn ask_code(visitor: &Visitor, member: &str) -> (u16, String, Option<String>) {
    let (_, page, _) = visitor.get("/sign-in").await;
    let form = Visitor::field(&page, "form");
    visitor
        .post("/sign-in", &[("form", &form), ("member", member)])
        .await
}

pub async fn enter_code(
    visitor: &Visitor,
    member: &str,
    code: &str,
) -> (u16, String, Option<String>) {
    let (_, page, _) = visitor.get(&format!("/sign-in/code?member={member}")).await;
    let form = Visitor::field(&page, "form");
    visitor
        .post(
            "/sign-in/code",
            &[("form", &form), ("member", member), ("code", code)],
        )
        .await
}

/// The app on the fake Bot API with loopback trusted as the proxy in front of the page,
/// so each visitor's `X-Forwarded-For` is the address the limits count.
pub async fn start_behind_proxy(llm: &ScriptedLlmServer, telegram: &TelegramServer) -> Hearth {
    start_on_telegram(
        llm,
        telegram,
        &[],
        None,
        &[("HEARTH__HTTP__TRUSTED_PROXIES", "127.0.0.1")],
    )
    .await
}

/// The newest sign-in link the bot sent to `chat` (waiting for it).
pub async fn link_in(telegram: &TelegramServer, chat: i64) -> String {
    bot_says(telegram, chat, "/sign-in/link/").await;
    telegram
        .bot_messages_in(chat)
        .into_iter()
        .rev()
        .filter_map(|message| message.text)
        .find_map(|text| {
            text.split_whitespace()
                .find(|word| word.contains("/sign-in/link/"))
                .map(|url| url.rsplit('/').next().unwrap().to_string())
        })
        .expect("a sign-in link")
}

/// Open the link with secret `secret` and press its button.
pub async fn use_link(visitor: &Visitor, secret: &str) -> (u16, String, Option<String>) {
    let (_, page, _) = visitor.get(&format!("/sign-in/link/{secret}")).await;
    let form = Visitor::field(&page, "form");
    visitor
        .post("/sign-in/link", &[("form", &form), ("link", secret)])
        .await
}
