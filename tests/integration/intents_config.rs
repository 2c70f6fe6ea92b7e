//! An intents file as its author meets it: declared parameters checked with file, line and
//! key (`hearth check-config` and start-up alike).

use std::path::Path;
use std::process::Command;

use hearth::intents::IntentsRegistry;

use crate::intents::orders_config;
use crate::support::hearth_app::test_env;
use crate::support::llm_server::ScriptedLlmServer;

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
