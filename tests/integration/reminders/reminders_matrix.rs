//! Reminders on Matrix, against a real Synapse: a reminder set in an encrypted room fires
//! there once with ✅ and ⏰ seeded as reactions; ⏰ from its member snoozes it (the prompt
//! is edited to say until when, one snooze stored). `!reminders` lists the member's
//! reminders by number; a number in reply to that list cancels that one (the list edited
//! to say so), and a number not on it is answered as such.

use matrix_sdk::ruma::OwnedRoomId;
use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    Homeserver, homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;
use crate::support::reminders::remind_profile;

/// hearth on a real Synapse, Alice in an encrypted room with it, where she set a reminder
/// to call grandma.
struct Reminded {
    server: Homeserver,
    llm: ScriptedLlmServer,
    app: Hearth,
    alice: MatrixMember,
    room: OwnedRoomId,
}

/// Alice asks for a reminder to call grandma in `delay` (ISO 8601) and is told it is set;
/// `None` when no Synapse can run here.
async fn alice_sets_a_reminder(test: &str, delay: &str) -> Option<Reminded> {
    let server = homeserver(test).await?;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = write_matrix_config(folder.path(), &llm, &server, &[remind_profile()]);
    let app = Hearth::start_from(folder, &path, &matrix_env()).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, true, &[]).await;
    llm.push_many([
        Step::ToolCalls(vec![(
            "schedule_reminder".into(),
            json!({"text": "call grandma", "delay": delay}),
        )]),
        Step::Reply("I'll remind you.".into()),
    ]);
    alice
        .send_text(&room, "!remind remind me to call grandma")
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "I'll remind you."
    })
    .await;
    Some(Reminded {
        server,
        llm,
        app,
        alice,
        room,
    })
}

#[actix::test]
async fn a_reminder_fires_once_in_the_room_and_its_member_snoozes_it_with_a_reaction() {
    let Some(Reminded {
        server,
        app,
        alice,
        room,
        llm: _llm,
    }) = alice_sets_a_reminder("matrix_reminders", "PT2S").await
    else {
        return;
    };
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
        .app()
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

#[actix::test]
async fn a_number_in_reply_to_the_reminder_list_cancels_that_reminder() {
    let Some(Reminded {
        server,
        llm,
        app,
        alice,
        room,
    }) = alice_sets_a_reminder("matrix_reminder_list", "PT2H").await
    else {
        return;
    };
    let schedules = app
        .app()
        .stores
        .schedules
        .schedules_of(&"alice".parse().unwrap())
        .await
        .unwrap();
    let id = schedules[0].id;

    alice.send_text(&room, "!reminders").await;
    let list = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("“call grandma”")
    })
    .await;
    assert_eq!(list.room_id, room);
    assert!(
        list.body
            .starts_with(&format!("#{id} “call grandma”: Today at "))
            || list
                .body
                .starts_with(&format!("#{id} “call grandma”: Tomorrow")),
        "{}",
        list.body
    );
    assert!(
        list.body.ends_with(&format!(
            "reply to this message with its number (e.g. {id})."
        )),
        "{}",
        list.body
    );

    // A number the list does not hold cancels nothing.
    let stray = id + 41;
    alice
        .send_reply(&room, &list.event_id, &stray.to_string())
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == format!("#{stray} is not on this list, which has #{id}.")
    })
    .await;

    alice
        .send_reply(&room, &list.event_id, &format!("cancel #{id}"))
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == format!("Cancelled #{id}: “call grandma”.")
    })
    .await;
    let edited = alice
        .wait_for_message(&server.bot.user_id, |message| {
            message.relates_to.as_ref() == Some(&list.event_id)
                && message
                    .new_body()
                    .is_some_and(|body| body.contains("— ❌ cancelled"))
        })
        .await;
    assert_eq!(edited.room_id, room);
    let stored = app.app().stores.schedules.schedule(id).await.unwrap();
    assert_eq!(
        stored.map(|schedule| schedule.status),
        Some(hearth::ports::ScheduleStatus::Cancelled)
    );
    // Nothing of it reached the model: two turns' worth of requests, the reminder's.
    assert_eq!(llm.requests().len(), 2);
    app.stop().await;
}
