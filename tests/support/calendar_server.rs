//! A calendar server on 127.0.0.1 for the calendar tests and the benchmark: it answers every
//! request (any method: GET, PROPFIND, REPORT) with what the test's closure says, and
//! records each one (method, path, `Authorization`), so a test can serve a subscribed
//! `.ics`, play a CalDAV server that names addresses elsewhere, or stand for "elsewhere"
//! and show that nothing reached it.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};

use super::background_server::serve_in_background;

/// One request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
}

/// What the server answers one request.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    /// `200` with `body` as `text/calendar`.
    pub fn calendar(body: &str) -> Answer {
        Answer {
            status: 200,
            headers: vec![("Content-Type".into(), "text/calendar".into())],
            body: body.to_owned(),
        }
    }

    /// `207 Multi-Status` with `body`.
    pub fn multistatus(body: &str) -> Answer {
        Answer {
            status: 207,
            headers: vec![(
                "Content-Type".into(),
                "application/xml; charset=utf-8".into(),
            )],
            body: body.to_owned(),
        }
    }

    pub fn status(status: u16) -> Answer {
        Answer {
            status,
            headers: Vec::new(),
            body: String::new(),
        }
    }
}

type Responder = dyn Fn(&Recorded) -> Answer + Send + Sync;

struct Shared {
    requests: Mutex<Vec<Recorded>>,
    respond: Box<Responder>,
}

/// The running server; stopped when dropped.
pub struct CalendarServer {
    pub port: u16,
    shared: Arc<Shared>,
    handle: ServerHandle,
    thread: Option<JoinHandle<()>>,
}

async fn answer(request: HttpRequest, shared: web::Data<Shared>) -> HttpResponse {
    let recorded = Recorded {
        method: request.method().to_string(),
        path: request.uri().to_string(),
        authorization: request
            .headers()
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned),
    };
    shared.requests.lock().unwrap().push(recorded.clone());
    let said = (shared.respond)(&recorded);
    let mut response =
        HttpResponse::build(StatusCode::from_u16(said.status).expect("a status code"));
    for (name, value) in &said.headers {
        response.insert_header((name.as_str(), value.as_str()));
    }
    response.body(said.body)
}

impl CalendarServer {
    /// Answers every request with `respond`'s answer.
    pub fn start(respond: impl Fn(&Recorded) -> Answer + Send + Sync + 'static) -> Self {
        let shared = Arc::new(Shared {
            requests: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        });
        let data = web::Data::from(Arc::clone(&shared));
        let server = serve_in_background("calendar-server", 1, move |routes| {
            routes
                .app_data(data.clone())
                .default_service(web::to(answer));
        });
        CalendarServer {
            port: server.port,
            shared,
            handle: server.handle,
            thread: Some(server.thread),
        }
    }

    /// Serves `ics` to every request, as a school's feed would.
    pub fn feed(ics: String) -> Self {
        CalendarServer::start(move |_| Answer::calendar(&ics))
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }
}

impl Drop for CalendarServer {
    fn drop(&mut self) {
        // The stop command is sent eagerly; the returned future only reports completion.
        drop(self.handle.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
