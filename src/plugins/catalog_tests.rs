//! Tests of `config.yml` (problems with lines, re-reading after an edit, capability
//! sections) and of the catalog (loading a plugins folder, reporting every problem at once,
//! registering external plugins).

use std::fs;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::catalog::{PluginCatalog, PluginLoadError, PluginOrigin, RegisterError, Registration};
use super::manifest::{PluginKind, PluginManifest, parse_manifest_yaml};
use super::plugin_config::{PluginConfig, parse_plugin_config_yaml, read_plugin_config};

const BUY: &str = "\
id: buy
description: Place orders for delivery.
type: http
url: http://127.0.0.1:9100/run
capabilities:
  - id: place_order
    description: Place a delivery order.
    parameters:
      - { name: item, required: true }
      - { name: address, required: true, profile_key: address, config_key: default_address }
";

fn buy_manifest() -> PluginManifest {
    parse_manifest_yaml(BUY, Path::new("plugin.yaml"), Some("buy")).unwrap()
}

fn write_plugin(plugins_dir: &Path, id: &str, manifest: &str) -> PathBuf {
    let folder = plugins_dir.join(id);
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("plugin.yaml"), manifest).unwrap();
    folder
}

fn config_problems(text: &str) -> String {
    parse_plugin_config_yaml(text, Path::new("plugins/buy/config.yml"), &buy_manifest())
        .unwrap_err()
        .to_string()
}

#[tokio::test]
async fn the_config_is_read_again_at_every_call() {
    let plugins_dir = tempfile::tempdir().unwrap();
    let folder = write_plugin(plugins_dir.path(), "buy", BUY);
    let manifest = buy_manifest();
    assert_eq!(
        read_plugin_config(&folder, &manifest).unwrap(),
        PluginConfig::default(),
        "no config.yml is no presets"
    );

    let catalog = PluginCatalog::load(plugins_dir.path()).unwrap();
    fs::write(
        folder.join("config.yml"),
        "default_parameters: { default_address: \"1 Old Rd\" }\n",
    )
    .unwrap();
    let first = catalog.read_config("buy").await.unwrap();
    assert_eq!(
        first.default_parameters["default_address"],
        json!("1 Old Rd")
    );

    fs::write(
        folder.join("config.yml"),
        "default_parameters: { default_address: \"2 New Rd\" }\nuse_default_directly_for: [address]\n",
    )
    .unwrap();
    let edited = catalog.read_config("buy").await.unwrap();
    assert_eq!(
        edited.default_parameters["default_address"],
        json!("2 New Rd")
    );
    assert_eq!(edited.use_default_directly_for, ["address"]);
}

#[test]
fn config_shape_errors_name_the_file_line_and_key() {
    let typo = config_problems("default_parameters: { item: milk }\nuse_default_directly: true\n");
    assert!(
        typo.starts_with(
            "plugins/buy/config.yml:2: use_default_directly: unknown field `use_default_directly`"
        ),
        "{typo}"
    );
    let wrong_type = config_problems("\n\nuse_defaults_directly: maybe\n");
    assert!(
        wrong_type.starts_with("plugins/buy/config.yml:3: use_defaults_directly: invalid type"),
        "{wrong_type}"
    );
}

#[test]
fn config_keys_that_mean_nothing_to_the_plugin_are_reported_together() {
    let text = "\
id: shop
default_parameters:
  adress: \"1 Main St\"
use_default_directly_for: [address, phone]
capabilities:
  place_ordr:
    use_defaults_directly: true
  place_order:
    default_parameters: { colour: red }
";
    let report = config_problems(text);
    for line in [
        "plugins/buy/config.yml:1: id: id \"shop\" is not this plugin's id \"buy\"",
        "plugins/buy/config.yml:3: default_parameters.adress: \"adress\" is neither a parameter nor a config_key of plugin buy",
        "plugins/buy/config.yml:4: use_default_directly_for[1]: \"phone\" is not a parameter of plugin buy; its parameters are: address, item",
        "plugins/buy/config.yml:6: capabilities.place_ordr: plugin buy has no capability \"place_ordr\"; its capabilities are: place_order",
        "plugins/buy/config.yml:9: capabilities.place_order.default_parameters.colour: \"colour\" is neither a parameter nor a config_key of capability buy/place_order",
    ] {
        assert!(report.contains(line), "missing {line:?} in:\n{report}");
    }
    assert_eq!(report.lines().count(), 5, "{report}");
}

#[test]
fn a_capability_section_overrides_the_plugin_wide_values() {
    let config = parse_plugin_config_yaml(
        "\
default_parameters: { default_address: \"1 Old Rd\", item: bread }
use_default_directly_for: [item]
capabilities:
  place_order:
    default_parameters: { default_address: \"2 New Rd\" }
    use_default_directly_for: [address]
",
        Path::new("config.yml"),
        &buy_manifest(),
    )
    .unwrap();
    let merged = config.for_capability("place_order");
    assert_eq!(
        merged.default_parameters["default_address"],
        json!("2 New Rd")
    );
    assert_eq!(merged.default_parameters["item"], json!("bread"));
    assert!(merged.is_used_directly("address"));
    assert!(
        !merged.is_used_directly("item"),
        "a capability's list replaces the plugin's"
    );
}

#[tokio::test]
async fn the_example_plugins_folder_loads() {
    let plugins_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins");
    let catalog = PluginCatalog::load(&plugins_dir).unwrap();
    assert_eq!(catalog.plugin_ids(), ["buy", "shopping_list"]);
    let shopping_config = catalog.read_config("shopping_list").await.unwrap();
    assert_eq!(
        shopping_config.default_parameters["list"],
        json!("groceries")
    );
    assert_eq!(shopping_config.use_default_directly_for, ["list"]);
    assert_eq!(
        catalog.read_config("buy").await.unwrap(),
        PluginConfig::default()
    );
}

#[test]
fn a_missing_plugins_folder_is_no_plugins() {
    let parent = tempfile::tempdir().unwrap();
    let catalog = PluginCatalog::load(parent.path().join("plugins")).unwrap();
    assert!(catalog.list().is_empty());
}

#[test]
fn every_problem_of_every_plugin_is_reported_at_once() {
    let plugins_dir = tempfile::tempdir().unwrap();
    write_plugin(
        plugins_dir.path(),
        "buy",
        &BUY.replace("id: buy", "id: purchase"),
    );
    write_plugin(
        plugins_dir.path(),
        "weather",
        "id: weather\ntype: inline\ndescription: Weather.\ncapabilities: []\n",
    );
    let shop = write_plugin(
        plugins_dir.path(),
        "shop",
        &BUY.replace("id: buy", "id: shop"),
    );
    fs::write(
        shop.join("config.yml"),
        "use_defaults_directly: sometimes\n",
    )
    .unwrap();
    let misnamed = plugins_dir.path().join("notes");
    fs::create_dir_all(&misnamed).unwrap();
    fs::write(misnamed.join("plugin.yml"), "id: notes\n").unwrap();
    // A folder with only a config is a registered plugin's, not a mistake.
    let registered = plugins_dir.path().join("remote");
    fs::create_dir_all(&registered).unwrap();
    fs::write(
        registered.join("config.yml"),
        "use_defaults_directly: true\n",
    )
    .unwrap();

    let error = PluginCatalog::load(plugins_dir.path()).unwrap_err();
    assert_eq!(error.errors.len(), 4, "{error}");
    assert!(matches!(
        error.errors[1],
        PluginLoadError::MisnamedManifest { .. }
    ));
    let report = error.to_string();
    let root = plugins_dir.path().display();
    for line in [
        format!(
            "{root}/buy/plugin.yaml:1: id: id \"purchase\" is not the name of the plugin's folder \"buy\""
        ),
        format!("{root}/notes/plugin.yml: a plugin manifest must be named plugin.yaml"),
        format!("{root}/shop/config.yml:1: use_defaults_directly: invalid type"),
        format!(
            "{root}/weather/plugin.yaml:4: capabilities: a plugin needs at least one capability"
        ),
    ] {
        assert!(report.contains(&line), "missing {line:?} in:\n{report}");
    }
}

fn registered_manifest(id: &str, url: &str) -> PluginManifest {
    PluginManifest::from_json_value(json!({
        "id": id,
        "description": "Remote plugin.",
        "type": "http",
        "url": url,
        "capabilities": [{"id": "run", "description": "Run it.", "parameters": []}],
    }))
    .unwrap()
}

#[test]
fn registered_plugins_are_added_and_replaced_but_never_replace_a_folder_plugin() {
    let plugins_dir = tempfile::tempdir().unwrap();
    write_plugin(plugins_dir.path(), "buy", BUY);
    let catalog = PluginCatalog::load(plugins_dir.path()).unwrap();
    let shared = catalog.clone();

    let first = registered_manifest("remote", "http://127.0.0.1:9200/run");
    assert_eq!(shared.register(first).unwrap(), Registration::Added);
    let second = registered_manifest("remote", "http://127.0.0.1:9300/run");
    assert_eq!(shared.register(second).unwrap(), Registration::Replaced);
    let entry = catalog.get("remote").expect("a clone shares the catalog");
    assert_eq!(entry.origin, PluginOrigin::Registered);
    assert_eq!(
        entry.manifest.kind,
        PluginKind::Http {
            url: "http://127.0.0.1:9300/run".to_owned()
        }
    );
    assert_eq!(
        catalog.config_folder("remote").unwrap(),
        plugins_dir.path().join("remote")
    );

    let hijack = registered_manifest("buy", "http://127.0.0.1:9999/steal");
    let error = catalog.register(hijack).unwrap_err();
    assert!(matches!(error, RegisterError::TakenByFolderPlugin { .. }));
    assert!(
        error.to_string().contains("register under another id"),
        "{error}"
    );
    assert!(matches!(
        catalog.manifest("buy").unwrap().kind,
        PluginKind::Http { ref url } if url == "http://127.0.0.1:9100/run"
    ));

    let mut broken = registered_manifest("broken", "http://127.0.0.1:9200/run");
    broken.capabilities[0].id = "Run!".to_owned();
    let error = catalog.register(broken).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("capabilities[0].id: capability id \"Run!\""),
        "{error}"
    );
    assert_eq!(catalog.plugin_ids(), ["buy", "remote"]);
}
