//! `hearth chat` beside a running hearth: the console as a client of that hearth's HTTP
//! API, so the running hearth's one queue keeps the database and answers every message.
//!
//! Lines become `POST /inbound` (session `console:<member>`); a confirmation the reply
//! asks for is answered by a yes/no line through `POST /inbound/confirm`; an answer
//! that takes longer than the server waits (`202`) is read with `GET /inbound/{id}`.
//! One line at a time: the next line is read once the previous one is answered.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Stdout};

use super::console::yes_or_no;

/// How often an answer that was not ready is asked for again.
const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The connection to a hearth on this machine is made at once or not at all.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub struct RemoteConsoleSettings {
    /// Where the running hearth listens (from its lock file).
    pub address: SocketAddr,
    /// The member's token made for this chat, when the running hearth asks for a key.
    pub api_key: Option<String>,
    pub member_id: crate::ids::MemberId,
    /// Longer than the server waits for a reply (`http.reply_timeout_seconds`).
    pub request_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum RemoteConsoleError {
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
    #[error("cannot build the http client: {0}")]
    Client(String),
    #[error("the running hearth at {address} does not answer: {reason}")]
    Unreachable { address: SocketAddr, reason: String },
    #[error(
        "the running hearth at {address} refused the member token made for this chat: \
         it does not run on this configuration's database"
    )]
    KeyRefused { address: SocketAddr },
}

/// A reachable address for `address`: a hearth bound to every interface is reached on
/// loopback.
fn reachable(address: SocketAddr) -> SocketAddr {
    let mut address = address;
    if address.ip().is_unspecified() {
        let loopback = match address {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        };
        address.set_ip(loopback);
    }
    address
}

struct RemoteConsole {
    client: reqwest::Client,
    base_url: String,
    settings: RemoteConsoleSettings,
    stdout: Stdout,
}

/// Read stdin line by line until it ends, sending each line to the running hearth as
/// `settings.member_id`, and print every reply.
pub async fn run_remote_console(settings: RemoteConsoleSettings) -> Result<(), RemoteConsoleError> {
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(settings.request_timeout)
        .build()
        .map_err(|error| RemoteConsoleError::Client(error.to_string()))?;
    let mut console = RemoteConsole {
        client,
        base_url: format!("http://{}", reachable(settings.address)),
        settings,
        stdout: tokio::io::stdout(),
    };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    console
        .write("hearth is listening. Type a message, Ctrl-D to leave.\nyou> ")
        .await?;
    // The confirmation the last reply asked for: a "yes" or "no" line answers it.
    let mut asked: Option<String> = None;
    while let Some(line) = lines.next_line().await? {
        let text = line.trim();
        if !text.is_empty() {
            // Any other line is an ordinary message; the question stays open.
            let confirmation = yes_or_no(text).and_then(|approve| Some((approve, asked.take()?)));
            let answer = match confirmation {
                Some((approve, confirmation_id)) => {
                    let body = json!({
                        "confirmation_id": confirmation_id,
                        "user_id": console.settings.member_id,
                        "approve": approve,
                    });
                    console.post("/inbound/confirm", body).await?
                }
                None => {
                    let body = json!({
                        "user_id": console.settings.member_id,
                        "text": text,
                        // The member's own terminal conversation (HTTP sessions are
                        // per member).
                        "session_id": "console",
                    });
                    console.post("/inbound", body).await?
                }
            };
            if let Some(confirmation_id) = console.show(answer).await? {
                asked = Some(confirmation_id);
            }
        }
        console.write("you> ").await?;
    }
    Ok(())
}

impl RemoteConsole {
    async fn write(&mut self, text: &str) -> Result<(), RemoteConsoleError> {
        self.stdout.write_all(text.as_bytes()).await?;
        self.stdout.flush().await?;
        Ok(())
    }

    async fn say(&mut self, text: &str) -> Result<(), RemoteConsoleError> {
        self.write(&format!("hearth> {text}\n")).await
    }

    fn unreachable(&self, error: reqwest::Error) -> RemoteConsoleError {
        RemoteConsoleError::Unreachable {
            address: self.settings.address,
            reason: error.to_string(),
        }
    }

    fn with_key(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.settings.api_key {
            Some(key) => request.header("X-API-Key", key),
            None => request,
        }
    }

    async fn post(&self, path: &str, body: Value) -> Result<(u16, Value), RemoteConsoleError> {
        let request = self
            .with_key(self.client.post(format!("{}{path}", self.base_url)))
            .json(&body);
        self.answer_of(request).await
    }

    async fn answer_of(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<(u16, Value), RemoteConsoleError> {
        let response = request
            .send()
            .await
            .map_err(|error| self.unreachable(error))?;
        let status = response.status().as_u16();
        if status == 401 {
            return Err(RemoteConsoleError::KeyRefused {
                address: self.settings.address,
            });
        }
        let body = response.json().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    /// Print what the hearth answered; returns the id of a confirmation it asks for.
    async fn show(
        &mut self,
        (status, body): (u16, Value),
    ) -> Result<Option<String>, RemoteConsoleError> {
        let text = |key: &str| body[key].as_str().unwrap_or_default().to_string();
        match (status, body["status"].as_str()) {
            (200, Some("confirmation_required")) => {
                let prompt = body["confirmation"]["prompt"].as_str().unwrap_or_default();
                self.say(prompt).await?;
                self.say("(answer yes or no)").await?;
                let id = body["confirmation"]["id"].as_str().map(str::to_string);
                Ok(id)
            }
            // The member's next line answers the question, as an ordinary message.
            (200, Some("question")) => self.say(&text("question")).await.map(|()| None),
            (200, _) => self.say(&text("reply")).await.map(|()| None),
            (202, _) => {
                if let Some(notice) = body["notice"].as_str() {
                    self.say(notice).await?;
                }
                self.wait_for_answer(&text("id")).await.map(|()| None)
            }
            (204, _) => {
                let member = self.settings.member_id.clone();
                let said =
                    format!("(the running hearth does not know {member:?} as a family member)");
                self.say(&said).await.map(|()| None)
            }
            (503, _)
                if body["error"]
                    .as_str()
                    .is_some_and(|error| error.starts_with("busy")) =>
            {
                self.say("I'm busy right now, try again in a moment.")
                    .await
                    .map(|()| None)
            }
            (_, _) => {
                let error = body["error"].as_str().map_or_else(
                    || format!("unexpected answer {status}: {body}"),
                    str::to_string,
                );
                self.say(&format!("({error})")).await.map(|()| None)
            }
        }
    }

    /// Ask for a message's answer until it has one (a retried message can take minutes;
    /// the member may leave with Ctrl-C, the message stays answered in the running hearth).
    async fn wait_for_answer(&mut self, inbox_id: &str) -> Result<(), RemoteConsoleError> {
        loop {
            tokio::time::sleep(POLL_INTERVAL).await;
            let mut url = reqwest::Url::parse(&format!("{}/inbound", self.base_url))
                .map_err(|error| RemoteConsoleError::Client(error.to_string()))?;
            if let Ok(mut segments) = url.path_segments_mut() {
                segments.push(inbox_id);
            }
            url.query_pairs_mut()
                .append_pair("user_id", self.settings.member_id.as_str());
            let request = self.with_key(self.client.get(url));
            let (status, body) = self.answer_of(request).await?;
            match (status, body["status"].as_str()) {
                (200, Some("answered" | "failed")) => {
                    let reply = body["reply"].as_str().unwrap_or_default().to_string();
                    return self.say(&reply).await;
                }
                (200, Some("suspended")) => {
                    return self
                        .say(
                            "(the answer waits for a confirmation that was not shown here; \
                             it will expire: send the message again to be asked)",
                        )
                        .await;
                }
                (200, _) => {}
                _ => {
                    let error = body["error"].as_str().unwrap_or("no answer");
                    return self.say(&format!("({error})")).await;
                }
            }
        }
    }
}
