//! A question the real MCP server-everything asks (its elicitation tool) answered through
//! the chat page's form, over HTTP against the real binary: the form's fields reach the
//! tool as the member typed them; another member's post, a post without the CSRF token and
//! a second post of the same answer answer nothing.

use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::mcp::{ELICITATION_TOOL, app_with_everything};
use crate::support::web_page::Member;

const ASKED: &str = "Please provide inputs for the following fields:";

/// A form nonce as the page makes them: 64 hex digits, one per form shown.
fn nonce(n: u32) -> String {
    format!("{n:064x}")
}

/// What a browser posts for server-everything's form, filled in: the typed values and the
/// defaults the form was shown with.
fn filled(nonce: &str) -> Vec<(&'static str, String)> {
    vec![
        ("nonce", nonce.to_owned()),
        ("action", "accept".to_owned()),
        ("f.name", "Alice Example".to_owned()),
        ("f.check", "yes".to_owned()),
        ("f.firstLine", "It was a dark and stormy night.".to_owned()),
        ("f.email", String::new()),
        ("f.integer", "7".to_owned()),
        ("f.number", "3.14".to_owned()),
        ("f.titledSingleSelectEnum", "hero-2".to_owned()),
    ]
}

fn borrowed<'a>(form: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    form.iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect()
}

/// Alice asks the `/tools` profile to sign her up; server-everything asks her its question.
async fn asked(app: &Hearth, llm: &ScriptedLlmServer, alice: &Member) {
    llm.push(Step::ToolCalls(vec![(ELICITATION_TOOL.into(), json!({}))]));
    let sent = alice
        .post(
            "/chat",
            &[("nonce", &nonce(1)), ("text", "/tools sign me up")],
        )
        .await;
    assert_eq!((sent.status, sent.location.as_str()), (303, "/chat"));
    let page = alice.page("/chat").await;
    assert!(page.contains(ASKED), "{page}");
    assert!(page.contains("action=\"/chat/answer\""), "{page}");
    assert!(page.contains("name=\"f.name\""), "{page}");
    assert_eq!(llm.requests().len(), 1, "{:?}", app.base_url);
}

#[actix::test]
async fn a_servers_question_is_answered_once_through_the_form_by_the_member_asked() {
    let llm = ScriptedLlmServer::start();
    let Some(app) = app_with_everything("web_question_form", &llm).await else {
        return;
    };
    let alice = Member::sign_in(&app, "alice").await;
    let bob = Member::sign_in(&app, "bob").await;
    asked(&app, &llm, &alice).await;
    let answer = filled(&nonce(2));

    // Bob posts the same form with his own session: he is asked nothing, so nothing is
    // answered, and he never saw alice's question.
    let intruded = bob.post("/chat/answer", &borrowed(&answer)).await;
    assert_eq!(intruded.status, 409, "{}", intruded.body);
    assert!(
        intruded.body.contains("no longer open"),
        "{}",
        intruded.body
    );
    assert!(!bob.page("/chat").await.contains(ASKED));

    // Without the CSRF token (and with another session's) the form is refused.
    let forged = alice
        .post_without_token("/chat/answer", &borrowed(&answer))
        .await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    let mut wrong = borrowed(&answer);
    wrong.push(("csrf", &bob.csrf));
    let forged = alice.post_without_token("/chat/answer", &wrong).await;
    assert_eq!(forged.status, 403, "{}", forged.body);
    assert_eq!(llm.requests().len(), 1, "nothing reached the model");
    assert!(alice.page("/chat").await.contains(ASKED), "still open");

    // Alice's answer reaches the tool as she typed it; her turn goes on with it.
    llm.push(Step::Reply("You're signed up.".into()));
    let answered = alice.post("/chat/answer", &borrowed(&answer)).await;
    assert_eq!(
        (answered.status, answered.location.as_str()),
        (303, "/chat"),
        "{}",
        answered.body
    );
    let seen = llm.tool_result_seen(1);
    assert!(
        seen.contains("User provided the requested information"),
        "{seen}"
    );
    assert!(seen.contains("- Name: Alice Example"), "{seen}");
    assert!(seen.contains("- Agreed to terms: true"), "{seen}");
    assert!(seen.contains("- Favorite Integer: 7"), "{seen}");
    assert!(seen.contains("hero-2"), "{seen}");
    let page = alice.page("/chat").await;
    assert!(page.contains("You&#39;re signed up.") || page.contains("You're signed up."));
    assert!(!page.contains(ASKED), "the question is gone: {page}");

    // The same form posted again (a double click, a reload) answers nothing more.
    for again in [filled(&nonce(2)), filled(&nonce(3))] {
        let twice = alice.post("/chat/answer", &borrowed(&again)).await;
        assert_eq!(twice.status, 409, "{}", twice.body);
        assert!(twice.body.contains("no longer open"), "{}", twice.body);
    }
    assert_eq!(
        llm.requests().len(),
        2,
        "the tool ran once, the model twice"
    );
    app.stop().await;
}

#[actix::test]
async fn a_declined_question_tells_the_tool_so_and_a_bad_value_names_its_field() {
    let llm = ScriptedLlmServer::start();
    let Some(app) = app_with_everything("web_question_declined", &llm).await else {
        return;
    };
    let alice = Member::sign_in(&app, "alice").await;
    asked(&app, &llm, &alice).await;

    // A value that could smuggle another line in is refused, naming its field.
    let mut smuggled = filled(&nonce(2));
    smuggled[2].1 = "Alice\ninteger: 99".to_owned();
    let refused = alice.post("/chat/answer", &borrowed(&smuggled)).await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("takes one line"), "{}", refused.body);
    assert_eq!(llm.requests().len(), 1);

    llm.push(Step::Reply("Maybe later then.".into()));
    let declined = alice
        .post(
            "/chat/answer",
            &[("nonce", &nonce(3)), ("action", "decline")],
        )
        .await;
    assert_eq!(declined.status, 303, "{}", declined.body);
    let seen = llm.tool_result_seen(1);
    assert!(
        seen.contains("User declined to provide the requested information"),
        "{seen}"
    );
    assert!(!seen.contains("Alice"), "{seen}");
    app.stop().await;
}
