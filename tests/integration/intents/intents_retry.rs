//! An approved intents call whose resumed turn fails before the call starts: the retry
//! runs the call once and the member hears its real outcome. The store fails for real: a
//! trigger in hearth's own SQLite database refuses the turn journal's writes until the
//! test drops it.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::hearth_app::Hearth;
use crate::support::intents_profile::{
    classified, example_intents, orders_config_confirming, stages, successful_calls,
};
use crate::support::llm_server::ScriptedLlmServer;

/// Refuses every write of the turn journal, as a full disk or a broken database would.
const JOURNAL_REFUSED: &str = "CREATE TRIGGER journal_refused BEFORE INSERT ON turn_journal \
     BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END";

async fn database(app: &Hearth) -> sqlx::SqlitePool {
    let file = app.folder().join("hearth.db");
    sqlx::SqlitePool::connect(&format!("sqlite://{}", file.display()))
        .await
        .unwrap()
}

/// Wait until the message `id` failed at least once (its attempts are counted).
async fn failed_once(pool: &sqlx::SqlitePool, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let attempts: i64 = sqlx::query_scalar("SELECT attempts FROM inbox WHERE id = ?")
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap();
        if attempts >= 1 {
            return;
        }
        assert!(Instant::now() < deadline, "the resumed turn never failed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix::test]
async fn an_approved_call_whose_resumed_turn_failed_before_it_started_runs_once_on_retry() {
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let path = orders_config_confirming(folder.path(), &llm, &example_intents());
    let app = Hearth::start_from(folder, &path, &[]).await;

    llm.push(classified(
        Some("order_status"),
        json!({"order_id": "O-12345"}),
        0.9,
    ));
    let (status, asked) = app
        .send(json!({"user_id": "alice", "text": "/orders where is O-12345?"}))
        .await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["status"], "confirmation_required", "{asked}");
    let id = asked["id"].as_str().unwrap().to_string();

    // The approval is taken, and the resumed turn fails at its first write, before the call.
    let pool = database(&app).await;
    sqlx::query(JOURNAL_REFUSED).execute(&pool).await.unwrap();
    let confirming = {
        let (client, url) = (
            app.client.clone(),
            format!("{}/inbound/confirm", app.base_url),
        );
        let body = json!({"confirmation_id": asked["confirmation"]["id"], "user_id": "alice",
                          "approve": true});
        let token = app.member_token("alice").await;
        tokio::spawn(async move {
            crate::support::hearth_app::post_as(&client, &url, &token, &body).await
        })
    };
    failed_once(&pool, &id).await;
    sqlx::query("DROP TRIGGER journal_refused")
        .execute(&pool)
        .await
        .unwrap();
    let (status, body) = confirming.await.unwrap();
    assert!(status == 200 || status == 202, "{status}: {body}");

    let record = app
        .record_when(&id, "alice", "answered", Duration::from_secs(20))
        .await;
    assert_eq!(
        record["reply"],
        "I'll check order O-12345.\n\nYour order O-12345 is shipped via UPS, ETA 2025-10-20.",
        "the approval held through the retry"
    );
    let events = stages(&app, "http:alice").await;
    assert_eq!(successful_calls(&events), 1, "the call ran once");
    app.stop().await;
}
