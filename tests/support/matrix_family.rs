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

/// A homeserver with the bot's account and three people: alice and bob (family) and a stranger,
/// each a user of this test alone (`@<prefix>alice:localhost`, ...).
pub struct Homeserver {
    pub synapse: HomeSynapse,
    /// What this test's localparts start with (`Synapse::fresh_prefix`).
    pub prefix: String,
    pub bot: RegisteredUser,
    pub alice: RegisteredUser,
    pub bob: RegisteredUser,
    pub stranger: RegisteredUser,
}

/// The test process's shared Synapse, or one a test has to itself to stop and restart.
pub enum HomeSynapse {
    Shared(&'static Synapse),
    Own(Synapse),
}

impl std::ops::Deref for HomeSynapse {
    type Target = Synapse;

    fn deref(&self) -> &Synapse {
        match self {
            HomeSynapse::Shared(synapse) => synapse,
            HomeSynapse::Own(synapse) => synapse,
        }
    }
}

impl HomeSynapse {
    /// `Synapse::stop`, on a server of the test's own.
    pub async fn stop(&mut self) {
        self.own().stop().await
    }

    /// `Synapse::start_again`, on a server of the test's own.
    pub async fn start_again(&mut self) {
        self.own().start_again().await
    }

    fn own(&mut self) -> &mut Synapse {
        match self {
            HomeSynapse::Own(synapse) => synapse,
            HomeSynapse::Shared(_) => panic!(
                "the shared synapse serves other tests: a test that stops or restarts it \
                 starts its own (homeserver_of_its_own)"
            ),
        }
    }
}

impl Homeserver {
    /// Make another user of this test: `name` with the test's prefix.
    pub async fn register(&self, name: &str, password: &str) -> RegisteredUser {
        let localpart = format!("{}{name}", self.prefix);
        self.synapse.register(&localpart, password, false).await
    }
}

/// The test process's shared Synapse with this test's own users, or `None` when `test` is
/// skipped (`Synapse::shared_or_skip`).
pub async fn homeserver(test: &str) -> Option<Homeserver> {
    let synapse = Synapse::shared_or_skip(test)?;
    Some(with_users(HomeSynapse::Shared(synapse), Synapse::fresh_prefix(test)).await)
}

/// A Synapse of `test`'s own, for a test that stops or restarts it (`Synapse::start_or_skip`);
/// its users have no prefix (`@alice:localhost`).
pub async fn homeserver_of_its_own(test: &str) -> Option<Homeserver> {
    let synapse = Synapse::start_or_skip(test)?;
    Some(with_users(HomeSynapse::Own(synapse), String::new()).await)
}

async fn with_users(synapse: HomeSynapse, prefix: String) -> Homeserver {
    let user = |name: &str| format!("{prefix}{name}");
    let bot = synapse.register(&user("hearth"), BOT_PASSWORD, false).await;
    let alice = synapse
        .register(&user("alice"), "alice-password", false)
        .await;
    let bob = synapse.register(&user("bob"), "bob-password", false).await;
    let stranger = synapse
        .register(&user("mallory"), "mallory-password", false)
        .await;
    Homeserver {
        synapse,
        prefix,
        bot,
        alice,
        bob,
        stranger,
    }
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
