//! Joining the family by invite on Matrix, against a real Synapse in encrypted rooms: while
//! a code is open hearth accepts a stranger's room, the stranger's `!join CODE` makes them
//! a member who then chats and whose role counts, and the inviting parent is told in their
//! own room.

use crate::support::hearth_app::Hearth;
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;
use crate::support::telegram_family::code_in;

#[actix::test]
async fn a_stranger_joins_by_invite_on_matrix_and_chats() {
    let Some(server) = homeserver("matrix_invites").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = write_matrix_config(folder.path(), &llm, &server, &[]);
    let app = Hearth::start_from(folder, &path, &matrix_env()).await;
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let alices_room = room_with_hearth(&alice, &server, true, &[]).await;

    alice.send_text(&alices_room, "!invite child Mallory").await;
    let invite = reply_from_hearth(&alice, &server, |message| {
        message.body.contains("Invite code for Mallory as a child")
    })
    .await;
    let code = code_in(&invite.body).expect("a code");

    // A code is open: hearth accepts the stranger's room.
    let mallory = MatrixMember::login(&server.synapse, &server.stranger).await;
    let mallorys_room = room_with_hearth(&mallory, &server, true, &[]).await;
    mallory
        .send_text(&mallorys_room, &format!("!join {code}"))
        .await;
    reply_from_hearth(&mallory, &server, |message| {
        message
            .body
            .contains("Welcome to the family, Mallory! You joined as a child")
    })
    .await;
    let told = reply_from_hearth(&alice, &server, |message| {
        message
            .body
            .contains("Mallory joined the family as a child (on matrix")
    })
    .await;
    assert_eq!(told.room_id, alices_room);

    llm.push(Step::Reply("Hi Mallory, welcome!".into()));
    mallory.send_text(&mallorys_room, "hello hearth").await;
    let reply = reply_from_hearth(&mallory, &server, |message| {
        message.body == "Hi Mallory, welcome!"
    })
    .await;
    assert_eq!(reply.room_id, mallorys_room);

    mallory
        .send_text(&mallorys_room, "!invite parent Eve")
        .await;
    reply_from_hearth(&mallory, &server, |message| {
        message.body.contains("Only a parent can invite")
    })
    .await;
    app.stop().await;
}
