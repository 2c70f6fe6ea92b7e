//! The family is the database's, on every worker: two real hearth processes on one
//! PostgreSQL database and one Telegram bot (the fake Bot API). A member who joins through
//! the worker polling Telegram is answered by the other's `POST /inbound` at once, and a
//! removed member is a stranger there from the next message; a parent demoted through one
//! worker invites nobody through the other once the first is killed, and their unused code
//! for a parent is void; two parents demoting each other at once, on two workers, leave
//! the family one parent; a message sent again to the worker not running its turn waits
//! for that turn's reply.

use std::collections::BTreeMap;
use std::time::Duration;

use hearth::ids::FamilyRole;
use hearth::ports::{
    ConfiguredMembers, InvitePurpose, MemberChange, MemberChangeKind, NewInvite, PlatformUser,
    Redeem,
};
use serde_json::json;

use crate::support::hearth_app::{Hearth, post_with_key, test_env};
use crate::support::llm_server::{Gate, ScriptedLlmServer, Step};
use crate::support::postgres::{PostgresServer, config_on};
use crate::support::telegram::{TelegramServer, TgUser};
use crate::support::telegram_family::{TOKEN, alice, telegram_family};
use crate::support::test_config::TestConfig;
use crate::support::web_page::Member;
use crate::support::workers::telegram_leader_pid;

/// A failover takes a lease time and a poll: this long at most.
const AFTER_A_FAILOVER: Duration = Duration::from_secs(40);

/// `needle` said by the bot in `chat` within `within`.
async fn said_within(telegram: &TelegramServer, chat: i64, needle: &str, within: Duration) {
    let found = telegram
        .wait_for_message(
            chat,
            |message| message.from_bot && message.text.as_deref().unwrap_or("").contains(needle),
            within,
        )
        .await;
    assert!(
        found.is_some(),
        "{needle:?} never said in {chat}: {:?}",
        telegram.bot_texts_in(chat)
    );
}

/// The code in the bot's last message in `chat` containing `needle`.
async fn code_said(telegram: &TelegramServer, chat: i64, needle: &str) -> String {
    said_within(telegram, chat, needle, AFTER_A_FAILOVER).await;
    let text = telegram
        .bot_texts_in(chat)
        .into_iter()
        .rev()
        .find(|text| text.contains(needle))
        .unwrap();
    crate::support::telegram_family::code_in(&text).unwrap_or_else(|| panic!("no code in {text:?}"))
}

struct Family {
    _folder: tempfile::TempDir,
    _server: &'static PostgresServer,
    env: BTreeMap<String, String>,
    workers: Vec<Option<Hearth>>,
}

impl Family {
    /// Two workers on a fresh database, alice (1001) and bob (1002) parents on Telegram.
    async fn on_telegram(llm: &ScriptedLlmServer, telegram: &TelegramServer) -> Option<Family> {
        let server = PostgresServer::shared()?;
        let database_url = server.fresh_database().await;
        let folder = tempfile::tempdir().unwrap();
        let config = telegram_family(folder.path(), llm, telegram)
            .database(&database_url)
            .write(folder.path());
        let env = test_env(&[("TEST_TELEGRAM_TOKEN", TOKEN)]);
        let workers = (0..2).map(|_| Some(Hearth::spawn(&config, &env))).collect();
        Some(Family {
            _folder: folder,
            _server: server,
            env,
            workers,
        })
    }

    fn alive(&self) -> impl Iterator<Item = &Hearth> {
        self.workers.iter().flatten()
    }

    /// The worker leading Telegram, and the other.
    async fn leader_and_other(&self) -> (usize, usize) {
        let any = self.alive().next().unwrap();
        let pid = telegram_leader_pid(any, &self.env).await;
        let leader = self
            .workers
            .iter()
            .position(|worker| worker.as_ref().is_some_and(|worker| worker.pid() == pid))
            .expect("the leader is one of the workers");
        (leader, 1 - leader)
    }

    fn url(&self, index: usize) -> String {
        self.workers[index].as_ref().unwrap().base_url.clone()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_member_joined_on_one_worker_is_answered_by_the_other_until_removed() {
    let llm = ScriptedLlmServer::start();
    llm.set_default(Step::Echo);
    let telegram = TelegramServer::start(TOKEN);
    let Some(family) = Family::on_telegram(&llm, &telegram).await else {
        return;
    };
    let (_, other) = family.leader_and_other().await;
    telegram.push_private_text(&alice(), "/invite child Max");
    let code = code_said(&telegram, 1001, "Invite code for Max").await;
    let max = TgUser::new(3003, "Max");
    telegram.push_private_text(&max, &format!("/join {code}"));
    said_within(
        &telegram,
        3003,
        "Welcome to the family, Max!",
        AFTER_A_FAILOVER,
    )
    .await;

    // The other worker never saw the join: it answers Max at once all the same.
    let client = reqwest::Client::new();
    let inbound = format!("{}/inbound", family.url(other));
    let (status, answer) =
        post_with_key(&client, &inbound, &json!({"user_id": "max", "text": "hi"})).await;
    assert_eq!(
        (status, answer["reply"].as_str()),
        (200, Some("echo: hi")),
        "{answer}"
    );

    // Removed through the leader: a stranger to the other from the next message.
    telegram.push_private_text(&alice(), "/family remove max");
    said_within(
        &telegram,
        1001,
        "Max is no longer in the family",
        AFTER_A_FAILOVER,
    )
    .await;
    let requests = llm.request_count();
    let (status, _) = post_with_key(
        &client,
        &inbound,
        &json!({"user_id": "max", "text": "still?"}),
    )
    .await;
    assert_eq!(status, 204);
    assert_eq!(llm.request_count(), requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_parent_demoted_on_one_worker_invites_nobody_on_the_other_after_a_failover() {
    let llm = ScriptedLlmServer::start();
    let telegram = TelegramServer::start(TOKEN);
    let Some(mut family) = Family::on_telegram(&llm, &telegram).await else {
        return;
    };
    telegram.push_private_text(&alice(), "/invite parent Carol");
    let code = code_said(&telegram, 1001, "Invite code for Carol as a parent").await;
    let carol = TgUser::new(5005, "Carol");
    telegram.push_private_text(&carol, &format!("/join {code}"));
    said_within(&telegram, 5005, "You joined as a parent", AFTER_A_FAILOVER).await;
    // Carol invites a parent, then is made a child.
    telegram.push_private_text(&carol, "/invite parent Dan");
    let dans = code_said(&telegram, 5005, "Invite code for Dan as a parent").await;
    telegram.push_private_text(&alice(), "/family role carol child");
    said_within(&telegram, 1001, "Carol is now a child", AFTER_A_FAILOVER).await;

    // The worker that made the change is killed; the other takes Telegram over.
    let (leader, other) = family.leader_and_other().await;
    let killed = family.workers[leader].take().unwrap();
    let killed_pid = killed.pid();
    killed.kill();
    let deadline = std::time::Instant::now() + AFTER_A_FAILOVER;
    loop {
        let now_leading =
            telegram_leader_pid(family.workers[other].as_ref().unwrap(), &family.env).await;
        if now_leading != killed_pid {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no failover");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    telegram.push_private_text(&carol, "/invite child Eve");
    said_within(
        &telegram,
        5005,
        "Only a parent can invite",
        AFTER_A_FAILOVER,
    )
    .await;
    assert!(
        !telegram
            .bot_texts_in(5005)
            .iter()
            .any(|text| text.contains("Invite code for Eve")),
        "{:?}",
        telegram.bot_texts_in(5005)
    );
    // Her code for a parent went with her role.
    let dan = TgUser::new(6006, "Dan");
    telegram.push_private_text(&dan, &format!("/join {dans}"));
    said_within(&telegram, 6006, "That code is not valid", AFTER_A_FAILOVER).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_parents_demoting_each_other_on_two_workers_leave_one_parent() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    // The configuration's members are children: the family's parents are stored ones.
    let config = TestConfig::new(folder.path(), &llm.base_url())
        .child("alice")
        .child("bob")
        .database(&database_url)
        .write(folder.path());
    let env = test_env(&[]);
    let stores = hearth::storage::open(&database_url, 4).await.unwrap();
    let configured = ConfiguredMembers(vec![
        ("alice".parse().unwrap(), FamilyRole::Child),
        ("bob".parse().unwrap(), FamilyRole::Child),
    ]);
    let now = hearth::ports::now_ms();
    for (hash, name, by, user) in [("c", "Carol", None, 501), ("d", "Dave", Some("carol"), 502)] {
        let invite = NewInvite {
            code_hash: hash.into(),
            purpose: InvitePurpose::Join {
                role: FamilyRole::Parent,
                name: Some(name.into()),
            },
            created_by: by.map(|id: &str| id.parse().unwrap()),
            created_at_ms: now,
            expires_at_ms: now + 3_600_000,
        };
        stores
            .members
            .create_invite(&invite, &configured)
            .await
            .unwrap()
            .unwrap();
        let redeem = Redeem {
            code_hash: hash.into(),
            user: PlatformUser::Telegram(user),
            configured: configured.clone(),
            name: None,
            at_ms: now,
            source: format!("telegram:{user}"),
        };
        stores.members.redeem(&redeem).await.unwrap().unwrap();
    }
    let workers: Vec<Hearth> = (0..2).map(|_| Hearth::spawn(&config, &env)).collect();
    let carol = Member::sign_in_at(stores.web_access.clone(), &workers[0].base_url, "carol").await;
    let dave = Member::sign_in_at(stores.web_access.clone(), &workers[1].base_url, "dave").await;
    for round in 0..4 {
        let (by_carol, by_dave) = tokio::join!(
            carol.post("/family/dave/role", &[("role", "child")]),
            dave.post("/family/carol/role", &[("role", "child")]),
        );
        let parents: Vec<String> = stores
            .members
            .stored_members()
            .await
            .unwrap()
            .into_iter()
            .filter(|row| row.role == FamilyRole::Parent)
            .map(|row| row.id.to_string())
            .collect();
        assert_eq!(
            parents.len(),
            1,
            "round {round}: {parents:?}\n{}\n{}",
            by_carol.body,
            by_dave.body
        );
        let said: Vec<&str> = [&by_carol, &by_dave]
            .into_iter()
            .map(|answer| {
                let page = &answer.body;
                if page.contains("is now a child") {
                    "demoted"
                } else if answer.status == 404
                    || page.contains("last parent")
                    || page.contains("Only a parent")
                {
                    // Refused on the family as stored: the other's change came first (a
                    // child has no family page at all).
                    "refused"
                } else {
                    "other"
                }
            })
            .collect();
        assert!(
            said.contains(&"demoted") && !said.contains(&"other"),
            "round {round}: {said:?}"
        );
        // Both parents again for the next round, by the command line's right.
        let demoted = if parents[0] == "carol" {
            "dave"
        } else {
            "carol"
        };
        let promote = MemberChange {
            by: None,
            target: demoted.parse().unwrap(),
            kind: MemberChangeKind::SetRole(FamilyRole::Parent),
            configured: configured.clone(),
            at_ms: now,
        };
        stores
            .members
            .change_member(&promote)
            .await
            .unwrap()
            .unwrap();
    }
    stores.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_sent_again_to_another_worker_waits_for_its_turn_s_reply() {
    let Some(server) = PostgresServer::shared() else {
        return;
    };
    let database_url = server.fresh_database().await;
    let llm = ScriptedLlmServer::start();
    let gate = Gate::new();
    llm.push(Step::Gated(gate.clone(), Box::new(Step::Echo)));
    let folder = tempfile::tempdir().unwrap();
    let config = config_on(folder.path(), &llm.base_url(), &database_url);
    let env = test_env(&[]);
    let workers: Vec<Hearth> = (0..2).map(|_| Hearth::spawn(&config, &env)).collect();
    let body = json!({"user_id": "alice", "text": "slow one", "message_id": "again-1"});
    let first = {
        let (url, body) = (format!("{}/inbound", workers[0].base_url), body.clone());
        tokio::spawn(async move { post_with_key(&reqwest::Client::new(), &url, &body).await })
    };
    // The turn runs on the first worker and waits at the model.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while llm.request_count() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the turn never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let again = {
        let (url, body) = (format!("{}/inbound", workers[1].base_url), body.clone());
        tokio::spawn(async move { post_with_key(&reqwest::Client::new(), &url, &body).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !again.is_finished(),
        "the second call answered before the turn ended"
    );
    gate.open();
    for call in [first, again] {
        let (status, answer) = call.await.unwrap();
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["reply"], "echo: slow one", "{answer}");
    }
    assert_eq!(llm.request_count(), 1, "one turn");
}
