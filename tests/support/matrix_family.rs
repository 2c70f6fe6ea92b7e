//! A real Synapse with hearth's account and a family, and hearth's config for it: shared
//! by the Matrix tests and the Matrix benchmark (each uses part of it); the files hearth
//! stored for a message (`files_in`).
#![allow(dead_code)]

use hearth::config::ServiceProfileConfig;
use matrix_sdk::ruma::OwnedRoomId;

use super::llm_server::ScriptedLlmServer;
use super::matrix_member::{MatrixMember, NewRoom, ReceivedMessage};
use super::synapse::{RegisteredUser, Synapse};
use super::test_config::TestConfig;

pub const BOT_PASSWORD: &str = "hearth-bot-password";

/// A homeserver with the bot's account and three people: alice and bob (family) and a stranger.
pub struct Homeserver {
    pub synapse: Synapse,
    pub bot: RegisteredUser,
    pub alice: RegisteredUser,
    pub bob: RegisteredUser,
    pub stranger: RegisteredUser,
}

pub async fn homeserver(test: &str) -> Option<Homeserver> {
    let synapse = Synapse::start_or_skip(test)?;
    let bot = synapse.register("hearth", BOT_PASSWORD, false).await;
    let alice = synapse.register("alice", "alice-password", false).await;
    let bob = synapse.register("bob", "bob-password", false).await;
    let stranger = synapse.register("mallory", "mallory-password", false).await;
    Some(Homeserver {
        synapse,
        bot,
        alice,
        bob,
        stranger,
    })
}

/// The secrets a test hearth on Matrix needs.
pub fn matrix_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("TEST_MATRIX_PASSWORD", BOT_PASSWORD),
        ("TEST_MATRIX_STORE_PASSPHRASE", "store passphrase for tests"),
    ]
}

/// The test config for `folder` with Matrix on `server` as `@hearth`, alice and bob in the
/// family.
pub fn matrix_family(
    folder: &std::path::Path,
    llm: &ScriptedLlmServer,
    server: &Homeserver,
) -> TestConfig {
    TestConfig::new(folder, &llm.base_url())
        .on_matrix("alice", &server.alice.user_id)
        .on_matrix("bob", &server.bob.user_id)
        .matrix(&server.synapse.base_url(), &server.bot.user_id, folder)
}

/// `matrix_family` with `profiles`, written in `folder`.
pub fn write_matrix_config(
    folder: &std::path::Path,
    llm: &ScriptedLlmServer,
    server: &Homeserver,
    profiles: &[ServiceProfileConfig],
) -> std::path::PathBuf {
    matrix_family(folder, llm, server)
        .profiles(profiles)
        .write(folder)
}

/// `member` opens a room with hearth (and `others`) and waits until hearth joined.
pub async fn room_with_hearth(
    member: &MatrixMember,
    server: &Homeserver,
    encrypted: bool,
    others: &[&str],
) -> OwnedRoomId {
    let mut room = if encrypted {
        NewRoom::encrypted_with(&server.bot.user_id)
    } else {
        NewRoom::plain_with(&server.bot.user_id)
    };
    room.invite
        .extend(others.iter().map(|user| user.to_string()));
    let room_id = member.create_room(room).await;
    member
        .wait_until_joined(&room_id, &server.bot.user_id)
        .await;
    room_id
}

pub async fn reply_from_hearth(
    member: &MatrixMember,
    server: &Homeserver,
    matches: impl Fn(&ReceivedMessage) -> bool,
) -> ReceivedMessage {
    member
        .wait_for_message(&server.bot.user_id, |message| {
            message.rel_type.as_deref() != Some("m.replace") && matches(message)
        })
        .await
}

/// Every file in the message folders of the attachments folder `folder` (none if it is
/// missing).
pub fn files_in(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|entry| {
            std::fs::read_dir(entry.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|entry| entry.path())
        .collect()
}
