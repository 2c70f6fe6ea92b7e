//! MCP tools in a profile's stack, end to end: the model calls a real MCP server's tool
//! through hearth's pipeline, and a profile without the server never sees its tools.

use serde_json::json;

use crate::support::hearth_app::TestApp;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::mcp::everything_stdio_or_skip;

#[actix::test]
async fn a_profile_calls_its_mcp_servers_tools_and_others_do_not_see_them() {
    let Some(everything) = everything_stdio_or_skip("mcp_pipeline") else {
        return;
    };
    let command = everything.command.clone().unwrap();
    let args: Vec<String> = everything.args.clone();
    let extra = format!(
        r#"  - id: toolbox
    slash_commands: ["/tools"]
    tools_config: {{ enable_mcp_server_ids: [everything] }}
mcp_servers:
  everything: {{ command: {command:?}, args: {args:?} }}
"#
    );
    let llm = ScriptedLlmServer::start();
    let app = TestApp::start_with_profiles(&llm.base_url(), &extra, &[]).await;
    assert!(app.running.mcp.states()["everything"].connected);
    llm.push_many([
        Step::ToolCalls(vec![(
            "everything__echo".into(),
            json!({"message": "hi from mcp"}),
        )]),
        Step::Reply("The server echoed.".into()),
    ]);
    assert_eq!(
        app.ask("alice", "/tools echo something").await,
        "The server echoed."
    );
    let requests = llm.requests();
    let offered: Vec<String> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        offered.contains(&"everything__echo".to_string()),
        "{offered:?}"
    );
    let tool_result = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(tool_result.contains("hi from mcp"), "{tool_result}");

    // The default profile does not enable the server: none of its tools are offered.
    app.ask("alice", "hello").await;
    let tools = &llm.requests()[2].body["tools"];
    assert!(!tools.to_string().contains("everything__"), "{tools}");
    app.stop().await;
}
