//! The example family scripts shipped in `family_scripts/`: their manifest loads, each
//! runs with its defaults and succeeds, and the shell example refuses a bad value.

use std::path::Path;
use std::time::Duration;

use serde_json::{Map, Value, json};

use hearth::scripts::{RunLimits, ScriptCatalog, run_script};

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
