//! The `/orders` service profile on the intents engine, as the tests and the intents
//! benchmark add it to the test config, and intents files written for it.

// The integration tests and the intents benchmark each use a different part of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Stands in an intents file's text for the path of the shipped `data/orders.json`.
pub const ORDERS_PATH: &str = "ORDERS";

/// The `/orders` profile over `intents_file`, a `service_profiles` entry of the test config;
/// `processing` adds keys to its `processing_config` (each ending in ", ").
pub fn orders_profile(intents_file: &Path, processing: &str) -> String {
    format!(
        "  - id: orders\n    slash_commands: [\"/orders\"]\n    processing_config: {{ \
         {processing}engine: intents, intents_file: \"{}\" }}\n    tools_config: {{ \
         enable_local_tools: [check_order_status], confirm_tools: [] }}\n",
        intents_file.display()
    )
}

/// `text` written as `intents.yaml` in `folder`, `ORDERS` in it standing for the shipped
/// `data/orders.json`; its path.
pub fn write_intents(folder: &Path, text: &str) -> PathBuf {
    let orders = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/orders.json");
    let path = folder.join("intents.yaml");
    std::fs::write(
        &path,
        text.replace(ORDERS_PATH, &orders.display().to_string()),
    )
    .expect("intents file written");
    path
}
