//! Tests of the parameter resolver against seed 000's flows (§7), the "use directly" rules of
//! §3.3–3.5, type fitting, the texts for the model and the member, the model's schema (§3.4)
//! and the redaction of sensitive values.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::llm_schema::{capability_parameters_schema, directly_filled_parameters};
use super::manifest::{PluginManifest, parse_manifest_yaml};
use super::plugin_config::{PluginConfig, parse_plugin_config_yaml};
use super::resolution_text::REDACTED;
use super::resolver::{
    ArgumentProblem, Resolution, ResolutionOutcome, ResolvedCall, ValueSource, resolve_parameters,
};
use crate::ports::ProfileFacts;

/// Seed 000 §3.2's buy plugin, with `phone` marked sensitive.
const BUY: &str = "\
id: buy
name: Buy Plugin
description: Place orders for delivery.
type: http
url: http://127.0.0.1:9100/run
capabilities:
  - id: place_order
    description: Place a delivery order.
    parameters:
      - { name: item, type: string, required: true, description: \"Item to buy (e.g. milk, bread).\" }
      - { name: address, type: string, required: true, profile_key: address, config_key: default_address, confirm_if_uncertain: true, description: \"Delivery address.\" }
      - { name: phone, type: string, required: true, profile_key: phone, confirm_if_uncertain: true, sensitive: true, description: \"Contact phone number.\" }
      - { name: contact_name, type: string, required: true, profile_key: name, description: \"Recipient name.\" }
      - { name: payment_method, type: string, profile_key: default_payment, config_key: payment_method, description: \"Payment method (e.g. card, cash).\" }
";

/// A plugin with every parameter type.
const GARDEN: &str = "\
id: garden
description: Water the garden.
type: inline
capabilities:
  - id: water
    description: Water a zone.
    parameters:
      - { name: zone, type: enum, values: [Front, Back], required: true }
      - { name: liters, type: number, profile_key: usual_liters }
      - { name: minutes, type: integer }
      - { name: urgent, type: boolean }
";

fn manifest(text: &str) -> PluginManifest {
    parse_manifest_yaml(text, Path::new("plugin.yaml"), None).unwrap()
}

fn config(manifest: &PluginManifest, text: &str) -> PluginConfig {
    parse_plugin_config_yaml(text, Path::new("config.yml"), manifest).unwrap()
}

fn facts(pairs: &[(&str, &str)]) -> ProfileFacts {
    pairs
        .iter()
        .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
        .collect()
}

fn arguments(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn resolve(
    manifest_text: &str,
    config_text: &str,
    args: Value,
    profile: &[(&str, &str)],
) -> Resolution {
    let manifest = manifest(manifest_text);
    let config = config(&manifest, config_text);
    let capability = &manifest.capabilities[0];
    resolve_parameters(
        &manifest,
        capability,
        &arguments(args),
        &facts(profile),
        &config,
    )
}

/// `name → (value, source)` of a call, for compact assertions.
fn sources(call: &ResolvedCall) -> Vec<(String, Value, ValueSource)> {
    call.values
        .iter()
        .map(|(name, resolved)| (name.clone(), resolved.value.clone(), resolved.source))
        .collect()
}

fn entry(name: &str, value: &str, source: ValueSource) -> (String, Value, ValueSource) {
    (name.to_owned(), json!(value), source)
}

#[test]
fn flow_1_use_defaults_directly_is_ready_with_config_sources() {
    let config = "\
default_parameters: { address: \"123 Main St\", contact_name: John, phone: \"555-0000\" }
use_defaults_directly: true
";
    let resolution = resolve(BUY, config, json!({"item": "milk"}), &[]);
    let ResolutionOutcome::Ready(call) = &resolution.outcome else {
        panic!("expected ready: {}", resolution.model_text());
    };
    assert_eq!(
        sources(call),
        [
            entry("address", "123 Main St", ValueSource::Config),
            entry("contact_name", "John", ValueSource::Config),
            entry("item", "milk", ValueSource::Message),
            entry("phone", "555-0000", ValueSource::Config),
        ]
    );
    assert_eq!(
        Value::Object(call.parameters()),
        json!({"address": "123 Main St", "contact_name": "John", "item": "milk", "phone": "555-0000"})
    );
}

#[test]
fn flow_2_profile_with_one_missing_asks_for_the_phone_and_says_what_we_have() {
    let profile = [("name", "John"), ("address", "123 Main St")];
    let resolution = resolve(BUY, "", json!({"item": "milk"}), &profile);
    let ResolutionOutcome::Missing {
        missing,
        have,
        to_confirm,
    } = &resolution.outcome
    else {
        panic!("expected missing: {}", resolution.model_text());
    };
    let missing_names: Vec<&str> = missing.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(missing_names, ["phone"]);
    assert_eq!(
        sources(have),
        [
            entry("address", "123 Main St", ValueSource::Profile),
            entry("contact_name", "John", ValueSource::Profile),
            entry("item", "milk", ValueSource::Message),
        ]
    );
    assert_eq!(to_confirm, &["address"]);
    assert_eq!(
        resolution.model_text(),
        "Plugin \"buy\" (place_order) requires parameters that are missing:\n\
         - phone: Contact phone number (not in the user's message, the member's profile (key \"phone\") or the plugin config (key \"phone\"))\n\
         \n\
         Parameters we have:\n\
         - item: milk (from the user's message)\n\
         - address: 123 Main St (from the member's profile; confirm it with the user before use)\n\
         - contact_name: John (from the member's profile)\n\
         \n\
         Do not call the plugin yet. Please ask the user for: phone (Contact phone number). \
         In the same message, ask them to confirm: address."
    );
    assert_eq!(
        resolution.question_for_member().unwrap(),
        "For buy / place_order I still need phone (Contact phone number). What should I use?"
    );
    assert_eq!(resolution.confirmation_prompt(), None);
}

#[test]
fn flow_2_next_turn_with_the_phone_still_confirms_the_profile_address() {
    let profile = [("name", "John"), ("address", "123 Main St")];
    let resolution = resolve(
        BUY,
        "",
        json!({"item": "milk", "phone": "555-1234"}),
        &profile,
    );
    let ResolutionOutcome::Uncertain { uncertain, .. } = &resolution.outcome else {
        panic!("expected uncertain: {}", resolution.model_text());
    };
    let names: Vec<&str> = uncertain.iter().map(|value| value.name.as_str()).collect();
    assert_eq!(names, ["address"]);
}

#[test]
fn flow_2b_profile_values_marked_confirm_if_uncertain_need_confirmation() {
    let profile = [
        ("address", "123 Main St"),
        ("phone", "555-0000"),
        ("name", "John"),
    ];
    let resolution = resolve(BUY, "", json!({"item": "milk"}), &profile);
    let ResolutionOutcome::Uncertain { uncertain, have } = &resolution.outcome else {
        panic!("expected uncertain: {}", resolution.model_text());
    };
    let uncertain: Vec<(String, Value, ValueSource)> = uncertain
        .iter()
        .map(|value| (value.name.clone(), value.value.clone(), value.source))
        .collect();
    assert_eq!(
        uncertain,
        [
            entry("address", "123 Main St", ValueSource::Profile),
            entry("phone", "555-0000", ValueSource::Profile),
        ]
    );
    assert_eq!(
        sources(have),
        [
            entry("contact_name", "John", ValueSource::Profile),
            entry("item", "milk", ValueSource::Message),
        ]
    );
    let text = resolution.model_text();
    assert!(
        text.starts_with(
            "Plugin \"buy\" (place_order) has parameters that need confirmation before use:\n\
         - address: \"123 Main St\" (from the member's profile) — please confirm with the user\n\
         - phone: \"555-0000\" (from the member's profile) — please confirm with the user\n\
         \n\
         Parameters we have (no confirmation needed):\n\
         - item: milk (from the user's message)\n\
         - contact_name: John (from the member's profile)\n"
        ),
        "{text}"
    );
    assert!(text.contains(
        "Please ask the user: \"I have your address as 123 Main St and your phone as 555-0000. Is that correct for this request?\""
    ), "{text}");
    assert_eq!(
        resolution.confirmation_prompt().unwrap(),
        "Use these for buy / place_order?\n\
         • address: 123 Main St (from your profile)\n\
         • phone: 555-0000 (from your profile)"
    );
    let confirmed = resolution.call_if_confirmed().unwrap();
    assert_eq!(confirmed.values.len(), 4);

    // The member confirmed or corrected: the model passes every value, all certain.
    let corrected = resolve(
        BUY,
        "",
        json!({"item": "milk", "address": "456 Oak Ave", "phone": "555-1234", "contact_name": "John"}),
        &profile,
    );
    let ResolutionOutcome::Ready(call) = &corrected.outcome else {
        panic!("expected ready: {}", corrected.model_text());
    };
    assert!(
        call.values
            .values()
            .all(|v| v.source == ValueSource::Message)
    );
}

#[test]
fn flow_3_with_no_profile_and_no_config_everything_but_the_item_is_missing() {
    let resolution = resolve(BUY, "", json!({"item": "milk"}), &[]);
    let ResolutionOutcome::Missing { missing, have, .. } = &resolution.outcome else {
        panic!("expected missing: {}", resolution.model_text());
    };
    let names: Vec<&str> = missing.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["address", "phone", "contact_name"]);
    assert_eq!(sources(have), [entry("item", "milk", ValueSource::Message)]);
    let text = resolution.model_text();
    assert!(
        text.contains("- address: Delivery address (not in the user's message, the member's profile (key \"address\") or the plugin config (key \"default_address\" or \"address\"))"),
        "{text}"
    );
    assert!(
        text.contains("Please ask the user for: address (Delivery address), phone (Contact phone number), contact_name (Recipient name)."),
        "{text}"
    );
    assert_eq!(
        resolution.question_for_member().unwrap(),
        "For buy / place_order I still need:\n\
         • address (Delivery address)\n\
         • phone (Contact phone number)\n\
         • contact_name (Recipient name)\n\
         What should I use?"
    );
}

#[test]
fn use_default_directly_for_decides_which_config_values_skip_confirmation() {
    let args = json!({"item": "milk", "phone": "555-1234", "contact_name": "John"});
    let listed = "default_parameters: { default_address: \"1 Preset Rd\" }\nuse_default_directly_for: [address]\n";
    let resolution = resolve(BUY, listed, args.clone(), &[]);
    let ResolutionOutcome::Ready(call) = &resolution.outcome else {
        panic!("expected ready: {}", resolution.model_text());
    };
    assert_eq!(call.values["address"].source, ValueSource::Config);

    let not_listed = "default_parameters: { default_address: \"1 Preset Rd\" }\nuse_default_directly_for: [payment_method]\n";
    let resolution = resolve(BUY, not_listed, args.clone(), &[]);
    let ResolutionOutcome::Uncertain { uncertain, .. } = &resolution.outcome else {
        panic!("expected uncertain: {}", resolution.model_text());
    };
    assert_eq!(uncertain[0].name, "address");
    assert_eq!(uncertain[0].source, ValueSource::Config);
    assert_eq!(
        resolution.confirmation_prompt().unwrap(),
        "Use these for buy / place_order?\n• address: 1 Preset Rd (from the plugin settings)"
    );

    // The config's trust covers its own values only: a profile address is still confirmed.
    let resolution = resolve(BUY, listed, args, &[("address", "9 Profile St")]);
    assert!(
        matches!(&resolution.outcome, ResolutionOutcome::Uncertain { uncertain, .. } if uncertain[0].source == ValueSource::Profile),
        "{}",
        resolution.model_text()
    );
}

#[test]
fn capability_sections_override_plugin_wide_presets_key_by_key() {
    let config_text = "\
default_parameters: { default_address: \"1 Old Rd\", payment_method: cash }
capabilities:
  place_order:
    default_parameters: { default_address: \"2 New Rd\" }
    use_defaults_directly: true
";
    let resolution = resolve(
        BUY,
        config_text,
        json!({"item": "milk", "phone": "555", "contact_name": "John"}),
        &[],
    );
    let ResolutionOutcome::Ready(call) = &resolution.outcome else {
        panic!("expected ready: {}", resolution.model_text());
    };
    assert_eq!(call.values["address"].value, json!("2 New Rd"));
    assert_eq!(call.values["payment_method"].value, json!("cash"));
}

#[test]
fn the_config_key_is_read_before_the_parameter_name() {
    let config_text = "default_parameters: { default_address: \"A St\", address: \"B St\" }\nuse_defaults_directly: true\n";
    let resolution = resolve(
        BUY,
        config_text,
        json!({"item": "milk", "phone": "555", "contact_name": "John"}),
        &[],
    );
    let ResolutionOutcome::Ready(call) = &resolution.outcome else {
        panic!("expected ready: {}", resolution.model_text());
    };
    assert_eq!(call.values["address"].value, json!("A St"));
}

#[test]
fn values_are_fitted_to_their_types() {
    let resolution = resolve(
        GARDEN,
        "",
        json!({"zone": "front", "liters": "2.5", "minutes": 10.0, "urgent": "yes"}),
        &[],
    );
    let ResolutionOutcome::Ready(call) = &resolution.outcome else {
        panic!("expected ready: {}", resolution.model_text());
    };
    assert_eq!(
        Value::Object(call.parameters()),
        json!({"zone": "Front", "liters": 2.5, "minutes": 10, "urgent": true})
    );
}

#[test]
fn wrong_types_and_unknown_arguments_from_the_model_are_invalid() {
    let resolution = resolve(
        GARDEN,
        "",
        json!({"zone": "side", "liters": "lots", "minutes": 2.5, "urgent": "maybe", "colour": "red"}),
        &[],
    );
    let ResolutionOutcome::Invalid { problems } = &resolution.outcome else {
        panic!("expected invalid: {}", resolution.model_text());
    };
    assert!(problems.contains(&ArgumentProblem::UnknownParameter {
        name: "colour".to_owned()
    }));
    assert_eq!(problems.len(), 5, "{problems:?}");
    let text = resolution.model_text();
    for line in [
        "- colour: water has no such parameter; its parameters are: zone, liters, minutes, urgent",
        "- zone: \"side\" is not one of: Front, Back",
        "- liters: \"lots\" is not a number such as 2.5",
        "- minutes: 2.5 is not a whole number such as 3",
        "- urgent: \"maybe\" is not yes or no (true or false)",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert!(text.ends_with("Fix them and call route_to_plugin again."));
}

#[test]
fn a_profile_value_of_the_wrong_type_counts_as_missing_with_a_note() {
    let resolution = resolve(
        GARDEN,
        "",
        json!({"zone": "Back"}),
        &[("usual_liters", "a bucket")],
    );
    let ResolutionOutcome::Ready(call) = &resolution.outcome else {
        panic!(
            "liters is optional, so the call is ready: {}",
            resolution.model_text()
        );
    };
    assert!(!call.values.contains_key("liters"));
    assert_eq!(resolution.ignored.len(), 1);
    assert_eq!(resolution.ignored[0].source, ValueSource::Profile);
    assert_eq!(resolution.ignored[0].key, "usual_liters");
}

#[test]
fn a_config_value_of_the_wrong_type_falls_through_to_missing_with_a_note() {
    let manifest_text = GARDEN.replace(
        "{ name: zone, type: enum, values: [Front, Back], required: true }",
        "{ name: zone, type: enum, values: [Front, Back], required: true, config_key: zone_default }",
    );
    let resolution = resolve(
        &manifest_text,
        "default_parameters: { zone_default: side }",
        json!({}),
        &[],
    );
    assert!(
        matches!(resolution.outcome, ResolutionOutcome::Missing { .. }),
        "{}",
        resolution.model_text()
    );
    let text = resolution.model_text();
    assert!(
        text.contains(
            "- zone: \"side\" in the plugin config key \"zone_default\" is not one of: Front, Back"
        ),
        "{text}"
    );
}

#[test]
fn the_model_schema_leaves_out_what_the_config_fills_directly() {
    let shopping = manifest(include_str!("../../plugins/shopping_list/plugin.yaml"));
    let shopping_config = config(
        &shopping,
        include_str!("../../plugins/shopping_list/config.yml"),
    );
    let add = shopping.capability("add").unwrap();
    assert_eq!(directly_filled_parameters(add, &shopping_config), ["list"]);
    let schema = capability_parameters_schema(add, &shopping_config);
    assert_eq!(schema["type"], "object");
    let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(properties, ["item", "quantity"]);
    assert_eq!(schema["properties"]["quantity"]["type"], "integer");
    assert_eq!(schema["required"], json!(["item"]));

    // Listed, but with no value in the config: the model must still be able to pass it.
    let no_value = config(&shopping, "use_default_directly_for: [list]");
    let schema = capability_parameters_schema(add, &no_value);
    assert!(schema["properties"].get("list").is_some());
    assert_eq!(schema["required"], json!(["item"]), "list has a config_key");

    let buy = manifest(BUY);
    let schema = capability_parameters_schema(&buy.capabilities[0], &PluginConfig::default());
    assert_eq!(schema["required"], json!(["item"]));
    assert_eq!(schema["properties"].as_object().unwrap().len(), 5);
    assert!(
        schema["properties"]["address"]["description"]
            .as_str()
            .unwrap()
            .contains("taken from their profile")
    );

    let garden = manifest(GARDEN);
    let schema = capability_parameters_schema(&garden.capabilities[0], &PluginConfig::default());
    assert_eq!(
        schema["properties"]["zone"],
        json!({"enum": ["Front", "Back"], "type": "string"})
    );
    assert_eq!(schema["properties"]["urgent"]["type"], "boolean");
}

#[test]
fn a_preset_by_name_makes_a_required_parameter_optional_for_the_model() {
    let buy = manifest(BUY);
    let with_item = config(&buy, "default_parameters: { item: bread }");
    let schema = capability_parameters_schema(&buy.capabilities[0], &with_item);
    assert_eq!(schema["required"], json!([]));
}

#[test]
fn sensitive_values_are_shown_to_the_model_but_redacted_for_logs() {
    let profile = [
        ("address", "123 Main St"),
        ("phone", "555-0000"),
        ("name", "John"),
    ];
    let resolution = resolve(BUY, "", json!({"item": "milk"}), &profile);
    assert!(resolution.model_text().contains("555-0000"));
    assert!(
        resolution
            .confirmation_prompt()
            .unwrap()
            .contains("555-0000")
    );

    let redacted = resolution.redacted();
    let ResolutionOutcome::Uncertain { uncertain, .. } = &redacted.outcome else {
        panic!("expected uncertain");
    };
    assert_eq!(uncertain[1].name, "phone");
    assert_eq!(uncertain[1].value, json!(REDACTED));
    assert_eq!(
        uncertain[0].value,
        json!("123 Main St"),
        "address is not sensitive"
    );
    let logged = format!("{resolution:?}");
    assert!(!logged.contains("555-0000"), "{logged}");
    assert!(logged.contains(REDACTED), "{logged}");
    let telemetry = serde_json::to_string(&redacted).unwrap();
    assert!(!telemetry.contains("555-0000"), "{telemetry}");

    // A wrong-typed sensitive argument is redacted too.
    let invalid = resolve(BUY, "", json!({"item": "milk", "phone": ["555-0000"]}), &[]);
    assert!(!format!("{invalid:?}").contains("555-0000"));
}
