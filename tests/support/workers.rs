//! Several hearth workers of one PostgreSQL database seen from outside, as a load balancer
//! sees them: their addresses, which are still alive, and a message sent to one of them
//! (again to the next while one is gone) until it is answered. Shared by the
//! several-workers tests and the pipeline benchmark.

// The tests and the benchmark each use a different part of this.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::hearth_app::Hearth;

/// How long one message may take to be answered, however many workers it went through.
const ANSWER_WITHIN: Duration = Duration::from_secs(90);

/// The workers' addresses, and which are still alive.
pub struct Workers {
    pub urls: Vec<String>,
    pub alive: Vec<AtomicBool>,
    pub key: String,
    pub client: reqwest::Client,
}

impl Workers {
    /// The workers at `urls`, every one alive, called with the API key `key`.
    pub fn new(urls: Vec<String>, key: &str, client: reqwest::Client) -> Workers {
        Workers {
            alive: urls.iter().map(|_| AtomicBool::new(true)).collect(),
            urls,
            key: key.to_string(),
            client,
        }
    }

    /// Worker `index` is gone (killed): nothing more is sent to it.
    pub fn gone(&self, index: usize) {
        self.alive[index].store(false, Ordering::SeqCst);
    }

    /// The `n`th alive worker, counting round from `n`.
    pub fn pick(&self, n: usize) -> &str {
        (0..self.urls.len())
            .map(|step| (n + step) % self.urls.len())
            .find(|index| self.alive[*index].load(Ordering::SeqCst))
            .map(|index| self.urls[index].as_str())
            .expect("a worker is alive")
    }

    /// POST or GET on worker `base`: `None` when the worker is gone (killed meanwhile).
    pub async fn call(&self, base: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
        let url = format!("{base}{path}");
        let request = match body {
            Some(body) => self.client.post(url).json(body),
            None => self.client.get(url),
        };
        let response = request.header("X-API-Key", &self.key).send().await.ok()?;
        let status = response.status().as_u16();
        let body = response.json().await.ok()?;
        Some((status, body))
    }

    /// Send one message (`POST /inbound` with its `message_id`, so a message sent again
    /// is a duplicate, never a second turn) to the `n`th worker, again to the next while
    /// one is gone, and while it is only accepted (its caller's wait ended first) ask for
    /// it (`GET /inbound/{id}` as its `user_id`) until it is answered: its reply.
    pub async fn answered(&self, n: usize, body: &Value) -> String {
        let deadline = Instant::now() + ANSWER_WITHIN;
        let member = body["user_id"].as_str().expect("the message names user_id");
        let mut id: Option<String> = None;
        let mut attempt = n;
        loop {
            assert!(Instant::now() < deadline, "{body} not answered; id {id:?}");
            let base = self.pick(attempt).to_string();
            attempt += 1;
            let answer = match &id {
                None => self.call(&base, "/inbound", Some(body)).await,
                Some(id) => {
                    let path = format!("/inbound/{id}?user_id={member}");
                    self.call(&base, &path, None).await
                }
            };
            let Some((status, answer)) = answer else {
                continue;
            };
            match answer["status"].as_str() {
                Some("answered") => return answer["reply"].as_str().unwrap().to_string(),
                Some("accepted") => {
                    id = answer["id"].as_str().map(str::to_string);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                _ => panic!("{body}: {status} {answer}"),
            }
        }
    }
}

/// The worker holding the Telegram lease, as `/readyz` of `process` lists the workers.
pub async fn telegram_leader_pid(process: &Hearth, env: &BTreeMap<String, String>) -> u32 {
    let client = reqwest::Client::new();
    let started = std::time::Instant::now();
    loop {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no worker leads telegram"
        );
        let ready: Value = client
            .get(format!("{}/readyz", process.base_url))
            .header("X-API-Key", &env["TEST_HEARTH_ADMIN_KEY"])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let workers = ready["components"]["workers"]["detail"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let leader = workers
            .split("; ")
            .find(|worker| worker.contains("channel:telegram"))
            .and_then(|worker| worker.split("(pid ").nth(1))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|pid| pid.parse().ok());
        if let Some(pid) = leader {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
