//! A CalDAV server's `207 Multi-Status` answers, read by hearth's own CalDAV client
//! (`hearth::calendar::caldav::CalDavClient`) over loopback: finding the account's
//! calendars (a PROPFIND that may lead on to a principal and a calendar home) and a search
//! of events (a REPORT). A server on 127.0.0.1 answers every request with the input; a
//! second one, another origin, stands for anywhere else an answer may point to.
//!
//! Input: the XML answer; `{server}` in it stands for the configured server's origin
//! (`http://127.0.0.1:<port>`) and `{elsewhere}` for the other one's, so that the corpus
//! can point at both.
//!
//! Properties: no input panics or hangs; the other server never receives a request (the
//! password goes only to the configured origin); every calendar found and every event
//! resource returned is on the configured origin, a calendar with a name; a failure is one
//! of the client's errors in words, never naming the password, and a server that cannot
//! be reached is only ever the configured one.
#![no_main]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use chrono::{TimeZone, Utc};
use hearth::calendar::caldav::{CalDavClient, CalDavError};
use hearth::config::Secret;
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

const PASSWORD: &str = "fuzz-caldav-password-7f3a";

/// A loopback HTTP server answering every request `207` with the current answer.
struct FakeServer {
    origin: String,
    requests: Arc<AtomicUsize>,
}

struct World {
    runtime: tokio::runtime::Runtime,
    server: FakeServer,
    elsewhere: FakeServer,
    answer: Arc<Mutex<String>>,
    client: CalDavClient,
    account: Url,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let answer = Arc::new(Mutex::new(String::new()));
        let (server, elsewhere) =
            runtime.block_on(async { (start(answer.clone()).await, start(answer.clone()).await) });
        let account = Url::parse(&format!("{}/dav/alice/", server.origin)).expect("a url");
        let client = CalDavClient::new("alice", Secret::new(PASSWORD), &account);
        World {
            runtime,
            server,
            elsewhere,
            answer,
            client,
            account,
        }
    })
}

async fn start(answer: Arc<Mutex<String>>) -> FakeServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let origin = format!("http://{}", listener.local_addr().expect("an address"));
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = requests.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            counted.fetch_add(1, Ordering::SeqCst);
            let body = answer.lock().expect("the answer").clone();
            tokio::spawn(answer_one(stream, body));
        }
    });
    FakeServer { origin, requests }
}

/// Reads one request (head and `Content-Length` body) and answers it with `body`.
async fn answer_one(mut stream: TcpStream, body: String) -> std::io::Result<()> {
    let mut received = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let count = stream.read(&mut chunk).await?;
        if count == 0 {
            return Ok(());
        }
        received.extend_from_slice(&chunk[..count]);
        if let Some(at) = received.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
    };
    let head = String::from_utf8_lossy(&received[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while received.len() < head_end + length {
        let count = stream.read(&mut chunk).await?;
        if count == 0 {
            break;
        }
        received.extend_from_slice(&chunk[..count]);
    }
    let response = format!(
        "HTTP/1.1 207 Multi-Status\r\nContent-Type: application/xml; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

fn on_the_server(world: &World, url: &Url) -> bool {
    url.origin() == world.account.origin()
}

fn check_error(world: &World, error: &CalDavError) {
    let said = error.to_string();
    assert!(!said.trim().is_empty(), "{error:?} says nothing");
    assert!(
        !said.contains(PASSWORD),
        "the error names the password: {said}"
    );
    let server_host = world.server.origin.trim_start_matches("http://");
    if let CalDavError::Unreachable { host, .. } = error {
        assert_eq!(
            host, server_host,
            "a request went to another server: {said}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(text) = hearth_fuzz_checks::text(data) else {
        return;
    };
    let world = world();
    *world.answer.lock().expect("the answer") = text
        .replace("{server}", &world.server.origin)
        .replace("{elsewhere}", &world.elsewhere.origin);
    let from = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
    let to = Utc.with_ymd_and_hms(2026, 12, 8, 0, 0, 0).unwrap();
    let (calendars, events) = world.runtime.block_on(async {
        (
            world.client.calendars(&world.account).await,
            world.client.events_between(&world.account, from, to).await,
        )
    });
    assert_eq!(
        world.elsewhere.requests.load(Ordering::SeqCst),
        0,
        "a request went to the other server"
    );
    match calendars {
        Ok(calendars) => {
            for calendar in calendars {
                assert!(
                    on_the_server(world, &calendar.url),
                    "a calendar elsewhere: {calendar:?}"
                );
                assert!(!calendar.name.trim().is_empty(), "{calendar:?}");
            }
        }
        Err(error) => check_error(world, &error),
    }
    match events {
        Ok(resources) => {
            for resource in resources {
                assert!(
                    on_the_server(world, &resource.url),
                    "an event elsewhere: {}",
                    resource.url
                );
            }
        }
        Err(error) => check_error(world, &error),
    }
});
