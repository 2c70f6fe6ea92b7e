//! The MCP client against the real reference servers (server-everything, server-filesystem)
//! over stdio and streamable HTTP: namespaced tools, real results, errors the model can read,
//! list_changed, crash and restart, servers that cannot start, no orphaned processes, a
//! question over streamable HTTP finding its caller, and a secret named by `env_from_env`
//! reaching the server it is meant for. Questions over stdio: `mcp_elicitation.rs`.

use std::time::Duration;

use hearth::config::{MAX_TOOL_NAME_LEN, tool_server_id};
use hearth::tools::{ElicitationAnswer, McpOptions, McpServers, ToolError};
use serde_json::json;

use crate::support::mcp::{
    ELICITATION_TOOL, EVERYTHING, EverythingHttpServer, ScriptedElicitation, assert_unavailable,
    call, call_as, eventually, everything_stdio_or_skip, filesystem_or_skip, installed_or_skip,
    kill_hard, load_config, member, process_alive, servers, start_one, state, temp_folder,
    with_handler,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_tools_are_namespaced_and_echo_answers() {
    let Some(everything) =
        everything_stdio_or_skip("everything_tools_are_namespaced_and_echo_answers")
    else {
        return;
    };
    let mcp = start_one("everything", everything, McpOptions::default()).await;
    let state = state(&mcp, "everything");
    assert!(state.connected, "{state:?}");
    assert_eq!(state.detail, "connected");
    assert!(state.pid.is_some());

    let provider = mcp.provider(&["everything".to_owned()]);
    let tools = provider.tools().await;
    assert_eq!(tools.len(), state.tools);
    for tool in &tools {
        assert!(tool.name.starts_with("everything__"), "{}", tool.name);
        assert!(tool.name.len() <= MAX_TOOL_NAME_LEN, "{}", tool.name);
        assert!(
            tool.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{}",
            tool.name
        );
        assert_eq!(tool_server_id(&tool.name), Some("everything"));
    }
    let echo = tools
        .iter()
        .find(|tool| tool.name == "everything__echo")
        .expect("everything__echo is offered");
    assert_eq!(echo.description, "Echoes back the input string");
    assert_eq!(echo.parameters["properties"]["message"]["type"], "string");
    // Without an elicitation handler hearth does not claim the capability, and the server
    // then does not offer its elicitation tool at all.
    assert!(!tools.iter().any(|tool| tool.name == ELICITATION_TOOL));

    let answer = call(
        &provider,
        "everything__echo",
        json!({"message": "hello from hearth"}),
    )
    .await;
    assert_eq!(answer, "Echo: hello from hearth");

    let sum = call(&provider, "everything__get-sum", json!({"a": 2, "b": 40})).await;
    assert!(sum.contains("42"), "{sum:?}");

    let image = call(&provider, "everything__get-tiny-image", json!({})).await;
    assert!(
        image.contains("[image/png, ") && image.contains(" bytes]"),
        "{image:?}"
    );

    // The server's own refusal of bad arguments reaches the model as an error it can read.
    let refused = call(&provider, "everything__echo", json!({"message": 42})).await;
    assert!(refused.starts_with("error: "), "{refused:?}");

    assert!(matches!(
        provider
            .call(ELICITATION_TOOL, &json!({}), &member("alice"))
            .await,
        Err(ToolError::UnknownTool(_))
    ));
    assert!(matches!(
        provider
            .call(
                "everything__echo",
                &json!("not an object"),
                &member("alice")
            )
            .await,
        Err(ToolError::InvalidArguments { .. })
    ));
    // A provider offers only the servers it was built for.
    let none = mcp.provider(&[]);
    assert!(none.tools().await.is_empty());
    assert!(matches!(
        none.call(
            "everything__echo",
            &json!({"message": "x"}),
            &member("alice")
        )
        .await,
        Err(ToolError::UnknownTool(_))
    ));
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_reads_inside_its_folder_and_refuses_outside() {
    let allowed = temp_folder();
    let outside = temp_folder();
    let Some(files) = filesystem_or_skip(
        "filesystem_reads_inside_its_folder_and_refuses_outside",
        allowed.path(),
    ) else {
        return;
    };
    let inside_file = allowed.path().join("shopping.txt");
    std::fs::write(&inside_file, "milk, eggs, bread").unwrap();
    let outside_file = outside.path().join("secret.txt");
    std::fs::write(&outside_file, "the safe code").unwrap();

    let mcp = start_one("files", files, McpOptions::default()).await;
    assert!(state(&mcp, "files").connected, "{:?}", state(&mcp, "files"));
    let provider = mcp.provider(&["files".to_owned()]);
    let names: Vec<String> = provider
        .tools()
        .await
        .into_iter()
        .map(|tool| tool.name)
        .collect();
    assert!(
        names.contains(&"files__read_text_file".to_owned()),
        "{names:?}"
    );

    let read = call(
        &provider,
        "files__read_text_file",
        json!({"path": inside_file}),
    )
    .await;
    assert_eq!(read, "milk, eggs, bread");

    let refused = call(
        &provider,
        "files__read_text_file",
        json!({"path": outside_file}),
    )
    .await;
    assert!(refused.starts_with("error: "), "{refused:?}");
    assert!(refused.contains("Access denied"), "{refused:?}");
    assert!(!refused.contains("the safe code"), "{refused:?}");
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_tool_list() {
    let Some(everything) = everything_stdio_or_skip("list_changed_refreshes_the_tool_list") else {
        return;
    };
    // server-everything registers its client-dependent tools (the elicitation one, with a
    // handler) when it gets `notifications/initialized`, and announces each with
    // `notifications/tools/list_changed`.
    let handler = ScriptedElicitation::answering(ElicitationAnswer::Decline);
    let mcp = start_one("everything", everything, with_handler(handler)).await;
    eventually(
        "a tool list refresh after list_changed",
        Duration::from_secs(20),
        || state(&mcp, "everything").tool_list_refreshes >= 1,
    )
    .await;
    let provider = mcp.provider(&["everything".to_owned()]);
    let tools = provider.tools().await;
    assert!(
        tools.iter().any(|tool| tool.name == ELICITATION_TOOL),
        "{tools:?}"
    );
    assert!(tools.iter().any(|tool| tool.name == "everything__echo"));
    assert_eq!(tools.len(), state(&mcp, "everything").tools);
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_server_is_unavailable_then_restarted() {
    let Some(everything) =
        everything_stdio_or_skip("a_crashed_server_is_unavailable_then_restarted")
    else {
        return;
    };
    let mcp = start_one("everything", everything, McpOptions::default()).await;
    let provider = mcp.provider(&["everything".to_owned()]);
    assert_eq!(
        call(&provider, "everything__echo", json!({"message": "before"})).await,
        "Echo: before"
    );
    let first_pid = state(&mcp, "everything")
        .pid
        .expect("a stdio server has a pid");

    kill_hard(first_pid);
    eventually("the crash noticed", Duration::from_secs(10), || {
        let state = state(&mcp, "everything");
        !state.connected && state.detail.contains("reconnecting")
    })
    .await;
    // Its tools stay offered, and calling one answers instead of failing the turn.
    assert!(
        provider
            .tools()
            .await
            .iter()
            .any(|tool| tool.name == "everything__echo")
    );
    let answer = call(&provider, "everything__echo", json!({"message": "during"})).await;
    assert_unavailable(&answer, "everything");

    eventually("the restart", Duration::from_secs(30), || {
        let state = state(&mcp, "everything");
        state.connected && state.connections == 2
    })
    .await;
    let second_pid = state(&mcp, "everything").pid.unwrap();
    assert_ne!(second_pid, first_pid);
    assert!(!process_alive(first_pid));
    assert_eq!(
        call(&provider, "everything__echo", json!({"message": "after"})).await,
        "Echo: after"
    );
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_cannot_start_blocks_nothing() {
    let Some(everything) = everything_stdio_or_skip("a_server_that_cannot_start_blocks_nothing")
    else {
        return;
    };
    let missing = "/nonexistent/hearth-test-no-such-mcp-server";
    let broken = hearth::config::McpServerConfig {
        command: Some(missing.to_owned()),
        ..Default::default()
    };
    let options = McpOptions {
        init_timeout: Duration::from_secs(600),
        ..McpOptions::default()
    };
    // The broken server's failure is known at once: start does not wait for its init timeout.
    let mcp = tokio::time::timeout(
        Duration::from_secs(120),
        McpServers::start(
            &servers(&[("broken", broken), ("everything", everything)]),
            options,
        ),
    )
    .await
    .expect("start returns without waiting out the init timeout");

    let down = state(&mcp, "broken");
    assert!(!down.connected);
    assert_eq!(down.tools, 0);
    assert!(down.detail.contains(missing), "{down:?}");
    assert!(down.detail.contains("No such file"), "{down:?}");
    assert!(state(&mcp, "everything").connected);

    let provider = mcp.provider(&["broken".to_owned(), "everything".to_owned()]);
    let answer = call(&provider, "broken__anything", json!({})).await;
    assert_unavailable(&answer, "broken");
    assert!(answer.contains(missing), "{answer:?}");
    assert_eq!(
        call(
            &provider,
            "everything__echo",
            json!({"message": "still here"})
        )
        .await,
        "Echo: still here"
    );

    // It keeps being retried in the background.
    eventually("a second attempt", Duration::from_secs(20), || {
        state(&mcp, "broken").detail.contains("attempt 2")
    })
    .await;
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_and_is_killed() {
    let pid_file = temp_folder();
    let pid_path = pid_file.path().join("pid");
    // A process that never speaks MCP; it records its pid so the test can check it is gone.
    let silent = hearth::config::McpServerConfig {
        command: Some("sh".to_owned()),
        args: vec![
            "-c".to_owned(),
            format!("echo $$ > {}; exec sleep 600", pid_path.display()),
        ],
        ..Default::default()
    };
    let options = McpOptions {
        init_timeout: Duration::from_secs(1),
        ..McpOptions::default()
    };
    let mcp = start_one("silent", silent, options).await;
    let down = state(&mcp, "silent");
    assert!(!down.connected);
    assert!(down.detail.contains("no answer to initialize"), "{down:?}");
    let pid: u32 = std::fs::read_to_string(&pid_path)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eventually("the silent child killed", Duration::from_secs(10), || {
        !process_alive(pid)
    })
    .await;
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopping_hearth_ends_the_server_processes() {
    let Some(everything) = everything_stdio_or_skip("stopping_hearth_ends_the_server_processes")
    else {
        return;
    };
    let configs = servers(&[("everything", everything)]);

    let mcp = McpServers::start(&configs, McpOptions::default()).await;
    let pid = state(&mcp, "everything").pid.unwrap();
    assert!(process_alive(pid));
    mcp.shutdown().await;
    assert!(!process_alive(pid), "shutdown left process {pid} running");
    let stopped = state(&mcp, "everything");
    assert!(
        !stopped.connected && stopped.detail.starts_with("stopped"),
        "{stopped:?}"
    );
    let answer = call(
        &mcp.provider(&["everything".to_owned()]),
        "everything__echo",
        json!({"message": "x"}),
    )
    .await;
    assert_unavailable(&answer, "everything");

    // Dropping the servers without a shutdown ends them too.
    let mcp = McpServers::start(&configs, McpOptions::default()).await;
    let pid = state(&mcp, "everything").pid.unwrap();
    drop(mcp);
    eventually(
        "the dropped server's process gone",
        Duration::from_secs(20),
        || !process_alive(pid),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_server_works_and_questions_find_their_caller() {
    let Some(server) = EverythingHttpServer::start_or_skip(
        "streamable_http_server_works_and_questions_find_their_caller",
    ) else {
        return;
    };
    let handler = ScriptedElicitation::answering(ElicitationAnswer::Accept(json!({"name": "Bob"})));
    let config = server.config(&[("x-hearth-test", "1")]);
    let mcp = start_one("web", config, with_handler(handler.clone())).await;
    let state = state(&mcp, "web");
    assert!(state.connected, "{state:?}");
    assert_eq!(state.pid, None);
    let provider = mcp.provider(&["web".to_owned()]);
    assert_eq!(
        call(&provider, "web__echo", json!({"message": "over http"})).await,
        "Echo: over http"
    );

    // Over HTTP the question arrives on the stream of the call that caused it, so it names
    // bob even while alice has a call open on the same server.
    let (long, question) = tokio::join!(
        call_as(
            &provider,
            "alice",
            "web__trigger-long-running-operation",
            json!({"duration": 3, "steps": 1}),
        ),
        async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            call_as(
                &provider,
                "bob",
                "web__trigger-elicitation-request",
                json!({}),
            )
            .await
        }
    );
    assert!(
        long.starts_with("Long running operation completed"),
        "{long:?}"
    );
    assert!(question.contains("- Name: Bob"), "{question:?}");
    assert_eq!(handler.requests()[0].context, Some(member("bob")));
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamable_http_server_that_restarts_is_reached_again() {
    let Some(mut server) = EverythingHttpServer::start_or_skip(
        "a_streamable_http_server_that_restarts_is_reached_again",
    ) else {
        return;
    };
    let mcp = McpServers::start(
        &servers(&[("web", server.config(&[]))]),
        McpOptions::default(),
    )
    .await;
    let provider = mcp.provider(&["web".to_owned()]);
    assert_eq!(
        call(&provider, "web__echo", json!({"message": "one"})).await,
        "Echo: one"
    );

    server.crash();
    let answer = call(&provider, "web__echo", json!({"message": "two"})).await;
    assert_unavailable(&answer, "web");
    // The failed call makes hearth check the connection, find it dead and start over.
    eventually(
        "the dead connection dropped",
        Duration::from_secs(20),
        || !state(&mcp, "web").connected,
    )
    .await;

    // The new server process knows nothing of the old session: hearth makes a new one.
    server.start_again();
    eventually("a new connection", Duration::from_secs(60), || {
        let state = state(&mcp, "web");
        state.connected && state.connections == 2
    })
    .await;
    assert_eq!(
        call(&provider, "web__echo", json!({"message": "three"})).await,
        "Echo: three"
    );
    mcp.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_variable_named_by_env_from_env_reaches_the_stdio_server() {
    let Some(entry) = installed_or_skip(
        "a_variable_named_by_env_from_env_reaches_the_stdio_server",
        EVERYTHING,
    ) else {
        return;
    };
    // Loaded from a real file, as at start-up: the secret is read there and nowhere else.
    let entry = serde_json::to_string(&entry.display().to_string()).unwrap();
    let loaded = load_config(
        &format!(
            "mcp_servers:\n  everything:\n    command: node\n    args: [{entry}, stdio]\n    \
             env: {{ HEARTH_TEST_PLAIN: written }}\n    \
             env_from_env: {{ HEARTH_TEST_TOKEN: HEARTH_TEST_SOURCE }}\n"
        ),
        &[("HEARTH_TEST_SOURCE", "from-hearth-env-s3cret")],
    );
    assert!(!format!("{loaded:?}").contains("s3cret"), "{loaded:?}");

    let mcp = McpServers::start(&loaded.config.mcp_servers, McpOptions::default()).await;
    let connected = state(&mcp, "everything");
    assert!(connected.connected, "{connected:?}");
    let provider = mcp.provider(&["everything".to_owned()]);
    let printed = call(&provider, "everything__get-env", json!({})).await;
    let server_env: serde_json::Value = serde_json::from_str(&printed)
        .unwrap_or_else(|error| panic!("get-env did not print json ({error}): {printed}"));
    assert_eq!(server_env["HEARTH_TEST_TOKEN"], "from-hearth-env-s3cret");
    assert_eq!(server_env["HEARTH_TEST_PLAIN"], "written");
    // The value crosses under the server's name for it; hearth's own variable does not.
    assert!(server_env.get("HEARTH_TEST_SOURCE").is_none(), "{printed}");
    mcp.shutdown().await;
}

/// `tests/support/mcp_big_result.py`, a stdio MCP server whose one tool answers with as many
/// megabytes as asked; its calls time out after `call_timeout_seconds`.
fn big_result_server() -> hearth::config::McpServerConfig {
    hearth::config::McpServerConfig {
        command: Some("python3".to_owned()),
        args: vec![
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/mcp_big_result.py"
            )
            .to_owned(),
        ],
        call_timeout_seconds: Some(60),
        ..hearth::config::McpServerConfig::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_of_many_megabytes_is_cut_as_it_is_read_and_the_call_ends_at_once() {
    let mcp = start_one("big", big_result_server(), McpOptions::default()).await;
    assert!(state(&mcp, "big").connected, "{:?}", state(&mcp, "big"));
    let provider = mcp.provider(&["big".to_owned()]);
    let limit = hearth::tools::mcp::MAX_RESULT_BYTES;
    for megabytes in [4u64, 40] {
        let answer = call(&provider, "big__answer", json!({"megabytes": megabytes})).await;
        let bytes = megabytes * 1024 * 1024;
        assert!(
            answer.starts_with("the start of a long answer\nxxxx"),
            "{megabytes} MB: {}",
            &answer[..answer.len().min(300)]
        );
        // What the model reads: the start of the text, and that it was cut, of how much.
        let note = answer.lines().last().unwrap();
        assert!(
            note.starts_with("[result cut: the tool server answered with ")
                && note.contains(&format!(
                    "more than hearth reads ({})",
                    hearth::tools::mcp::MAX_MESSAGE_BYTES
                )),
            "{note}"
        );
        let answered: u64 = note
            .trim_start_matches("[result cut: the tool server answered with ")
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(answered > bytes, "{answered} of {bytes}");
        assert!(answer.len() <= limit, "{} bytes", answer.len());
    }
    // The connection goes on: a small call still works.
    let answer = call(&provider, "big__answer", json!({"megabytes": 0.001})).await;
    assert!(
        answer.starts_with("the start of a long answer\nx"),
        "{answer}"
    );
    assert!(!answer.contains("[result cut"), "{answer}");
    mcp.shutdown().await;
}
