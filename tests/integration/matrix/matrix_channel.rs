//! The Matrix channel end to end against a real Synapse on loopback, with real matrix-sdk
//! clients as the family: invites, encrypted and plain rooms both ways, commands,
//! reaction confirmations, a restart of hearth and a restart of the homeserver.

use std::time::{Duration, Instant};

use hearth::actors::processing::DECLINED_RESULT;
use serde_json::Value;
use tempfile::TempDir;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    Homeserver, homeserver, homeserver_of_its_own, matrix_env, reply_from_hearth, room_with_hearth,
    write_matrix_config,
};
use crate::support::matrix_member::{MatrixMember, NewRoom};
use crate::support::telegram_family::secure_profile;

/// hearth on Matrix as the test's `hearth` user, alice and bob in the family.
async fn start_on_matrix(
    llm: &ScriptedLlmServer,
    server: &Homeserver,
    profiles: &[hearth::config::ServiceProfileConfig],
    folder: Option<TempDir>,
    overrides: &[(&str, &str)],
) -> Hearth {
    let folder = folder.unwrap_or_else(|| tempfile::tempdir().expect("temporary folder"));
    let path = write_matrix_config(folder.path(), llm, server, profiles);
    let mut env = matrix_env();
    env.extend_from_slice(overrides);
    Hearth::start_from(folder, &path, &env).await
}

fn device_of(folder: &std::path::Path) -> String {
    let session: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("matrix/session.json")).expect("session saved"),
    )
    .unwrap();
    session["device_id"].as_str().unwrap().to_string()
}

#[actix::test]
async fn an_encrypted_chat_works_both_ways_and_strangers_are_refused() {
    let Some(server) = homeserver("matrix_encrypted_chat").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start_on_matrix(&llm, &server, &[], None, &[]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;

    llm.push(Step::Reply("Hi **Alice**, 2 < 3.".into()));
    let asked = alice.send_text(&room, "hello hearth").await;
    let reply = reply_from_hearth(&alice, &server, |message| message.body.contains("Hi")).await;
    assert!(
        reply.encrypted,
        "the reply in an encrypted room is encrypted"
    );
    assert_eq!(reply.msgtype, "m.notice");
    assert_eq!(reply.body, "Hi Alice, 2 < 3.");
    let html = reply.formatted_body.clone().unwrap();
    assert!(
        html.contains("<strong>Alice</strong>") && html.contains("&lt;"),
        "{html}"
    );
    assert_eq!(reply.in_reply_to.as_ref(), Some(&asked));
    alice
        .wait_for_read_receipt(&room, &server.bot.user_id, &asked)
        .await;
    // The model read the decrypted text.
    assert!(
        llm.requests()[0].body["messages"]
            .to_string()
            .contains("hello hearth")
    );

    // A reply brings the message it answers as context; "typing…" shows meanwhile.
    llm.push(Step::Delay(
        Duration::from_millis(1500),
        Box::new(Step::Reply("Tomorrow too.".into())),
    ));
    alice
        .send_reply(&room, &reply.event_id, "and tomorrow?")
        .await;
    alice
        .wait_for_typing(&room, &server.bot.user_id, true)
        .await;
    reply_from_hearth(&alice, &server, |message| message.body == "Tomorrow too.").await;
    let seen = llm.requests()[1].body["messages"].to_string();
    assert!(
        seen.contains("(Replying to hearth (you): “Hi Alice, 2 < 3.”)\\nand tomorrow?"),
        "{seen}"
    );

    // A stranger's invitation is refused: hearth never joins.
    let stranger = MatrixMember::login(&server.synapse, &server.stranger).await;
    let theirs = stranger
        .create_room(NewRoom::plain_with(&server.bot.user_id))
        .await;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let room = stranger.room(&theirs);
        let member = room
            .get_member(server.bot.user_id.as_str().try_into().unwrap())
            .await
            .ok()
            .flatten();
        if member.is_some_and(|member| {
            *member.membership() == matrix_sdk::ruma::events::room::member::MembershipState::Leave
        }) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "hearth never refused the stranger's invite"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(llm.requests().len(), 2);
    app.stop().await;
}

#[actix::test]
async fn commands_with_slash_or_bang_reach_their_profile_and_help_lists_them() {
    let Some(server) = homeserver("matrix_commands").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start_on_matrix(&llm, &server, &[secure_profile()], None, &[]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, false, &[]).await;

    llm.push(Step::Reply("Focused.".into()));
    alice.send_text(&room, "!focus plan the week").await;
    reply_from_hearth(&alice, &server, |message| message.body == "Focused.").await;
    let request = &llm.requests()[0].body;
    assert!(
        request["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You are focused.")
    );
    assert_eq!(
        request["messages"].as_array().unwrap().last().unwrap()["content"],
        "plan the week"
    );
    alice.send_text(&room, "/help").await;
    let help = reply_from_hearth(&alice, &server, |message| message.body.contains("/cancel")).await;
    assert!(help.body.contains("/secure"), "{}", help.body);
    assert_eq!(llm.requests().len(), 1);
    app.stop().await;
}

#[actix::test]
async fn reactions_confirm_or_deny_and_only_the_member_asked_counts() {
    let Some(server) = homeserver("matrix_reactions").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start_on_matrix(&llm, &server, &[secure_profile()], None, &[]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let bob = MatrixMember::login(&server.synapse, &server.bob).await;
    let room = room_with_hearth(&alice, &server, true, &[&server.bob.user_id]).await;
    let invited = bob.wait_for_invite().await;
    bob.join(&invited).await;

    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            serde_json::json!({"key": "city", "value": "Berlin"}),
        )]),
        Step::Reply("Done: Berlin.".into()),
    ]);
    alice.send_text(&room, "/secure I live in Berlin").await;
    let prompt = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("profile_update")
    })
    .await;
    assert!(prompt.body.contains("Berlin"), "{}", prompt.body);
    let seeded = alice.wait_for_reactions(&prompt.event_id, 2).await;
    let keys: Vec<&str> = seeded
        .iter()
        .map(|reaction| reaction.key.as_str())
        .collect();
    assert_eq!(keys, ["✅", "❌"]);

    // Bob's reaction is not an answer.
    bob.send_reaction(&room, &prompt.event_id, "✅").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(llm.requests().len(), 1);
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert!(!facts.contains_key("city"), "{facts:?}");

    alice.send_reaction(&room, &prompt.event_id, "✅").await;
    let edit = alice
        .wait_for_message(&server.bot.user_id, |message| {
            message.relates_to.as_ref() == Some(&prompt.event_id)
                && message
                    .new_body()
                    .is_some_and(|body| body.ends_with("✅ Confirmed by Alice."))
        })
        .await;
    assert_eq!(edit.rel_type.as_deref(), Some("m.replace"));
    reply_from_hearth(&alice, &server, |message| message.body == "Done: Berlin.").await;
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Berlin"));

    // ❌ declines, and the model is told.
    llm.push_many([
        Step::ToolCalls(vec![(
            "profile_update".into(),
            serde_json::json!({"key": "city", "value": "Paris"}),
        )]),
        Step::Reply("Kept Berlin.".into()),
    ]);
    alice.send_text(&room, "/secure I live in Paris").await;
    let prompt = reply_from_hearth(&alice, &server, |message| message.body.contains("Paris")).await;
    alice.wait_for_reactions(&prompt.event_id, 2).await;
    alice.send_reaction(&room, &prompt.event_id, "❌").await;
    reply_from_hearth(&alice, &server, |message| message.body == "Kept Berlin.").await;
    let seen = llm.requests()[3].body["messages"].to_string();
    assert!(seen.contains(DECLINED_RESULT), "{seen}");
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Berlin"));
    app.stop().await;
}

#[actix::test]
async fn a_restart_keeps_the_device_replays_nothing_and_still_decrypts() {
    let Some(server) = homeserver("matrix_restart").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start_on_matrix(&llm, &server, &[], None, &[]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    llm.push(Step::Reply("First answer.".into()));
    alice.send_text(&room, "first").await;
    reply_from_hearth(&alice, &server, |message| message.body == "First answer.").await;
    let device = device_of(app.folder());
    let folder = app.stop().await.folder();

    // Written while hearth is down, encrypted for the device it had.
    alice.send_text(&room, "second").await;
    llm.push(Step::Reply("Second answer.".into()));
    let app = start_on_matrix(&llm, &server, &[], Some(folder), &[]).await;
    reply_from_hearth(&alice, &server, |message| message.body == "Second answer.").await;
    assert_eq!(
        device_of(app.folder()),
        device,
        "the same device after a restart"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let answers: Vec<String> = alice
        .messages()
        .into_iter()
        .filter(|message| message.sender.as_str() == server.bot.user_id)
        .map(|message| message.body)
        .collect();
    assert_eq!(answers, ["First answer.", "Second answer."]);
    assert_eq!(llm.requests().len(), 2);
    app.stop().await;
}

#[actix::test]
async fn hearth_syncs_again_after_the_homeserver_restarts() {
    let Some(mut server) = homeserver_of_its_own("matrix_homeserver_restart").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start_on_matrix(&llm, &server, &[], None, &[]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, false, &[]).await;
    server.synapse.stop().await;
    // hearth notices: readiness says it cannot sync.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, body) = app.get("/readyz").await;
        if status == 503 && body.contains("matrix") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "readiness never reported the outage: {body}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    server.synapse.start_again().await;
    llm.push(Step::Reply("Back again.".into()));
    alice.send_text(&room, "are you there?").await;
    reply_from_hearth(&alice, &server, |message| message.body == "Back again.").await;
    app.wait_until_ready().await;
    app.stop().await;
}

#[actix::test]
async fn a_message_hearth_cannot_decrypt_is_reported_and_counted() {
    let Some(server) = homeserver("matrix_undecryptable").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start_on_matrix(&llm, &server, &[], None, &[]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    // An encrypted event for a session hearth was never given a key to: what a message
    // from an unverified or key-withholding device looks like.
    let url = format!(
        "{}/_matrix/client/v3/rooms/{}/send/m.room.encrypted/utd-1",
        server.synapse.base_url(),
        urlencode(room.as_str())
    );
    let sent: Value = reqwest::Client::new()
        .put(url)
        .bearer_auth(&server.alice.access_token)
        .json(&serde_json::json!({
            "algorithm": "m.megolm.v1.aes-sha2",
            "ciphertext": "AwgAEnACgAkLmt6qF84IK++J7UDH2Za1YVchHyprqTqsg2yyOwAtHaZTwyNg37afzg",
            "device_id": server.alice.device_id,
            "sender_key": "peI8w6h0Yp1T9cYiH+WV9ShbqJBJFXEbwVRwnDmLhV4",
            "session_id": "vQ9Vo1Yi1F4uQYGvtjA3kMfQ0Q7yqfUc9HbSxAvCYNQ"
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let event_id = sent["event_id"].as_str().unwrap().to_string();
    let notice = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("I can't read your last message")
    })
    .await;
    assert_eq!(
        notice.in_reply_to.as_ref().map(|id| id.as_str()),
        Some(event_id.as_str())
    );
    let (_, metrics) = app.get("/metrics").await;
    assert!(
        metrics.contains("hearth_matrix_undecryptable_total 1"),
        "{metrics}"
    );
    let (_, ready) = app.get("/readyz").await;
    assert!(ready.contains("could not be decrypted"), "{ready}");
    assert!(llm.requests().is_empty());
    app.stop().await;
}

fn urlencode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

#[actix::test]
async fn a_yes_reply_answers_a_prompt_and_an_unanswered_one_expires() {
    let Some(server) = homeserver("matrix_reply_and_expiry").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let timeout = (
        "HEARTH__DEFAULT_PROFILE_SETTINGS__PROCESSING_CONFIG__CONFIRMATION_TIMEOUT_SECONDS",
        "4",
    );
    let app = start_on_matrix(&llm, &server, &[secure_profile()], None, &[timeout]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    let script = |city: &str| {
        [
            Step::ToolCalls(vec![(
                "profile_update".into(),
                serde_json::json!({"key": "city", "value": city}),
            )]),
            Step::Reply(format!("Done: {city}.")),
        ]
    };
    llm.push_many(script("Rome"));
    alice.send_text(&room, "/secure I live in Rome").await;
    let prompt = reply_from_hearth(&alice, &server, |message| message.body.contains("Rome")).await;
    alice.send_reply(&room, &prompt.event_id, "yes").await;
    reply_from_hearth(&alice, &server, |message| message.body == "Done: Rome.").await;
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Rome"));

    llm.push_many(script("Oslo"));
    alice.send_text(&room, "/secure I live in Oslo").await;
    let prompt = reply_from_hearth(&alice, &server, |message| message.body.contains("Oslo")).await;
    alice
        .wait_for_message(&server.bot.user_id, |message| {
            message.relates_to.as_ref() == Some(&prompt.event_id)
                && message
                    .new_body()
                    .is_some_and(|body| body.ends_with("⌛ Expired: nothing was done."))
        })
        .await;
    reply_from_hearth(&alice, &server, |message| message.body == "Done: Oslo.").await;
    let facts = app
        .app()
        .stores
        .profiles
        .get(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(facts.get("city").map(String::as_str), Some("Rome"));
    app.stop().await;
}

#[actix::test]
async fn an_image_in_an_encrypted_room_is_downloaded_and_reaches_the_model() {
    let Some(server) = homeserver("matrix_image").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let app = start_on_matrix(&llm, &server, &[], None, &[]).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    let bytes: Vec<u8> = (0..1500u32).map(|index| (index % 251) as u8).collect();
    llm.push(Step::Reply("Nice photo.".into()));
    alice
        .send_image(&room, "photo.png", bytes.clone(), "look at this")
        .await;
    reply_from_hearth(&alice, &server, |message| message.body == "Nice photo.").await;
    let seen = llm.requests()[0].body["messages"].to_string();
    assert!(
        seen.contains("look at this\\n(Attached: an image, \\\"photo.png\\\", 2 KB, image/png"),
        "{seen}"
    );
    // Stored decrypted, byte for byte.
    let attachments = app.folder().join("attachments");
    let stored: Vec<std::path::PathBuf> = std::fs::read_dir(&attachments)
        .unwrap()
        .flatten()
        .flat_map(|entry| std::fs::read_dir(entry.path()).unwrap().flatten())
        .map(|entry| entry.path())
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert_eq!(std::fs::read(&stored[0]).unwrap(), bytes);
    app.stop().await;
}
