//! What hearth did, for parents (a child gets `404`, as on the family page): the intents
//! engine's decisions in a conversation a parent picks among the family's (a child's
//! included, since parents supervise), and the family scripts run lately. A conversation
//! that is a known member's own (their web or API sessions, the terminal, their private
//! Telegram chat) is named by the member's display name and its channel, its key kept as
//! a small secondary text; any other is named by its key.
//!
//! A decision is shown by what was decided, never by what was said: the intent, its
//! confidence, the profile, the policy's decision, the outcome and the time, read from the
//! recorded stages (`UsageReport::stages_of`); the parameters' values and the messages stay
//! in their member's conversation (one member never reads another's). A script run shows the
//! values its member approved and how it ended, with every url's password masked
//! (`redaction::redact_urls_in`).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::family::parent;
use super::layout::{self, Tab};
use super::session::SignedIn;
use crate::http::HttpState;
use crate::ids::ConversationKey;
use crate::local_time::phrasing;
use crate::ports::{ScriptRun, StageEvent};
use crate::redaction::redact_urls_in;

/// How many conversations, stages and runs the page reads.
const CONVERSATIONS: usize = 30;
const STAGES: usize = 400;
const RUNS: usize = 30;

#[derive(Debug, Deserialize)]
pub struct ActivityQuery {
    conversation: Option<String>,
}

/// One interaction (one message) as the intents engine decided it.
#[derive(Debug, Default)]
struct Decision {
    at_ms: i64,
    profile: String,
    intent: Option<String>,
    confidence: Option<f64>,
    decision: Option<String>,
    outcome: Option<String>,
}

fn text(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string)
}

/// The stages grouped by interaction, in order, each read into what was decided.
fn decisions(stages: &[StageEvent]) -> Vec<Decision> {
    let mut decisions: Vec<(String, Decision)> = Vec::new();
    for event in stages {
        let record = &event.payload;
        let interaction = text(&record["interaction_id"]).unwrap_or_default();
        let at = match decisions.iter().position(|(id, _)| *id == interaction) {
            Some(at) => at,
            None => {
                decisions.push((
                    interaction.clone(),
                    Decision {
                        at_ms: event.at_ms,
                        profile: text(&record["profile_id"]).unwrap_or_default(),
                        ..Decision::default()
                    },
                ));
                decisions.len() - 1
            }
        };
        let decision = &mut decisions[at].1;
        let payload = &record["payload"];
        let skipped = payload["skipped"].as_bool() == Some(true);
        match event.stage.as_str() {
            "intent_classified" => {
                decision.intent = text(&payload["intent_id"]);
                decision.confidence = payload["confidence"].as_f64();
                if text(&payload["error"]).is_some() {
                    decision.outcome = Some("not classified".to_string());
                }
            }
            "plan_type" if !skipped => {
                decision.decision = text(&payload["type"]).map(|kind| kind.replace('_', " "));
            }
            "policy_check" if !skipped => {
                decision.decision = text(&payload["decision"]);
            }
            "tool_execute" if skipped => {
                decision
                    .outcome
                    .get_or_insert_with(|| text(&payload["reason"]).unwrap_or_default());
            }
            "tool_execute" => {
                let tool = text(&payload["tool_name"]).unwrap_or_default();
                // A tool's error can quote what the member asked for (an order number):
                // only whether it worked is shown.
                decision.outcome = Some(match &payload["success"] {
                    Value::Bool(true) => format!("{tool}: done"),
                    _ => format!("{tool}: failed"),
                });
            }
            "response_generated" if payload["needs_input"].as_bool() == Some(true) => {
                decision
                    .outcome
                    .get_or_insert_with(|| "asked the member".to_string());
            }
            _ => {}
        }
    }
    decisions
        .into_iter()
        .map(|(_, decision)| decision)
        .collect()
}

/// The display name of the member whose own conversation `key` is, and its channel as
/// the page says it; `None` for a conversation no single known member owns (a group, a
/// Matrix room, a stranger's).
fn owner(state: &HttpState, key: &ConversationKey) -> Option<(String, &'static str)> {
    let root = key.root();
    let id = root.conversation_id().split('/').next()?;
    let (member, channel) = match root.channel() {
        "http" => (state.family.member(id)?, "web page or API"),
        "console" => (state.family.member(id)?, "terminal"),
        "telegram" => {
            // A private Telegram chat's id is its member's user id; a group's is negative.
            let chat: i64 = id.parse().ok()?;
            let member = state
                .family
                .members()
                .into_iter()
                .find(|member| member.telegram_user_id == Some(chat))?;
            (member, "Telegram")
        }
        _ => return None,
    };
    Some((state.family.display_name(&member.id), channel))
}

/// How the page names a conversation: whose and where, or its key.
fn conversation_name(state: &HttpState, key: &ConversationKey) -> String {
    match owner(state, key) {
        Some((name, channel)) if key.is_delegated() => {
            format!("{name} ({channel}, handed to another profile)")
        }
        Some((name, channel)) => format!("{name} ({channel})"),
        None => key.as_str().to_owned(),
    }
}

fn when(signed_in: &SignedIn, ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(String::new, |at| {
        phrasing::say_instant(at, signed_in.zone(), crate::clock::now())
    })
}

/// The decisions of `conversation`, newest first.
fn decisions_table(
    state: &HttpState,
    signed_in: &SignedIn,
    conversation: &ConversationKey,
    decisions: &[Decision],
) -> Markup {
    let name = conversation_name(state, conversation);
    let key = (name != conversation.as_str()).then_some(conversation.as_str());
    html! {
        @if decisions.is_empty() {
            p.hint { "Nothing recorded in " (name) " lately." @if let Some(key) = key { " " small.key { (key) } } }
        } @else {
            table.members.decisions {
                caption {
                    "What the intents engine decided in " (name) ", newest first"
                    @if let Some(key) = key { " " small.key { (key) } }
                }
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "Profile" } th scope="col" { "Intent" }
                    th scope="col" { "Confidence" } th scope="col" { "Decision" } th scope="col" { "Outcome" }
                } }
                tbody {
                    @for decision in decisions.iter().rev() {
                        tr {
                            td { (when(signed_in, decision.at_ms)) }
                            td { (decision.profile) }
                            td { (decision.intent.as_deref().unwrap_or("none")) }
                            td { @if let Some(confidence) = decision.confidence { (format!("{confidence:.2}")) } @else { "–" } }
                            td { (decision.decision.as_deref().unwrap_or("–")) }
                            td { (decision.outcome.as_deref().unwrap_or("answered")) }
                        }
                    }
                }
            }
        }
    }
}

/// A run's values as `name: value` pairs, urls' passwords masked.
fn values_text(run: &ScriptRun) -> String {
    let Some(values) = run.values.as_object() else {
        return String::new();
    };
    values
        .iter()
        .map(|(name, value)| {
            let shown = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            format!("{name}: {}", redact_urls_in(&shown))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn runs_table(state: &HttpState, signed_in: &SignedIn, runs: &[ScriptRun]) -> Markup {
    html! {
        @if runs.is_empty() {
            p.hint { "No family script has run lately." }
        } @else {
            table.members.script-runs {
                caption { "Family script runs, newest first" }
                thead { tr {
                    th scope="col" { "When" } th scope="col" { "Script" } th scope="col" { "Run by" }
                    th scope="col" { "Values" } th scope="col" { "Outcome" }
                } }
                tbody {
                    @for run in runs {
                        tr {
                            td { (when(signed_in, run.at_ms)) }
                            td { (run.script) }
                            td { (state.family.display_name(&run.member_id)) }
                            td { (values_text(run)) }
                            td {
                                (run.outcome.as_str())
                                @if let Some(error) = &run.error { ": " (redact_urls_in(error)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `GET /family/activity[?conversation=<key>]`.
pub async fn page(
    request: HttpRequest,
    state: web::Data<HttpState>,
    query: web::Query<ActivityQuery>,
) -> HttpResponse {
    let signed_in = match parent(&state, &request).await {
        Ok((signed_in, _)) => signed_in,
        Err(answer) => return answer,
    };
    let unreadable = |error: crate::ports::StorageError| {
        tracing::error!(%error, "family activity not read");
        layout::problem(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(&signed_in),
            "hearth cannot read what it did just now; try again in a moment.",
        )
    };
    let conversations = match state.usage.staged_conversations(CONVERSATIONS).await {
        Ok(conversations) => conversations,
        Err(error) => return unreadable(error),
    };
    let picked = match query.conversation.as_deref().filter(|key| !key.is_empty()) {
        None => None,
        Some(key) => match key.parse::<ConversationKey>() {
            Ok(key) => Some(key),
            Err(_) => return layout::not_found(Some(&signed_in)),
        },
    };
    let decisions = match &picked {
        Some(key) => match state.usage.stages_of(key, STAGES).await {
            Ok(stages) => Some(decisions(&stages)),
            Err(error) => return unreadable(error),
        },
        None => None,
    };
    let runs = match state.script_workflows.recent_runs(RUNS).await {
        Ok(runs) => runs,
        Err(error) => return unreadable(error),
    };
    layout::page(
        "What hearth did",
        Some(&signed_in),
        Tab::Family,
        html! {
            p { a href="/family" { "The family" } }
            h1 { "What hearth did" }
            h2 { "Intent decisions" }
            @if conversations.is_empty() {
                p.hint { "No conversation went through the intents engine lately." }
            } @else {
                form.search method="get" action="/family/activity" {
                    label for="activity-conversation" { "Conversation" }
                    select id="activity-conversation" name="conversation" {
                        @for conversation in &conversations {
                            @let key = conversation.conversation_key.as_str();
                            @let name = conversation_name(&state, &conversation.conversation_key);
                            option value=(key) selected[picked.as_ref().is_some_and(|picked| picked.as_str() == key)] {
                                (name) ", last " (when(&signed_in, conversation.last_at_ms))
                                @if name != key { " · " (key) }
                            }
                        }
                    }
                    button type="submit" { "Show" }
                }
            }
            @if let (Some(picked), Some(decisions)) = (&picked, &decisions) {
                (decisions_table(&state, &signed_in, picked, decisions))
            }
            h2 { "Family scripts" }
            (runs_table(&state, &signed_in, &runs))
        },
    )
}
