//! A real Synapse with hearth's account and a family, and hearth's config for it: shared
//! by the Matrix tests and the Matrix benchmark (each uses part of it); the files hearth
//! stored for a message (`files_in`).
#![allow(dead_code)]

use matrix_sdk::ruma::OwnedRoomId;

use super::hearth_app::write_config;
use super::llm_server::ScriptedLlmServer;
use super::matrix_member::{MatrixMember, NewRoom, ReceivedMessage};
use super::synapse::{RegisteredUser, Synapse};

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

/// The test config in `folder` with Matrix on `server` as `@hearth`, alice and bob in the
/// family.
pub fn write_matrix_config(
    folder: &std::path::Path,
    llm: &ScriptedLlmServer,
    server: &Homeserver,
    extra_profiles: &str,
) -> std::path::PathBuf {
    let path = write_config(folder, &llm.base_url());
    let text = std::fs::read_to_string(&path)
        .expect("test config")
        .replace(
            "{ id: alice, name: Alice }",
            &format!(
                "{{ id: alice, name: Alice, matrix_user_id: \"{}\" }}",
                server.alice.user_id
            ),
        )
        .replace(
            "{ id: bob, name: Bob }",
            &format!(
                "{{ id: bob, name: Bob, matrix_user_id: \"{}\" }}",
                server.bob.user_id
            ),
        );
    let text = format!(
        "{text}{extra_profiles}channels:\n  matrix: {{ enabled: true, homeserver_url: \"{}\", \
         user_id: \"{}\", password_env: TEST_MATRIX_PASSWORD, store_path: \"{}\", \
         store_passphrase_env: TEST_MATRIX_STORE_PASSPHRASE, attachments_dir: \"{}\" }}\n",
        server.synapse.base_url(),
        server.bot.user_id,
        folder.join("matrix").display(),
        folder.join("attachments").display(),
    );
    std::fs::write(&path, text).expect("test config written");
    path
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
