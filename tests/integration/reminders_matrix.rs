//! Reminders on Matrix, against a real Synapse: a reminder set in an encrypted room fires
//! there once with ✅ and ⏰ seeded as reactions; ⏰ from its member snoozes it (the prompt
//! is edited to say until when, one snooze stored).

use serde_json::json;

use crate::reminders_telegram::REMIND_PROFILE;
use crate::support::hearth_app::TestApp;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;

#[actix::test]
async fn a_reminder_fires_once_in_the_room_and_its_member_snoozes_it_with_a_reaction() {
    let Some(server) = homeserver("matrix_reminders").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = write_matrix_config(folder.path(), &llm, &server, REMIND_PROFILE);
    let app = TestApp::start_from(folder, &path, &matrix_env()).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;

    llm.push_many([
        Step::ToolCalls(vec![(
            "schedule_reminder".into(),
            json!({"text": "call grandma", "delay": "PT2S"}),
        )]),
        Step::Reply("I'll remind you.".into()),
    ]);
    alice
        .send_text(&room, "!remind in 2 seconds remind me to call grandma")
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "I'll remind you."
    })
    .await;
    let prompt = reply_from_hearth(&alice, &server, |message| {
        message.body.starts_with("⏰ Reminder: call grandma")
    })
    .await;
    assert_eq!(prompt.room_id, room);
    assert!(
        prompt
            .body
            .contains("React with ✅ when done or ⏰ to snooze"),
        "{}",
        prompt.body
    );
    let seeded: Vec<String> = alice
        .wait_for_reactions(&prompt.event_id, 2)
        .await
        .into_iter()
        .map(|reaction| reaction.key)
        .collect();
    assert_eq!(seeded, ["✅", "⏰"]);

    alice.send_reaction(&room, &prompt.event_id, "⏰").await;
    let edited = alice
        .wait_for_message(&server.bot.user_id, |message| {
            message.relates_to.as_ref() == Some(&prompt.event_id)
                && message
                    .new_body()
                    .is_some_and(|body| body.contains("⏰ Snoozed until"))
        })
        .await;
    assert_eq!(edited.room_id, room);
    let firings = app
        .running
        .stores
        .schedules
        .schedules_of(&"alice".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(
        firings.iter().filter(|s| s.snoozed_from.is_some()).count(),
        1,
        "one snooze stored"
    );
    // Fired once: one prompt in the room.
    let prompts = alice
        .messages()
        .into_iter()
        .filter(|message| {
            message.rel_type.as_deref() != Some("m.replace")
                && message.body.starts_with("⏰ Reminder: call grandma")
        })
        .count();
    assert_eq!(prompts, 1);
    app.stop().await;
}
