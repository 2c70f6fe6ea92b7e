//! The chat page's streamed answer (`POST /chat` with `Accept: text/event-stream`) over
//! HTTP against the real binary: a stream that breaks part way and is retried starts the
//! preview over (the partial text is void, the reply is the retried one alone); turns that
//! do not stream (one resumed after an approval, one on an intents profile) still end in
//! exactly one `done`, with the whole reply in the log and nothing of it lost or doubled.

use serde_json::{Value, json};

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{Wire, classified, example_intents};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::web_page::Member;

type Events = Vec<(String, Value)>;

fn nonce(n: u32) -> String {
    format!("{n:064x}")
}

/// The names of `events`, in order.
fn names(events: &Events) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

/// The text of the `delta`s after the last `restart`: what the preview shows at the end.
fn preview(events: &Events) -> String {
    let start = events
        .iter()
        .rposition(|(name, _)| name == "restart")
        .map_or(0, |at| at + 1);
    events[start..]
        .iter()
        .filter(|(name, _)| name == "delta")
        .map(|(_, data)| data["text"].as_str().unwrap())
        .collect()
}

/// The one `done` event's kind; a stream has exactly one, and it is the last.
fn done_kind(events: &Events) -> String {
    let done: Vec<&Value> = events
        .iter()
        .filter(|(name, _)| name == "done")
        .map(|(_, data)| data)
        .collect();
    assert_eq!(done.len(), 1, "{events:?}");
    assert_eq!(events.last().unwrap().0, "done", "{events:?}");
    done[0]["kind"].as_str().unwrap().to_string()
}

async fn say(alice: &Member, n: u32, text: &str) -> Events {
    let events = alice
        .post_for_events("/chat", &[("nonce", &nonce(n)), ("text", text)])
        .await;
    assert_eq!(events[0].0, "accepted", "{events:?}");
    events
}

#[actix::test]
async fn a_stream_broken_part_way_and_retried_starts_the_preview_over() {
    let llm = ScriptedLlmServer::start();
    let app = Hearth::start(&llm.base_url(), &[]).await;
    let alice = Member::sign_in(&app, "alice").await;
    llm.push_many([
        Step::BrokenStream("one two three four five six".into()),
        Step::Reply("seven eight nine".into()),
    ]);
    let events = say(&alice, 1, "count for me").await;
    assert_eq!(done_kind(&events), "answered");
    // Each attempt starts with a restart; the first one's text was heard, then voided.
    let restarts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, (name, _))| name == "restart")
        .map(|(at, _)| at)
        .collect();
    assert_eq!(restarts.len(), 2, "{:?}", names(&events));
    let partial: String = events[restarts[0]..restarts[1]]
        .iter()
        .filter(|(name, _)| name == "delta")
        .map(|(_, data)| data["text"].as_str().unwrap())
        .collect();
    assert!(
        !partial.is_empty() && "one two three four five six".starts_with(&partial),
        "the broken attempt's text: {partial:?}"
    );
    assert_ne!(partial, "one two three four five six", "cut part way");
    assert_eq!(preview(&events), "seven eight nine");

    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "the broker retried once");
    assert!(
        requests
            .iter()
            .all(|request| request.body["stream"] == true)
    );
    let page = alice.page("/chat").await;
    assert!(page.contains("seven eight nine"), "{page}");
    assert!(!page.contains("one two"), "never glued: {page}");
    app.stop().await;
}

#[actix::test]
async fn a_turn_resumed_after_an_approval_answers_whole_and_the_next_streams_alone() {
    let llm = ScriptedLlmServer::start();
    let confirm = (
        "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__CONFIRM_TOOLS",
        "profile_update",
    );
    let app = Hearth::start(&llm.base_url(), &[confirm]).await;
    let alice = Member::sign_in(&app, "alice").await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            json!({"key": "address", "value": "2 Oak Road"}),
        )]),
        Step::Reply("Saved your address.".into()),
    ]);
    let events = say(&alice, 1, "I moved to 2 Oak Road").await;
    assert_eq!(done_kind(&events), "confirmation");
    assert_eq!(preview(&events), "", "a tool call says no text");

    let page = alice.page("/chat").await;
    let marker = "action=\"/waiting/";
    let at = page.find(marker).unwrap_or_else(|| panic!("{page}")) + marker.len();
    let confirmation = page[at..].split('"').next().unwrap().to_string();
    let approved = alice
        .post(
            &format!("/waiting/{confirmation}"),
            &[("answer", "approve"), ("back", "chat")],
        )
        .await;
    assert_eq!(approved.status, 303, "{}", approved.body);
    assert_eq!(llm.last_tool_result(), "saved address = 2 Oak Road");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["stream"], true, "the page's own turn");
    assert_eq!(
        requests[1].body.get("stream"),
        None,
        "the resumed turn has nobody listening: it answers whole"
    );
    let page = alice.page("/chat").await;
    assert_eq!(page.matches("Saved your address.").count(), 1, "{page}");

    // The next message's stream is its own: nothing of the resumed turn in it.
    llm.push(Step::Reply("Anything else?".into()));
    let events = say(&alice, 2, "thanks").await;
    assert_eq!(done_kind(&events), "answered");
    assert_eq!(preview(&events), "Anything else?");
    assert_eq!(
        names(&events).iter().filter(|n| **n == "restart").count(),
        1
    );
    app.stop().await;
}

#[actix::test]
async fn a_turn_on_an_intents_profile_answers_whole_over_the_stream() {
    let llm = ScriptedLlmServer::start();
    let app = crate::support::intents_profile::start(&llm, &example_intents(), Wire::OpenAi).await;
    let alice = Member::sign_in(&app, "alice").await;
    llm.push_many([
        classified(Some("order_status"), json!({}), 0.9),
        Step::Reply("Which order do you mean?".into()),
    ]);
    let events = say(&alice, 1, "/orders check my order").await;
    assert_eq!(done_kind(&events), "answered", "{events:?}");
    // The engine's calls (the classifier's JSON among them) are never shown as a preview.
    let deltas: String = events
        .iter()
        .filter(|(name, _)| name == "delta")
        .map(|(_, data)| data["text"].as_str().unwrap())
        .collect();
    assert!(!deltas.contains("intent_id"), "{deltas:?}");
    assert!(
        deltas.is_empty() || deltas == "Which order do you mean?",
        "{deltas:?}"
    );
    assert_eq!(llm.requests().len(), 2);
    let page = alice.page("/chat").await;
    assert_eq!(
        page.matches("Which order do you mean?").count(),
        1,
        "{page}"
    );
    app.stop().await;
}
