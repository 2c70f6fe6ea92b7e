//! A calendar event is made once across kill -9 of the real binary: killed after the PUT
//! and before the answer, the restarted turn replays the journaled result; killed while
//! the PUT's answer was still on its way (the server wrote it, hearth never heard), the
//! call is of unknown outcome and the model's second try finds the event by its UID (the
//! turn's key) instead of making another.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hearth::actors::processing::INTERRUPTED_CALL_RESULT;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::support::hearth_app::{API_KEY, Hearth, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::radicale::{PASSWORD, Radicale, write_calendar_config};

async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done().await {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn post(base_url: &str, body: &Value) -> Option<Value> {
    let response = reqwest::Client::new()
        .post(format!("{base_url}/inbound"))
        .header("X-API-Key", API_KEY)
        .json(body)
        .send()
        .await
        .ok()?;
    response.json().await.ok()
}

/// Sends `message` (with its `message_id`) again until it is answered.
async fn answered(hearth: &Hearth, message: &Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(body) = post(&hearth.base_url, message).await
            && body["status"] == "answered"
        {
            return body;
        }
        assert!(Instant::now() < deadline, "not answered after the restart");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn add_swimming() -> Step {
    Step::ToolCalls(vec![(
        "add_calendar_event".into(),
        json!({"title": "Swimming", "date": "2027-01-07", "time": "17:00", "recurrence": "weekly on thu"}),
    )])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_after_the_put_and_before_the_answer_the_event_is_made_once() {
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = write_calendar_config(folder.path(), &llm.base_url(), &radicale.base_url(), false);
    let env = test_env(&[("TEST_CALDAV_PASSWORD", PASSWORD)]);
    // The event is written, then the model never answers: hearth is killed in between.
    llm.push_many([add_swimming(), Step::Hang]);
    let message = json!({"user_id": "alice", "text": "add swimming", "message_id": "swim-1"});
    let first = Hearth::spawn(&config, &env);
    let (url, body) = (first.base_url.clone(), message.clone());
    tokio::spawn(async move { post(&url, &body).await });
    wait_for("the event and the next model round", async || {
        llm.request_count() == 2 && radicale.events(&family).await.len() == 1
    })
    .await;
    first.kill();

    llm.push(Step::Reply("Swimming is in.".into()));
    let second = Hearth::spawn(&config, &env);
    assert_eq!(
        answered(&second, &message).await["reply"],
        "Swimming is in."
    );
    assert_eq!(radicale.events(&family).await.len(), 1);
    let replayed = llm.tool_result_seen(llm.requests().len() - 1);
    assert!(
        replayed.starts_with("Added to Family: Swimming"),
        "{replayed}"
    );
    assert!(
        !second.log().contains(PASSWORD),
        "the password is never logged"
    );
}

/// A loopback proxy to `upstream` that, while `holding`, lets a PUT through and swallows its
/// answer: the server has written the event, hearth never hears back.
struct HoldingProxy {
    port: u16,
    holding: Arc<AtomicBool>,
    held: Arc<AtomicUsize>,
}

impl HoldingProxy {
    async fn start(upstream: u16) -> HoldingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let holding = Arc::new(AtomicBool::new(true));
        let held = Arc::new(AtomicUsize::new(0));
        let (holding_in, held_in) = (holding.clone(), held.clone());
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let (holding, held) = (holding_in.clone(), held_in.clone());
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    let swallow = Arc::new(AtomicBool::new(false));
                    let swallowing = swallow.clone();
                    tokio::spawn(async move {
                        let mut buffer = vec![0u8; 65536];
                        while let Ok(read) = server_read.read(&mut buffer).await {
                            if read == 0 {
                                break;
                            }
                            if swallowing.load(Ordering::SeqCst) {
                                held.fetch_add(1, Ordering::SeqCst);
                                continue;
                            }
                            if client_write.write_all(&buffer[..read]).await.is_err() {
                                break;
                            }
                        }
                        // The server closes after its answer: hearth must not hear that either.
                        if swallowing.load(Ordering::SeqCst) {
                            std::future::pending::<()>().await;
                        }
                        drop(client_write);
                    });
                    let mut buffer = vec![0u8; 65536];
                    while let Ok(read) = client_read.read(&mut buffer).await {
                        if read == 0 {
                            break;
                        }
                        if buffer.starts_with(b"PUT ") && holding.load(Ordering::SeqCst) {
                            swallow.store(true, Ordering::SeqCst);
                        }
                        if server_write.write_all(&buffer[..read]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        HoldingProxy {
            port,
            holding,
            held,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_before_the_puts_answer_arrived_a_second_try_finds_the_event_instead_of_making_one()
{
    let Some(radicale) = Radicale::start() else {
        return;
    };
    let family = radicale.make_calendar("family", "Family").await;
    let upstream: u16 = radicale
        .base_url()
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let proxy = HoldingProxy::start(upstream).await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let through_proxy = format!("http://127.0.0.1:{}/", proxy.port);
    let config = write_calendar_config(folder.path(), &llm.base_url(), &through_proxy, false);
    let env = test_env(&[("TEST_CALDAV_PASSWORD", PASSWORD)]);
    llm.push(add_swimming());
    let message = json!({"user_id": "alice", "text": "add swimming", "message_id": "swim-2"});
    let first = Hearth::spawn(&config, &env);
    let (url, body) = (first.base_url.clone(), message.clone());
    tokio::spawn(async move { post(&url, &body).await });
    wait_for("the event written and its answer held", async || {
        proxy.held.load(Ordering::SeqCst) > 0 && radicale.events(&family).await.len() == 1
    })
    .await;
    first.kill();

    // After the restart the model hears the call's outcome is unknown and tries again.
    proxy.holding.store(false, Ordering::SeqCst);
    llm.push_many([add_swimming(), Step::Reply("Swimming is in.".into())]);
    let second = Hearth::spawn(&config, &env);
    assert_eq!(
        answered(&second, &message).await["reply"],
        "Swimming is in."
    );
    let requests = llm.requests().len();
    let interrupted = llm.tool_result_seen(requests - 2);
    assert!(
        interrupted.contains(INTERRUPTED_CALL_RESULT),
        "{interrupted}"
    );
    let second_try = llm.tool_result_seen(requests - 1);
    assert!(
        second_try.starts_with("Already in Family (added before): Swimming"),
        "{second_try}"
    );
    assert_eq!(
        radicale.events(&family).await.len(),
        1,
        "one event, not two"
    );
}
