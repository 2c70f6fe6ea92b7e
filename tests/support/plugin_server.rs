//! A real `http` plugin on 127.0.0.1 for the tests: `POST /run` receives hearth's plugin
//! calls (`{plugin_id, capability_id, parameters, user, conversation_id}`), records them,
//! and answers in the plugin protocol as scripted: `{"text"}`, `{"ask_user", ...}`,
//! `{"error"}` with a status, or not at all for a while.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{HttpResponse, web};

use super::background_server::serve_in_background;
use serde_json::{Value, json};

/// How the plugin answers one call.
#[derive(Debug, Clone)]
pub enum PluginStep {
    Text(String),
    AskUser {
        missing: Vec<String>,
        text: String,
    },
    Error {
        status: u16,
        message: String,
    },
    /// Wait, then answer as the inner step.
    Delay(Duration, Box<PluginStep>),
}

#[derive(Default)]
struct Shared {
    steps: Mutex<VecDeque<PluginStep>>,
    calls: Mutex<Vec<Value>>,
}

pub struct PluginServer {
    shared: Arc<Shared>,
    port: u16,
    handle: ServerHandle,
}

async fn run(shared: web::Data<Shared>, body: web::Json<Value>) -> HttpResponse {
    shared.calls.lock().unwrap().push(body.into_inner());
    let step = shared.steps.lock().unwrap().pop_front();
    let mut step = step.unwrap_or_else(|| PluginStep::Text("done".into()));
    loop {
        match step {
            PluginStep::Delay(wait, inner) => {
                tokio::time::sleep(wait).await;
                step = *inner;
            }
            PluginStep::Text(text) => return HttpResponse::Ok().json(json!({ "text": text })),
            PluginStep::AskUser { missing, text } => {
                return HttpResponse::Ok()
                    .json(json!({"ask_user": true, "missing_parameters": missing, "text": text}));
            }
            PluginStep::Error { status, message } => {
                return HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap())
                    .json(json!({ "error": message }));
            }
        }
    }
}

impl PluginServer {
    pub fn start() -> PluginServer {
        let shared = Arc::new(Shared::default());
        let data = web::Data::from(Arc::clone(&shared));
        let server = serve_in_background("plugin-server", 1, move |routes| {
            routes
                .app_data(data.clone())
                .route("/run", web::post().to(run));
        });
        PluginServer {
            shared,
            port: server.port,
            handle: server.handle,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/run", self.port)
    }

    pub fn push(&self, step: PluginStep) {
        self.shared.steps.lock().unwrap().push_back(step);
    }

    /// Every call received, in order.
    pub fn calls(&self) -> Vec<Value> {
        self.shared.calls.lock().unwrap().clone()
    }
}

impl Drop for PluginServer {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}
