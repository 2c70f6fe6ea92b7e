//! A real CalDAV server, Radicale, on 127.0.0.1, run as a child process for the calendar
//! tests: hearth's CalDAV requests must work against a real server, not a fake.
//!
//! `scripts/install-test-radicale.sh` installs Radicale into
//! `$HEARTH_TEST_CACHE/radicale-venv` (default `~/.cache/hearth-test`); each server gets its
//! own loopback-only config, password file (plain text: one user, `alice`) and storage
//! folder in a temporary folder. With `HEARTH_REQUIRE_REAL_SERVERS=1` a missing install
//! fails the test, otherwise the test skips. The test itself reads and changes the calendar
//! through plain CalDAV requests, as another family member's phone would.
//! `write_calendar_config` points a test config's calendar tools at one.

// Not every includer uses the whole API.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::Method;

use super::real_llm::require_real_servers;
use super::test_config::{TestConfig, entries, names};

pub const USER: &str = "alice";
pub const PASSWORD: &str = "radicale-test-password-7f3a";

/// Ends Radicale when the test process dies without dropping its `Radicale`.
const LAUNCHER: &str = r#"
import os, runpy, threading, time
parent = os.getppid()
def watch():
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(3)
threading.Thread(target=watch, daemon=True).start()
runpy.run_module("radicale", run_name="__main__", alter_sys=True)
"#;

pub struct Radicale {
    child: Option<Child>,
    port: u16,
    folder: tempfile::TempDir,
    http: reqwest::Client,
}

fn venv_python() -> PathBuf {
    let cache = std::env::var("HEARTH_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/hearth-test")
        });
    cache.join("radicale-venv/bin/python")
}

/// One event resource as the server holds it.
#[derive(Debug, Clone)]
pub struct StoredEvent {
    pub href: String,
    pub etag: String,
    pub text: String,
}

impl Radicale {
    /// A fresh server, or `None` (the test skips) when Radicale is not installed and real
    /// servers are not required.
    pub fn start() -> Option<Radicale> {
        let python = venv_python();
        if !python.exists() {
            assert!(
                !require_real_servers(),
                "Radicale is not installed at {}: run scripts/install-test-radicale.sh",
                python.display()
            );
            eprintln!("skipped: Radicale is not installed (scripts/install-test-radicale.sh)");
            return None;
        }
        let folder = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let users = folder.path().join("users");
        std::fs::write(&users, format!("{USER}:{PASSWORD}\n")).unwrap();
        let config = folder.path().join("config");
        std::fs::write(
            &config,
            format!(
                "[server]\nhosts = 127.0.0.1:{port}\n[auth]\ntype = htpasswd\nhtpasswd_filename = {}\nhtpasswd_encryption = plain\n[storage]\nfilesystem_folder = {}\n[logging]\nlevel = warning\n",
                users.display(),
                folder.path().join("collections").display()
            ),
        )
        .unwrap();
        let log = std::fs::File::create(folder.path().join("radicale.log")).unwrap();
        let child = Command::new(&python)
            .arg("-c")
            .arg(LAUNCHER)
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("radicale starts");
        let mut server = Radicale {
            child: Some(child),
            port,
            folder,
            http: reqwest::Client::new(),
        };
        server.wait_listening();
        Some(server)
    }

    fn wait_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|child| child.try_wait().unwrap())
            {
                panic!("radicale exited ({status}): {}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "radicale never listened: {}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.path().join("radicale.log")).unwrap_or_default()
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    /// Stops the server (the calendar is down) until `restart`.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    async fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: String,
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let url = format!("{}{}", self.base_url(), path.trim_start_matches('/'));
        let mut request = self
            .http
            .request(Method::from_bytes(method.as_bytes()).unwrap(), url)
            .basic_auth(USER, Some(PASSWORD))
            .body(body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = request.send().await.expect("radicale answers");
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }

    /// Makes the calendar `/<user>/<id>/` named `name`; its path.
    pub async fn make_calendar(&self, id: &str, name: &str) -> String {
        let path = format!("/{USER}/{id}/");
        let body = format!(
            r#"<?xml version="1.0"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop><D:displayname>{name}</D:displayname></D:prop></D:set></C:mkcalendar>"#
        );
        let (status, _, text) = self.request("MKCALENDAR", &path, &[], body).await;
        assert_eq!(status, 201, "MKCALENDAR {path}: {text}");
        path
    }

    /// Every event resource of the calendar at `path`.
    pub async fn events(&self, path: &str) -> Vec<StoredEvent> {
        let body = r#"<?xml version="1.0"?><C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT"/></C:comp-filter></C:filter></C:calendar-query>"#;
        let (status, _, text) = self
            .request("REPORT", path, &[("Depth", "1")], body.into())
            .await;
        assert_eq!(status, 207, "REPORT {path}: {text}");
        let document = roxmltree::Document::parse(&text).unwrap();
        document
            .descendants()
            .filter(|node| node.tag_name().name() == "response")
            .map(|response| {
                let find = |name: &str| {
                    response
                        .descendants()
                        .find(|node| node.tag_name().name() == name)
                        .and_then(|node| node.text())
                        .unwrap_or_default()
                        .to_string()
                };
                StoredEvent {
                    href: find("href"),
                    etag: find("getetag"),
                    text: find("calendar-data"),
                }
            })
            .collect()
    }

    /// Writes `text` at `href` as another client would, over whatever is there; its ETag.
    pub async fn put(&self, href: &str, text: &str) -> String {
        let (status, headers, body) = self
            .request(
                "PUT",
                href,
                &[("Content-Type", "text/calendar")],
                text.into(),
            )
            .await;
        assert!(
            status == 201 || status == 204,
            "PUT {href}: {status} {body}"
        );
        headers["etag"].to_str().unwrap().to_string()
    }
}

impl Drop for Radicale {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The test config with the calendar tools on Radicale's Family calendar (as alice, the
/// password in `TEST_CALDAV_PASSWORD`); writes ask first when `asking`.
pub fn calendar_config(
    folder: &std::path::Path,
    llm: &str,
    caldav_url: &str,
    asking: bool,
) -> TestConfig {
    let caldav = entries(&[
        ("url", caldav_url.into()),
        ("username", "alice".into()),
        ("password_env", "TEST_CALDAV_PASSWORD".into()),
        ("calendars", vec!["Family"].into()),
    ]);
    let config = TestConfig::new(folder, llm)
        .default_processing("calendar_config", entries(&[("caldav", caldav)]))
        .default_tools(&format!("profile_get, profile_update, {CALENDAR_TOOLS}"));
    if asking {
        config.default_confirm(&names(ASKING))
    } else {
        config
    }
}

/// `calendar_config`, written in `folder`.
pub fn write_calendar_config(
    folder: &std::path::Path,
    llm: &str,
    caldav_url: &str,
    asking: bool,
) -> std::path::PathBuf {
    calendar_config(folder, llm, caldav_url, asking).write(folder)
}

pub const CALENDAR_TOOLS: &str =
    "search_calendar_events, add_calendar_event, modify_calendar_event, delete_calendar_event";

pub const ASKING: &str = "add_calendar_event, modify_calendar_event, delete_calendar_event";
