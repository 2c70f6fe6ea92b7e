//! Scripts folders: the examples shipped in `family_scripts/` load, each runs with its
//! defaults and succeeds, and the shell example refuses a bad value; a manifest whose path
//! leaves its folder (or with a default of the wrong type) stops start-up and
//! `hearth check-config`, naming the file, the index and the key.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

use hearth::scripts::{RunLimits, ScriptCatalog, run_script};

use crate::support::family_scripts::overrides;
use crate::support::hearth_app::{load, test_env};
use crate::support::test_config::TestConfig;

const LIMITS: RunLimits = RunLimits {
    timeout: Duration::from_secs(30),
    max_output_bytes: 64 * 1024,
};

fn defaults(catalog: &ScriptCatalog, name: &str) -> Map<String, Value> {
    catalog
        .get(name)
        .unwrap()
        .parameters
        .iter()
        .filter_map(|parameter| Some((parameter.name.clone(), parameter.default.clone()?)))
        .collect()
}

#[tokio::test]
async fn the_shipped_examples_load_and_run() {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("family_scripts");
    let catalog = ScriptCatalog::load(&folder).await.unwrap();
    assert_eq!(catalog.names(), ["backup_photos", "water_garden"]);

    let backup = catalog.get("backup_photos").unwrap();
    let result = run_script(
        catalog.folder(),
        backup,
        &defaults(&catalog, "backup_photos"),
        LIMITS,
        None,
    )
    .await
    .unwrap();
    assert!(result.succeeded(), "{}", result.describe());
    assert!(
        result.output.starts_with("Photo backup plan:"),
        "{}",
        result.output
    );
    assert!(
        result.output.contains("to the usb_drive"),
        "{}",
        result.output
    );

    let water = catalog.get("water_garden").unwrap();
    let mut values = defaults(&catalog, "water_garden");
    values.insert("zone".into(), json!("roses"));
    let result = run_script(catalog.folder(), water, &values, LIMITS, None)
        .await
        .unwrap();
    assert_eq!(
        result.output,
        "Sprinkler on for 10 minutes in the roses zone (example: nothing is connected)."
    );
    values.insert("minutes".into(), json!(0));
    let result = run_script(catalog.folder(), water, &values, LIMITS, None)
        .await
        .unwrap();
    assert_eq!(result.exit_code, Some(2));
    assert_eq!(result.errors, "minutes must be between 1 and 60, got 0");
}

#[actix::test]
async fn a_manifest_path_leaving_the_folder_stops_start_up() {
    let folder = tempfile::tempdir().unwrap();
    let scripts = folder.path().join("family");
    std::fs::create_dir_all(&scripts).unwrap();
    std::fs::write(folder.path().join("outside.sh"), "echo hi\n").unwrap();
    std::fs::write(
        scripts.join("manifest.json"),
        r#"[{"name": "ok", "description": "fine", "path": "ok.sh", "type": "shell"},
            {"name": "escape", "description": "leaves", "path": "../outside.sh", "type": "shell"},
            {"name": "typed", "description": "bad default", "path": "ok.sh", "type": "shell",
             "parameters": [{"name": "n", "type": "number", "default": "many"}]}]"#,
    )
    .unwrap();
    std::fs::write(scripts.join("ok.sh"), "echo ok\n").unwrap();
    let path = TestConfig::new(folder.path(), "http://127.0.0.1:9").write(folder.path());
    let owned = overrides(&scripts);
    let env: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let loaded = load(&path, &test_env(&env));
    let error = match hearth::app::start(
        &loaded,
        hearth::app::StartOptions {
            serve: false,
            extra_channels: Default::default(),
            stores: Some(hearth::storage::Stores::in_memory()),
        },
    )
    .await
    {
        Ok(_) => panic!("hearth started with a script outside its folder"),
        Err(error) => error.to_string(),
    };
    let manifest = scripts.join("manifest.json");
    assert!(
        error.contains(&format!(
            "{}: [1].path: \"../outside.sh\" leaves the scripts folder",
            manifest.display()
        )),
        "{error}"
    );
    assert!(
        error.contains(&format!(
            "{}: [2].parameters[0].default: n must be a number, found \"many\"",
            manifest.display()
        )),
        "{error}"
    );

    // `hearth check-config` says the same.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hearth"))
        .args(["--config", path.to_str().unwrap(), "check-config"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(test_env(&env))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("[1].path: \"../outside.sh\" leaves the scripts folder"),
        "{stderr}"
    );
}
