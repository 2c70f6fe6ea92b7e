//! The family scripts folder the tests use (a recording Python script and its manifest),
//! hearth started on it, and a script's run asked for, approved and read back.

// The integration tests and the benchmarks each use a different part of this.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::hearth_app::Hearth;
use super::llm_server::{ScriptedLlmServer, Step};

pub const SCRIPT_TOOLS: &str = "profile_get,list_available_scripts,select_script,\
     get_script_parameters,set_script_parameters,run_script";

/// Records each run (its stdin, arguments, folder and environment) in `runs.jsonl`.
pub const RECORD_PY: &str = r#"import json, os, sys
params = json.load(sys.stdin)
with open("runs.jsonl", "a") as runs:
    runs.write(json.dumps({"stdin": params, "argv": sys.argv[1:], "cwd": os.getcwd(),
                           "env": sorted(os.environ)}) + "\n")
print("backed up album", params.get("album"), "to", params.get("destination"))
"#;

pub const MANIFEST: &str = r#"[
  {"name": "backup_photos", "description": "Back up the family photos", "path": "record.py",
   "type": "python", "parameters": [
     {"name": "album", "type": "string", "default": "all"},
     {"name": "destination", "type": "enum", "options": ["usb_drive", "nas"], "default": "usb_drive"},
     {"name": "keep_days", "type": "number", "default": 30},
     {"name": "only_new", "type": "boolean", "default": true}
   ]},
  {"name": "water_garden", "description": "Turn on the garden sprinkler", "path": "tools/water.sh",
   "type": "shell", "parameters": [
     {"name": "minutes", "type": "number", "required": true}
   ]},
  {"name": "failing", "description": "Always fails", "path": "failing.sh", "type": "shell"},
  {"name": "slow", "description": "Never ends on its own", "path": "slow.sh", "type": "shell",
   "timeout_seconds": 1},
  {"name": "loud", "description": "Prints ten megabytes", "path": "loud.py", "type": "python"}
]"#;

/// A scripts folder in `folder`: the manifest above and its scripts.
pub fn write_scripts(folder: &Path) -> PathBuf {
    let scripts = folder.join("family");
    std::fs::create_dir_all(scripts.join("tools")).unwrap();
    std::fs::write(scripts.join("manifest.json"), MANIFEST).unwrap();
    std::fs::write(scripts.join("record.py"), RECORD_PY).unwrap();
    std::fs::write(
        scripts.join("tools/water.sh"),
        "echo \"watering for ${1#--minutes=} minutes\"\n",
    )
    .unwrap();
    std::fs::write(
        scripts.join("failing.sh"),
        "echo 'looking for the drive'\necho 'disk full' >&2\nexit 3\n",
    )
    .unwrap();
    std::fs::write(
        scripts.join("slow.sh"),
        "sleep 300 &\necho $! > child.pid\nsleep 300\n",
    )
    .unwrap();
    std::fs::write(
        scripts.join("loud.py"),
        "import sys\nsys.stdout.write('x' * (10 * 1024 * 1024))\nprint('the end')\n",
    )
    .unwrap();
    scripts
}

pub fn overrides(scripts: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("HEARTH__SCRIPTS_DIR", scripts.display().to_string()),
        (
            "HEARTH__DEFAULT_PROFILE_SETTINGS__TOOLS_CONFIG__ENABLE_LOCAL_TOOLS",
            SCRIPT_TOOLS.to_string(),
        ),
        (
            "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__MAX_TOOL_ITERATIONS",
            "10".to_string(),
        ),
    ]
}

/// hearth with the scripts folder, in `folder` (a restart) or a new one; `extra` overrides.
pub async fn start(
    llm: &ScriptedLlmServer,
    folder: Option<tempfile::TempDir>,
    extra: &[(&str, &str)],
) -> (Hearth, PathBuf) {
    let folder = folder.unwrap_or_else(|| tempfile::tempdir().unwrap());
    let scripts = write_scripts(folder.path());
    let owned = overrides(&scripts);
    let mut all: Vec<(&str, &str)> = owned.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    (
        Hearth::start_in(folder, &llm.base_url(), &all).await,
        scripts,
    )
}

pub fn call(name: &str, arguments: Value) -> Step {
    Step::ToolCalls(vec![(name.to_string(), arguments)])
}

pub fn runs(scripts: &Path) -> Vec<Value> {
    std::fs::read_to_string(scripts.join("runs.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The system prompt of the model's last request.
pub fn last_system_prompt(llm: &ScriptedLlmServer) -> String {
    llm.requests().last().unwrap().body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string()
}

pub async fn say(app: &Hearth, text: &str) -> Value {
    let (status, body) = app.send(json!({"user_id": "alice", "text": text})).await;
    assert_eq!(status, 200, "{body}");
    body
}

pub async fn confirm(app: &Hearth, asked: &Value, approve: bool) -> Value {
    let (status, body) = app
        .confirm(
            json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                   "approve": approve}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// One turn that selects `script`, shows its parameters, applies `changes` and asks to run.
pub async fn ask_to_run(
    app: &Hearth,
    llm: &ScriptedLlmServer,
    script: &str,
    changes: Value,
) -> Value {
    llm.push_many([
        call("select_script", json!({"name": script})),
        call("get_script_parameters", json!({})),
        call("set_script_parameters", json!({"changes": changes})),
        call("run_script", json!({})),
    ]);
    let asked = say(app, &format!("run {script}")).await;
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    asked
}

/// Approve `asked`; the tool result of the run.
pub async fn approve_run(app: &Hearth, llm: &ScriptedLlmServer, asked: &Value) -> String {
    llm.push(Step::Reply("Here is how it went.".into()));
    let body = confirm(app, asked, true).await;
    assert_eq!(body["reply"], "Here is how it went.", "{body}");
    llm.last_tool_result()
}
