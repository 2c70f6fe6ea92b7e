//! An intents file as its author meets it: declared parameters checked with file, line and
//! key (`hearth check-config` and start-up alike), and `check_order_status` without a
//! `data_source` reading the shipped orders, or saying what is missing when they are not
//! there.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hearth::intents::IntentsRegistry;
use serde_json::json;

use crate::support::hearth_app::{Hearth, test_env};
use crate::support::intents_profile::{classified, orders_config};
use crate::support::llm_server::ScriptedLlmServer;

/// `order_status` over `check_order_status`, without a `data_source`.
const WITHOUT_DATA_SOURCE: &str = r#"
intents:
  - id: order_status
    description: Retrieve shipping info for an order
    required_params: [order_id]
    tool: check_order_status
    respond:
      post: "Your order {order_id} is {result.summary}."
"#;

#[test]
fn declared_parameters_are_checked_with_file_line_and_key() {
    let text = r#"intents:
  - id: refund_request
    description: Refund an order
    required_params:
      - { name: order_id, pattern: 'O-\d{5', example: O-12345 }
      - { name: amount, type: number, min: 50, max: 20 }
      - { name: when, type: date, min: 1 }
      - { name: count, type: integer, pattern: '\d+' }
      - { name: note, type: text }
    tool: check_order_status
"#;
    let error = IntentsRegistry::from_text(Path::new("intents.yaml"), text)
        .unwrap_err()
        .to_string();
    // The shape stops at its first problem: the pattern that is no regular expression.
    assert_eq!(
        error,
        "intents.yaml:5: intents[0].required_params[0].pattern: \"O-\\\\d{5\" is not a regular \
         expression: unclosed counted repetition"
    );
    let text = text.replace(r"'O-\d{5'", r"'O-\d{5}'");
    let error = IntentsRegistry::from_text(Path::new("intents.yaml"), &text)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "intents.yaml:9: intents[0].required_params[4].type: unknown variant `text`, \
             expected one of `string`, `number`, `integer`, `date`"
        ),
        "{error}"
    );
    let text = text.replace("type: text", "type: string");
    let error = IntentsRegistry::from_text(Path::new("intents.yaml"), &text)
        .unwrap_err()
        .to_string();
    let lines: Vec<&str> = error.lines().collect();
    assert_eq!(
        lines,
        [
            "intents.yaml:6: intents[0].required_params[1].min: min 50 is greater than max 20: \
             nothing could be given",
            "intents.yaml:7: intents[0].required_params[2].min: min bounds a number; \"when\" is \
             read as a date, so make it type number or integer",
            "intents.yaml:8: intents[0].required_params[3].pattern: a pattern checks text; \
             \"count\" is read as an integer, so leave the pattern out or make it type string",
        ],
        "{error}"
    );
}

#[test]
fn a_policy_bound_names_a_parameter_of_the_kind_it_compares() {
    let text = r#"intents:
  - id: refund_request
    description: Refund an order
    required_params: [order_id, amount, { name: count, type: integer }]
    tool: check_order_status
policy:
  rules:
    - { intent: refund_request, params: [{ name: amount, op: ">", value: 20 }], decision: deny, message: "no" }
    - { intent: refund_request, params: [{ name: amont, op: ">", value: 20 }], decision: deny, message: "no" }
    - { intent: refund_request, params: [{ name: count, op: "==", value: "3" }], decision: deny, message: "no" }
"#;
    let error = IntentsRegistry::from_text(Path::new("intents.yaml"), text)
        .unwrap_err()
        .to_string();
    let lines: Vec<&str> = error.lines().collect();
    assert_eq!(
        lines,
        [
            "intents.yaml:8: policy.rules[0].params[0].value: a number, but intent \
             \"refund_request\" reads \"amount\" as a string; declare it in its required_params \
             as { name: amount, type: number }",
            "intents.yaml:9: policy.rules[1].params[0].name: \"amont\" is not a parameter of \
             intent \"refund_request\" (parameters: order_id, amount, count)",
            "intents.yaml:10: policy.rules[2].params[0].value: a text, but intent \
             \"refund_request\" reads \"count\" as an integer: compare it with a number",
        ],
        "{error}"
    );
}

#[test]
fn check_config_names_a_bad_parameter_declaration() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let intents = folder.path().join("intents.yaml");
    std::fs::write(
        &intents,
        "intents:\n  - id: a\n    description: x\n    tool: check_order_status\n    \
         required_params:\n      - { name: amount, type: float }\n",
    )
    .unwrap();
    let config = orders_config(folder.path(), &llm, &intents);
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(&config)
        .arg("check-config")
        .envs(test_env(&[]))
        .output()
        .unwrap();
    assert!(!output.status.success(), "{output:?}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "{}:6: intents[0].required_params[0].type: unknown variant `float`",
            intents.display()
        )),
        "{stderr}"
    );
}

#[actix::test]
async fn without_a_data_source_check_order_status_reads_the_shipped_orders() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let intents = folder.path().join("intents.yaml");
    std::fs::write(&intents, WITHOUT_DATA_SOURCE).unwrap();
    let path = orders_config(folder.path(), &llm, &intents);
    // The tests run in the project's folder, where data/orders.json is.
    let app = Hearth::start_from(folder, &path, &[]).await;
    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-12345"}),
        0.9,
    ));
    assert_eq!(
        app.ask("alice", "/orders where is O-12345?").await,
        "Your order O-12345 is shipped via UPS, ETA 2025-10-20."
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_data_source_or_the_shipped_orders_start_up_says_what_is_missing() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let intents = folder.path().join("intents.yaml");
    std::fs::write(&intents, WITHOUT_DATA_SOURCE).unwrap();
    let config = orders_config(folder.path(), &llm, &intents);
    // Run in a folder without data/orders.json.
    let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .arg("--config")
        .arg(&config)
        .arg("run")
        .current_dir(folder.path())
        .envs(test_env(&[]))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("hearth started without the orders check_order_status reads");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "{}: data_source: not set, so check_order_status reads data/orders.json (relative to \
             the working directory), and cannot read data file data/orders.json:",
            intents.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("set data_source in this file"), "{stderr}");
}
