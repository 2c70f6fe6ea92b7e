//! Tests of reading manifests: shape errors and rule breaks reported with file, line and key
//! path; the JSON form of the registration API; the example plugins of `plugins/`.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::manifest::{
    ManifestError, ParameterType, PluginKind, PluginManifest, load_manifest_file,
    parse_manifest_yaml,
};
use crate::config::yaml_file::PluginFileProblem;

const VALID: &str = "\
id: buy
name: Buy Plugin
description: Place orders for delivery.
type: http
url: \"http://127.0.0.1:9100/run\"
capabilities:
  - id: place_order
    description: Place a delivery order.
    parameters:
      - name: item
        type: string
        required: true
      - { name: size, type: enum, values: [small, Large] }
";

fn file() -> PathBuf {
    PathBuf::from("plugins/buy/plugin.yaml")
}

fn problems_of(text: &str) -> (ManifestError, Vec<PluginFileProblem>) {
    let error = parse_manifest_yaml(text, &file(), Some("buy")).expect_err("must be refused");
    let problems = error.problems().to_vec();
    (error, problems)
}

/// The one problem at `key_path`, failing with every problem found when there is none.
fn problem_at<'a>(problems: &'a [PluginFileProblem], key_path: &str) -> &'a PluginFileProblem {
    problems
        .iter()
        .find(|problem| problem.key_path.to_string() == key_path)
        .unwrap_or_else(|| panic!("no problem at {key_path}; problems: {problems:#?}"))
}

#[test]
fn a_valid_manifest_reads_with_its_defaults() {
    let manifest = parse_manifest_yaml(VALID, &file(), Some("buy")).unwrap();
    assert_eq!(
        manifest.kind,
        PluginKind::Http {
            url: "http://127.0.0.1:9100/run".to_owned()
        }
    );
    assert_eq!(manifest.timeout_seconds, 20);
    let capability = manifest.capability("place_order").unwrap();
    assert_eq!(
        capability.name, "place_order",
        "the name defaults to the id"
    );
    assert!(capability.parameter("item").unwrap().required);
    assert_eq!(
        capability.parameter("size").unwrap().kind,
        ParameterType::Enum(vec!["small".to_owned(), "Large".to_owned()])
    );
}

#[test]
fn a_typo_in_a_key_names_the_file_line_and_key() {
    let text = VALID.replace("        required: true", "        requried: true");
    let (error, problems) = problems_of(&text);
    let problem = problem_at(&problems, "capabilities[0].parameters[0].requried");
    assert_eq!(problem.line, Some(12));
    assert!(
        problem.message.contains("unknown field `requried`"),
        "{}",
        problem.message
    );
    assert!(
        error.to_string().starts_with(
            "plugins/buy/plugin.yaml:12: capabilities[0].parameters[0].requried: unknown field"
        ),
        "{error}"
    );
}

#[test]
fn a_value_of_the_wrong_type_names_the_file_line_and_key() {
    let text = VALID.replace("type: http\n", "type: http\ntimeout_seconds: ten\n");
    let (error, problems) = problems_of(&text);
    let problem = problem_at(&problems, "timeout_seconds");
    assert_eq!(problem.line, Some(5));
    assert!(problem.message.contains("\"ten\""), "{}", problem.message);
    assert!(
        error
            .to_string()
            .starts_with("plugins/buy/plugin.yaml:5: timeout_seconds:"),
        "{error}"
    );
}

#[test]
fn a_missing_field_points_at_the_mapping_that_lacks_it() {
    let text = VALID.replace("    description: Place a delivery order.\n", "");
    let (_, problems) = problems_of(&text);
    let problem = problem_at(&problems, "capabilities[0]");
    assert_eq!(problem.line, Some(7));
    assert!(
        problem.message.contains("missing field `description`"),
        "{}",
        problem.message
    );
}

#[test]
fn an_unknown_type_lists_the_known_ones() {
    let text = VALID.replace("type: http", "type: htp");
    let (_, problems) = problems_of(&text);
    let problem = problem_at(&problems, "type");
    assert_eq!(problem.line, Some(4));
    assert!(problem.message.contains("`inline`, `http`, `command`"));
}

#[test]
fn yaml_syntax_errors_carry_their_line() {
    let (error, problems) = problems_of("id: buy\ncapabilities: [\n  - id: x\n");
    assert!(problems[0].line.is_some());
    assert!(error.to_string().contains("invalid yaml"), "{error}");
}

#[test]
fn every_broken_rule_is_reported_at_its_own_line() {
    let text = "\
id: Buy-Plugin
description: Place orders.
type: http
timeout_seconds: 0
capabilities:
  - id: order
    description: Order.
    post_process: true
    parameters:
      - { name: item, required: true }
      - { name: item }
      - { name: size, type: enum }
      - { name: colour, type: string, values: [red] }
  - id: order
    description: Order again.
";
    let (error, problems) = problems_of(text);
    let expectations = [
        ("id", 1, "is not the name of the plugin's folder \"buy\""),
        ("id", 1, "must be lowercase letters, digits and underscores"),
        ("type", 3, "needs `url:`"),
        ("timeout_seconds", 4, "between 1 and 600 seconds, found 0"),
        ("capabilities[1].id", 14, "already used by capabilities[0]"),
        (
            "capabilities[0].post_process",
            8,
            "no `post_process_prompt`",
        ),
        (
            "capabilities[0].parameters[1].name",
            11,
            "already used by parameters[0]",
        ),
        (
            "capabilities[0].parameters[2].type",
            12,
            "list its choices in `values: [...]`",
        ),
        (
            "capabilities[0].parameters[3].values",
            13,
            "only an enum has `values`",
        ),
    ];
    for (key_path, line, words) in expectations {
        let found = problems.iter().any(|problem| {
            problem.key_path.to_string() == key_path
                && problem.line == Some(line)
                && problem.message.contains(words)
        });
        assert!(
            found,
            "expected {key_path} at line {line}: {words}\n{error}"
        );
    }
    assert_eq!(problems.len(), expectations.len(), "{error}");
}

#[test]
fn urls_and_commands_must_be_usable() {
    let ftp = VALID.replace("http://127.0.0.1:9100/run", "ftp://127.0.0.1/run");
    let (_, problems) = problems_of(&ftp);
    assert!(
        problem_at(&problems, "url")
            .message
            .contains("http:// or https://")
    );

    let empty_command = VALID
        .replace("type: http", "type: command")
        .replace("url: \"http://127.0.0.1:9100/run\"", "command: []");
    let (_, problems) = problems_of(&empty_command);
    assert_eq!(problem_at(&problems, "command").line, Some(5));

    let inline_with_url = VALID.replace("type: http", "type: inline");
    let (_, problems) = problems_of(&inline_with_url);
    assert!(
        problem_at(&problems, "url")
            .message
            .contains("only a plugin of type http")
    );
}

#[test]
fn the_manifest_round_trips_through_the_json_of_the_registration_api() {
    let manifest = parse_manifest_yaml(VALID, &file(), Some("buy")).unwrap();
    let json = manifest.to_json_value();
    assert_eq!(json["type"], "http");
    assert_eq!(json["url"], "http://127.0.0.1:9100/run");
    assert_eq!(json["capabilities"][0]["parameters"][1]["type"], "enum");
    assert_eq!(
        json["capabilities"][0]["parameters"][1]["values"],
        json!(["small", "Large"])
    );
    assert_eq!(
        PluginManifest::from_json_value(json.clone()).unwrap(),
        manifest
    );
    let direct: PluginManifest = serde_json::from_value(json).unwrap();
    assert_eq!(direct, manifest);
}

#[test]
fn a_registration_breaking_a_rule_is_refused_with_its_key_path() {
    let mut json = parse_manifest_yaml(VALID, &file(), Some("buy"))
        .unwrap()
        .to_json_value();
    json["capabilities"][0]["parameters"][1]["values"] = json!([]);
    let error = PluginManifest::from_json_value(json.clone()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("capabilities[0].parameters[1].type: parameter \"size\" is an enum"),
        "{error}"
    );
    assert!(serde_json::from_value::<PluginManifest>(json).is_err());

    let typo = json!({"id": "x", "description": "d", "type": "inline", "capabilites": []});
    let error = PluginManifest::from_json_value(typo).unwrap_err();
    assert!(
        error.to_string().contains("capabilites: unknown field"),
        "{error}"
    );
}

fn example(plugin_id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("plugins")
        .join(plugin_id)
        .join("plugin.yaml")
}

#[test]
fn the_example_manifests_load() {
    let shopping = load_manifest_file(&example("shopping_list")).unwrap();
    assert_eq!(shopping.kind, PluginKind::Inline);
    let ids: Vec<&str> = shopping
        .capabilities
        .iter()
        .map(|capability| capability.id.as_str())
        .collect();
    assert_eq!(ids, ["add", "remove", "list", "clear"]);
    let add = shopping.capability("add").unwrap();
    assert_eq!(
        add.parameter("quantity").unwrap().kind,
        ParameterType::Integer
    );
    assert_eq!(
        add.parameter("list").unwrap().config_key.as_deref(),
        Some("default_list")
    );

    let buy = load_manifest_file(&example("buy")).unwrap();
    assert!(matches!(buy.kind, PluginKind::Http { .. }));
    let place_order = buy.capability("place_order").unwrap();
    let phone = place_order.parameter("phone").unwrap();
    assert!(phone.sensitive && phone.confirm_if_uncertain && phone.required);
    let address = place_order.parameter("address").unwrap();
    assert_eq!(address.config_key.as_deref(), Some("default_address"));
    assert_eq!(
        place_order
            .parameter("contact_name")
            .unwrap()
            .profile_key
            .as_deref(),
        Some("name")
    );
    assert!(!place_order.parameter("payment_method").unwrap().required);
}
