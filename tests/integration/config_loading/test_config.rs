//! The typed test configuration (`support::test_config`) loads as hearth reads a written
//! file, into the same configuration as the YAML text the older tests write.

use hearth::config::render_resolved_profiles;

use crate::support::hearth_app::{load, test_env, write_config};
use crate::support::test_config::{TestConfig, profile, tools};

#[test]
fn the_typed_test_config_loads_as_the_written_text_does() {
    let text_folder = tempfile::tempdir().unwrap();
    let typed_folder = tempfile::tempdir().unwrap();
    // Both name their database in their own folder; the same folder for the comparison.
    let text = load(
        &write_config(text_folder.path(), "http://127.0.0.1:9/v1"),
        &test_env(&[]),
    );
    let typed = load(
        &TestConfig::new(text_folder.path(), "http://127.0.0.1:9/v1").write(typed_folder.path()),
        &test_env(&[]),
    );
    assert!(text.config == typed.config, "the typed config differs");
    assert_eq!(
        render_resolved_profiles(&text),
        render_resolved_profiles(&typed)
    );
    assert_eq!(text.default_profile_id, typed.default_profile_id);
}

#[test]
fn members_channels_and_profiles_are_added_by_method() {
    let folder = tempfile::tempdir().unwrap();
    let config = TestConfig::new(folder.path(), "http://127.0.0.1:9/v1")
        .on_telegram("alice", 1001)
        .on_telegram("carol", 1003)
        .parent("alice")
        .telegram("http://127.0.0.1:9", folder.path())
        .profile(hearth::config::ServiceProfileConfig {
            slash_commands: vec!["/secure".into()],
            tools_config: Some(tools(
                &["profile_get", "profile_update"],
                &["profile_update"],
            )),
            ..profile("secure")
        });
    let loaded = load(
        &config.write(folder.path()),
        &test_env(&[("TEST_TELEGRAM_TOKEN", "123:abc")]),
    );
    let family = &loaded.config.family;
    assert_eq!(family.len(), 3);
    assert_eq!(family[0].telegram_user_id, Some(1001));
    assert_eq!(family[0].role, hearth::config::FamilyRole::Parent);
    assert_eq!(
        (family[2].id.as_str(), family[2].telegram_user_id),
        ("carol", Some(1003))
    );
    assert!(loaded.config.channels.telegram.enabled);
    let secure = loaded.profiles.iter().find(|p| p.id == "secure").unwrap();
    assert_eq!(
        secure.tools.confirm_tools,
        vec!["profile_update".to_string()]
    );
}
