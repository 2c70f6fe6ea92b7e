//! Strangers' rooms and members' own rooms on a real Synapse: while a code adding a member
//! is open hearth accepts strangers' room invites, but for a few rooms only, and leaves
//! those no family member is in once no code is open; a room where someone besides the
//! member is invited is no one's own, so a code asked there goes to the member's direct
//! chat with hearth instead.

use std::time::{Duration, Instant};

use matrix_sdk::ruma::events::room::member::MembershipState;
use matrix_sdk::ruma::{RoomId, UserId};

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::ScriptedLlmServer;
use crate::support::matrix_family::{
    homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;
use crate::support::telegram_family::code_in;

/// Rooms hearth joins on strangers' invites at once, at most (the README's number).
const STRANGER_ROOMS: usize = 5;

/// Wait until `member`'s sync shows `user_id` in `room_id` as `membership`.
async fn membership_becomes(
    member: &MatrixMember,
    room_id: &RoomId,
    user_id: &str,
    membership: MembershipState,
) {
    let user_id = UserId::parse(user_id).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(room) = member.client().get_room(room_id)
            && let Ok(Some(found)) = room.get_member_no_sync(&user_id).await
            && *found.membership() == membership
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{user_id} never {membership:?} in {room_id}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[actix::test]
async fn strangers_rooms_are_few_while_a_code_is_open_and_left_when_it_closes() {
    let Some(server) = homeserver("matrix_stranger_rooms").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = write_matrix_config(folder.path(), &llm, &server, &[]);
    let app = Hearth::start_from(folder, &path, &matrix_env()).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let alices_room = room_with_hearth(&alice, &server, false, &[]).await;
    alice.send_text(&alices_room, "!invite child Sam").await;
    let invite = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("Invite code for Sam")
    })
    .await;
    let code = code_in(&invite.body).expect("a code");

    // One more stranger than hearth takes rooms from.
    let mut strangers = Vec::new();
    for n in 0..=STRANGER_ROOMS {
        let user = server
            .register(&format!("stranger{n}"), "stranger-password")
            .await;
        let stranger = MatrixMember::login(&server.synapse, &user).await;
        let room = stranger
            .create_room(crate::support::matrix_member::NewRoom::plain_with(
                &server.bot.user_id,
            ))
            .await;
        strangers.push((stranger, room));
    }
    let bot = server.bot.user_id.as_str();
    for (stranger, room) in &strangers[..STRANGER_ROOMS] {
        stranger.wait_until_joined(room, bot).await;
    }
    let (last, last_room) = &strangers[STRANGER_ROOMS];
    membership_becomes(last, last_room, bot, MembershipState::Leave).await;

    // The first stranger joins the family with the one open code: no code is open now.
    let (sam, sams_room) = &strangers[0];
    sam.send_text(sams_room, &format!("!join {code}")).await;
    reply_from_hearth(sam, &server, |message| {
        message.body.contains("Welcome to the family, Sam!")
    })
    .await;
    // Hearth leaves the strangers' rooms no member is in, and stays in Sam's.
    for (stranger, room) in &strangers[1..STRANGER_ROOMS] {
        membership_becomes(stranger, room, bot, MembershipState::Leave).await;
    }
    sam.send_text(sams_room, "still there?").await;
    reply_from_hearth(sam, &server, |message| {
        message.body.contains("echo: still there?")
    })
    .await;
    app.stop().await;
}

#[actix::test]
async fn a_room_with_someone_else_invited_is_no_ones_own() {
    let Some(server) = homeserver("matrix_own_rooms").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = write_matrix_config(folder.path(), &llm, &server, &[]);
    let app = Hearth::start_from(folder, &path, &matrix_env()).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let own = room_with_hearth(&alice, &server, false, &[]).await;
    // Bob is invited and has not joined: only alice and hearth are in it, yet it is not
    // alice's alone.
    let shared = room_with_hearth(&alice, &server, false, &[server.bob.user_id.as_str()]).await;
    // hearth has found its rooms once it answers in the first.
    alice.send_text(&own, "hello").await;
    reply_from_hearth(&alice, &server, |message| {
        message.body.contains("echo: hello")
    })
    .await;

    alice.send_text(&shared, "!link").await;
    let notice = reply_from_hearth(&alice, &server, |message| {
        message
            .body
            .contains("I sent the link code to our private chat")
    })
    .await;
    assert_eq!(notice.room_id, shared);
    let code = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("To be the same Alice")
    })
    .await;
    assert_eq!(code.room_id, own, "the code goes to alice's own room only");
    assert!(
        alice
            .messages()
            .iter()
            .filter(|message| message.room_id == shared)
            .all(|message| code_in(&message.body).is_none()),
        "a code in the shared room"
    );
    app.stop().await;
}
