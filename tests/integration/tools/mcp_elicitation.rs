//! Elicitation with the real server-everything over stdio: a server's question answered by
//! a scripted person reaches the server accepted, declined or cancelled; a person answering
//! slowly does not time the call out; and a question asked while other members' calls run
//! names nobody.

use std::time::Duration;

use hearth::tools::{ElicitationAnswer, McpOptions, McpServers};
use serde_json::json;

use crate::support::mcp::{
    ELICITATION_TOOL, ScriptedElicitation, assert_unavailable, call, call_as,
    everything_stdio_or_skip, member, servers, start_one, with_handler,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_accepted_reaches_the_server() {
    let Some(everything) = everything_stdio_or_skip("elicitation_accepted_reaches_the_server")
    else {
        return;
    };
    let handler = ScriptedElicitation::answering(ElicitationAnswer::Accept(json!({
        "name": "Alice Example",
        "check": true,
        "integer": 7
    })));
    let mcp = start_one("everything", everything, with_handler(handler.clone())).await;
    let provider = mcp.provider(&["everything".to_owned()]);

    let answer = call(&provider, ELICITATION_TOOL, json!({})).await;
    assert!(
        answer.contains("User provided the requested information"),
        "{answer:?}"
    );
    assert!(answer.contains("- Name: Alice Example"), "{answer:?}");
    assert!(answer.contains("- Agreed to terms: true"), "{answer:?}");
    assert!(answer.contains("- Favorite Integer: 7"), "{answer:?}");

    let asked = handler.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let question = &asked[0];
    assert_eq!(question.server_id, "everything");
    assert_eq!(
        question.message,
        "Please provide inputs for the following fields:"
    );
    assert_eq!(question.requested_schema["type"], "object");
    assert_eq!(
        question.requested_schema["properties"]["name"]["type"],
        "string"
    );
    assert_eq!(question.requested_schema["required"], json!(["name"]));
    // Choices with titles survive the trip, for a person to pick from.
    let hero = &question.requested_schema["properties"]["titledSingleSelectEnum"];
    assert_eq!(
        hero["oneOf"][1],
        json!({"const": "hero-2", "title": "Green Lantern"})
    );
    assert_eq!(question.context, Some(member("alice")));
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn elicitation_declined_or_cancelled_reaches_the_server() {
    let Some(everything) =
        everything_stdio_or_skip("elicitation_declined_or_cancelled_reaches_the_server")
    else {
        return;
    };
    let configs = servers(&[("everything", everything)]);
    for (answer, expected) in [
        (
            ElicitationAnswer::Decline,
            "User declined to provide the requested information",
        ),
        (
            ElicitationAnswer::Cancel,
            "User cancelled the elicitation dialog",
        ),
    ] {
        let handler = ScriptedElicitation::answering(answer);
        let mcp = McpServers::start(&configs, with_handler(handler.clone())).await;
        let provider = mcp.provider(&["everything".to_owned()]);
        let text = call(&provider, ELICITATION_TOOL, json!({})).await;
        assert!(text.contains(expected), "{text:?}");
        assert!(!text.contains("User provided"), "{text:?}");
        assert_eq!(handler.requests().len(), 1);
        mcp.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_answering_slowly_does_not_time_the_call_out() {
    let Some(everything) =
        everything_stdio_or_skip("a_person_answering_slowly_does_not_time_the_call_out")
    else {
        return;
    };
    // The timeout leaves the server time to ask even on a machine busy with the whole
    // suite (4 s was once not enough); the person then takes longer than it to answer.
    let handler = ScriptedElicitation::answering_after(
        ElicitationAnswer::Accept(json!({"name": "Slow Sam"})),
        Duration::from_secs(15),
    );
    let options = McpOptions {
        call_timeout: Duration::from_secs(10),
        ..with_handler(handler)
    };
    let mcp = start_one("everything", everything, options).await;
    let provider = mcp.provider(&["everything".to_owned()]);
    let text = call(&provider, ELICITATION_TOOL, json!({})).await;
    assert!(text.contains("- Name: Slow Sam"), "{text:?}");

    // Without a person in the loop the same timeout does cut a slow tool off.
    let slow = call(
        &provider,
        "everything__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    )
    .await;
    assert_unavailable(&slow, "everything");
    assert!(slow.contains("no answer within 10s"), "{slow:?}");
    // The abandoned call does not hold the server up.
    assert_eq!(
        call(&provider, "everything__echo", json!({"message": "next"})).await,
        "Echo: next"
    );
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_during_other_members_calls_names_nobody_over_stdio() {
    let Some(everything) =
        everything_stdio_or_skip("a_question_during_other_members_calls_names_nobody_over_stdio")
    else {
        return;
    };
    let handler = ScriptedElicitation::answering(ElicitationAnswer::Decline);
    let mcp = start_one("everything", everything, with_handler(handler.clone())).await;
    let provider = mcp.provider(&["everything".to_owned()]);
    let (long, question) = tokio::join!(
        call_as(
            &provider,
            "alice",
            "everything__trigger-long-running-operation",
            json!({"duration": 3, "steps": 1}),
        ),
        async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            call_as(&provider, "bob", ELICITATION_TOOL, json!({})).await
        }
    );
    assert!(
        long.starts_with("Long running operation completed"),
        "{long:?}"
    );
    assert!(question.contains("User declined"), "{question:?}");
    // stdio does not say which call a question belongs to, and two members had calls open.
    assert_eq!(handler.requests()[0].context, None);
    mcp.shutdown().await;
}
