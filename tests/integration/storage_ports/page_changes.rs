//! What the web page's forms and the family page's activity ask of the ports: a schedule's
//! words and time edited only while it is still next due as seen (`Schedules::edit`), a
//! note's visibility changed by its author alone (`Notes::set_visibility`), family script
//! runs kept once and pruned (`ScriptWorkflows::record_run`, `Prunable::ScriptRuns`), and
//! the intents engine's stages read back per conversation (`UsageReport::stages_of`).

use hearth::ports::{
    FiringState, NoteVisibility, NoteWrite, Prunable, ScheduleEdit, ScheduleStatus, ScriptRun,
    ScriptRunOutcome, StorageError, TelemetryEvent,
};
use hearth::storage::Stores;
use serde_json::json;

use super::schedules::{MINUTE, claim, occurrence, reminder};
use super::{T0, key, member};

adapter_suite!(
    schedule_edit_applies_only_while_next_due_as_seen,
    note_visibility_is_changed_by_its_author_alone,
    script_runs_are_kept_once_newest_first_and_pruned,
    stages_are_read_back_per_conversation,
);

fn edit(id: i64, seen: i64, text: &str, next: i64) -> ScheduleEdit {
    ScheduleEdit {
        id,
        seen_next_due_ms: seen,
        text: text.into(),
        recurrence: None,
        start_local: None,
        next_due_ms: next,
    }
}

async fn schedule_edit_applies_only_while_next_due_as_seen(stores: &Stores) {
    let schedules = &stores.schedules;
    let due = T0 + 60 * MINUTE;
    let stored = schedules
        .add(&reminder("bob", "alice", due, None))
        .await
        .unwrap();
    // Based on another occurrence than the stored one: nothing changes.
    assert_eq!(
        schedules
            .edit(&edit(stored.id, due + 1, "no", due + 5))
            .await
            .unwrap(),
        None
    );
    let edited = schedules
        .edit(&edit(stored.id, due, "water the roses", due + 10 * MINUTE))
        .await
        .unwrap()
        .expect("edited while as seen");
    assert_eq!(edited.text, "water the roses");
    assert_eq!(edited.next_due_ms, Some(due + 10 * MINUTE));
    assert_eq!(edited.recurrence, None);
    assert_eq!(edited.member_id, member("bob"));
    assert_eq!(schedules.schedule(stored.id).await.unwrap(), Some(edited));
    // The old form again: it fired meanwhile from the occurrence it showed.
    assert_eq!(
        schedules
            .edit(&edit(stored.id, due, "again", due + 20 * MINUTE))
            .await
            .unwrap(),
        None
    );
    // It fires at its new time, and an edit based on that occurrence finds it moved on.
    let fired = occurrence(stored.id, due + 10 * MINUTE);
    schedules
        .claim(&claim(fired, Some(due + 30 * MINUTE), Vec::new()))
        .await
        .unwrap();
    assert_eq!(
        schedules.firing(fired).await.unwrap().unwrap().state,
        FiringState::Open
    );
    assert_eq!(
        schedules
            .edit(&edit(
                stored.id,
                due + 10 * MINUTE,
                "late",
                due + 40 * MINUTE
            ))
            .await
            .unwrap(),
        None
    );
    // Cancelled: nothing changes, whatever it is based on.
    assert!(schedules.cancel(stored.id).await.unwrap());
    assert_eq!(
        schedules
            .edit(&edit(
                stored.id,
                due + 30 * MINUTE,
                "late",
                due + 40 * MINUTE
            ))
            .await
            .unwrap(),
        None
    );
    let cancelled = schedules.schedule(stored.id).await.unwrap().unwrap();
    assert_eq!(cancelled.status, ScheduleStatus::Cancelled);
    assert_eq!(cancelled.text, "water the roses");
}

fn write(title: &str, visibility: NoteVisibility, writer: &str) -> NoteWrite {
    NoteWrite {
        title: title.into(),
        content: format!("{title} by {writer}"),
        visibility: Some(visibility),
        writer: member(writer),
        at_ms: T0,
    }
}

async fn note_visibility_is_changed_by_its_author_alone(stores: &Stores) {
    let notes = &stores.notes;
    let wifi = notes
        .save(&write("Wifi", NoteVisibility::Family, "alice"))
        .await
        .unwrap()
        .note()
        .clone();
    // Another member's note is as if it did not exist.
    assert_eq!(
        notes
            .set_visibility(&member("bob"), wifi.id, NoteVisibility::Private, T0 + 1)
            .await
            .unwrap(),
        None
    );
    let private = notes
        .set_visibility(&member("alice"), wifi.id, NoteVisibility::Private, T0 + 2)
        .await
        .unwrap()
        .expect("the author's own note");
    assert_eq!(private.visibility, NoteVisibility::Private);
    assert_eq!(private.updated_at_ms, T0 + 2);
    assert_eq!(notes.list(&member("bob"), 10).await.unwrap().total, 0);
    assert_eq!(notes.list(&member("alice"), 10).await.unwrap().total, 1);
    // Another family "wifi" now: making alice's shared again would give two family notes
    // of one title.
    notes
        .save(&write("WIFI ", NoteVisibility::Family, "bob"))
        .await
        .unwrap();
    match notes
        .set_visibility(&member("alice"), wifi.id, NoteVisibility::Family, T0 + 3)
        .await
    {
        Err(StorageError::Invalid(why)) => assert!(why.contains("family"), "{why}"),
        other => panic!("a taken title must be refused, got {other:?}"),
    }
    assert_eq!(
        notes
            .get(&member("alice"), &hearth::ports::NoteRef::Id(wifi.id))
            .await
            .unwrap()
            .unwrap()
            .visibility,
        NoteVisibility::Private
    );
}

fn run(key_text: &str, who: &str, outcome: ScriptRunOutcome, at_ms: i64) -> ScriptRun {
    ScriptRun {
        run_key: key_text.into(),
        conversation_key: key(&format!("http:{who}")),
        member_id: member(who),
        script: "backup_photos".into(),
        values: json!({"album": "Ü \"summer\"", "keep_days": 7.5}),
        outcome,
        error: (outcome == ScriptRunOutcome::Failed).then(|| "exit code 3: disk full".into()),
        at_ms,
    }
}

async fn script_runs_are_kept_once_newest_first_and_pruned(stores: &Stores) {
    let workflows = &stores.script_workflows;
    let first = run("turn-1.call-1", "alice", ScriptRunOutcome::Done, T0);
    assert!(workflows.record_run(&first).await.unwrap());
    // The same run again (a replayed call): nothing more is kept.
    assert!(
        !workflows
            .record_run(&run(
                "turn-1.call-1",
                "alice",
                ScriptRunOutcome::Failed,
                T0 + 9
            ))
            .await
            .unwrap()
    );
    let failed = run("turn-2.call-1", "bob", ScriptRunOutcome::Failed, T0 + 10);
    let declined = run(
        "turn-3.call-1",
        "alice",
        ScriptRunOutcome::Declined,
        T0 + 20,
    );
    workflows.record_run(&failed).await.unwrap();
    workflows.record_run(&declined).await.unwrap();
    let mut bad = run("turn-4.call-1", "alice", ScriptRunOutcome::Done, T0);
    bad.values = json!(["not", "an", "object"]);
    assert!(matches!(
        workflows.record_run(&bad).await,
        Err(StorageError::Invalid(_))
    ));
    assert_eq!(
        workflows.recent_runs(10).await.unwrap(),
        vec![declined.clone(), failed.clone(), first]
    );
    assert_eq!(
        workflows.recent_runs(1).await.unwrap(),
        vec![declined.clone()]
    );
    assert_eq!(
        stores
            .retention
            .prune(Prunable::ScriptRuns, T0 + 15, 100)
            .await
            .unwrap(),
        2
    );
    assert_eq!(workflows.recent_runs(10).await.unwrap(), vec![declined]);
}

async fn stages_are_read_back_per_conversation(stores: &Stores) {
    for (at_ms, conversation, stage) in [
        (T0, "http:alice", "received"),
        (T0 + 1, "telegram:7", "received"),
        (T0 + 2, "http:alice", "intent_classified"),
        (T0 + 3, "http:alice", "tool_execute"),
    ] {
        stores.telemetry.record(TelemetryEvent::Stage {
            at_ms,
            conversation_key: key(conversation),
            stage: stage.into(),
            payload: json!({"stage": stage, "payload": {"n": at_ms - T0}}),
        });
    }
    stores.telemetry.flush().await;
    let conversations = stores.usage.staged_conversations(10).await.unwrap();
    let keys: Vec<String> = conversations
        .iter()
        .map(|staged| staged.conversation_key.to_string())
        .collect();
    assert_eq!(keys, ["http:alice", "telegram:7"]);
    assert_eq!(conversations[0].last_at_ms, T0 + 3);
    let stages = stores.usage.stages_of(&key("http:alice"), 2).await.unwrap();
    let names: Vec<&str> = stages.iter().map(|stage| stage.stage.as_str()).collect();
    assert_eq!(names, ["intent_classified", "tool_execute"]);
    assert_eq!(stages[1].payload["payload"]["n"], 3);
    assert_eq!(stages[1].at_ms, T0 + 3);
    assert!(
        stores
            .usage
            .stages_of(&key("telegram:99"), 10)
            .await
            .unwrap()
            .is_empty()
    );
}
