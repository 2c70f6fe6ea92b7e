//! The plugin API (seed 001, DESIGN.md "HTTP API"):
//!
//! - `POST /api/plugins/register` (admin key): an external plugin registers its manifest (the schema
//!   of `plugin.yaml` as JSON, reached over `http`); kept in the database, so it survives a
//!   restart. Default values never travel here: they stay in the plugin's `config.yml`.
//! - `POST /api/plugins/llm/generate` `{messages, llm_name?}` (plugin key) → `{text}` or `{error}`:
//!   plugins use hearth's models through the `LlmBroker`, and so through the same
//!   semaphores as the family's messages.

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use serde_json::json;

use super::HttpState;
use super::auth::{Scope, refuse_outside_scope};
use crate::llm::{CallOrigin, ChatMessage, ChatRequest, GenerateChat, Role};
use crate::plugins::{PluginKind, PluginManifest, RegisterError, Registration};
use crate::ports::now_ms;

fn refuse(status: actix_web::http::StatusCode, message: String) -> HttpResponse {
    HttpResponse::build(status).json(json!({ "error": message }))
}

pub async fn post_register(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Json<serde_json::Value>,
) -> HttpResponse {
    use actix_web::http::StatusCode;
    if let Some(refused) = refuse_outside_scope(state.keys.as_ref(), &request, Scope::Admin) {
        return refused;
    }
    let manifest = match PluginManifest::from_json_value(body.into_inner()) {
        Ok(manifest) => manifest,
        Err(error) => return refuse(StatusCode::BAD_REQUEST, error.to_string()),
    };
    if !matches!(manifest.kind, PluginKind::Http { .. }) {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "plugin {:?}: registered plugins are reached over http (type: http with a url); \
                 inline and command plugins live in the plugins folder",
                manifest.id
            ),
        );
    }
    let id = manifest.id.clone();
    let stored = manifest.to_json_value();
    let registered = match state.plugins.catalog.register(manifest) {
        Ok(registered) => registered,
        Err(
            error @ (RegisterError::TakenByFolderPlugin { .. } | RegisterError::TooMany { .. }),
        ) => {
            return refuse(StatusCode::CONFLICT, error.to_string());
        }
        Err(error) => return refuse(StatusCode::BAD_REQUEST, error.to_string()),
    };
    if let Err(error) = state
        .registered_plugins
        .upsert(&id, &stored, now_ms())
        .await
    {
        tracing::error!(plugin = %id, %error, "registered plugin not stored");
        return refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "the registration could not be stored, try again".into(),
        );
    }
    tracing::info!(plugin = %id, "plugin registered");
    match registered {
        Registration::Added => HttpResponse::Created().json(json!({"id": id, "status": "added"})),
        Registration::Replaced => HttpResponse::Ok().json(json!({"id": id, "status": "replaced"})),
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateBody {
    messages: Vec<GenerateMessage>,
    llm_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateMessage {
    role: String,
    content: String,
}

pub async fn post_generate(
    request: HttpRequest,
    state: web::Data<HttpState>,
    body: web::Json<GenerateBody>,
) -> HttpResponse {
    use actix_web::http::StatusCode;
    if let Some(refused) = refuse_outside_scope(state.keys.as_ref(), &request, Scope::Plugin) {
        return refused;
    }
    let body = body.into_inner();
    if body.messages.is_empty() {
        return refuse(StatusCode::BAD_REQUEST, "field `messages` is empty".into());
    }
    let mut messages = Vec::with_capacity(body.messages.len());
    for (index, message) in body.messages.into_iter().enumerate() {
        let role = match message.role.as_str() {
            "system" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "messages[{index}].role: {other:?} is not one of system, user, assistant"
                    ),
                );
            }
        };
        messages.push(ChatMessage {
            role,
            ..ChatMessage::user(message.content)
        });
    }
    let llm_name = body.llm_name.unwrap_or_else(|| state.default_llm.clone());
    if !state.llm_names.contains(&llm_name) {
        return refuse(
            StatusCode::BAD_REQUEST,
            format!(
                "llm_name: there is no model {llm_name:?}; models: {}",
                state.llm_names.join(", ")
            ),
        );
    }
    let generated = state
        .broker
        .send(GenerateChat {
            llm_name,
            fallback_llm_name: None,
            request: ChatRequest {
                messages,
                ..ChatRequest::default()
            },
            origin: CallOrigin::default(),
            listener: None,
        })
        .await;
    match generated {
        Ok(Ok(response)) => HttpResponse::Ok().json(json!({"text": response.content})),
        Ok(Err(error)) => refuse(StatusCode::BAD_GATEWAY, error.to_string()),
        Err(_) => refuse(
            StatusCode::SERVICE_UNAVAILABLE,
            "hearth is shutting down".into(),
        ),
    }
}
