//! The `Inbox` port: a message accepted once by id and by platform event, unanswered ones listed
//! in acceptance order, a turn completed once with its reply and history, failures counted and
//! given up, concurrent writes each with its own outcome, writes naming unknown messages
//! refused; and every adapter naming the same original of an ambiguous duplicate.

use hearth::ports::{
    Acceptance, Attachment, AttachmentKind, InboundExtras, InboxStatus, QuotedMessage,
};
use hearth::storage::Stores;

use super::{
    contents, every_adapter, expect_duplicate_of, expect_new, ids, inbound, record_of, turn_for,
};

adapter_suite!(
    inbox_accepts_an_id_once,
    inbox_deduplicates_platform_events_per_channel,
    inbox_lists_unanswered_in_acceptance_order,
    inbox_lists_one_conversations_unanswered_in_acceptance_order,
    inbox_accepting_reads_the_conversations_unanswered_with_it,
    inbox_reads_say_which_messages_have_a_turn_journal,
    inbox_complete_stores_reply_and_history,
    inbox_complete_twice_is_refused_without_duplicating_history,
    inbox_record_failure_counts_attempts,
    inbox_give_up_marks_failed,
    inbox_get_unknown_and_ping,
    inbox_keeps_what_came_with_the_text,
    inbox_keeps_a_voice_notes_transcript_while_it_waits_and_never_after,
    inbox_concurrent_writes_each_get_their_own_outcome,
    inbox_knows_the_events_it_accepted,
    inbox_refuses_unknown_ids,
);

async fn inbox_accepts_an_id_once(stores: &Stores) {
    let message = inbound("m-1", "http", None);
    expect_new(stores, &message).await;
    expect_duplicate_of(stores, &message, &message).await;

    // The same id with other content (even another channel) is still the same message.
    let mut changed = inbound("m-1", "telegram", Some("tg-1"));
    changed.text = "something else".to_string();
    expect_duplicate_of(stores, &changed, &message).await;

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.inbound, message);
    assert_eq!(record.status, InboxStatus::Accepted);
    assert_eq!(record.attempts, 0);
    assert_eq!(record.next_attempt_at_ms, None);
    assert_eq!(record.reply, None);
    assert_eq!(record.error, None);
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["m-1"]);
}

async fn inbox_deduplicates_platform_events_per_channel(stores: &Stores) {
    let first = inbound("a-1", "telegram", Some("event-7"));
    expect_new(stores, &first).await;

    // Redelivered by the platform under a fresh id: the original is reported, nothing stored.
    let redelivered = inbound("a-2", "telegram", Some("event-7"));
    expect_duplicate_of(stores, &redelivered, &first).await;
    assert_eq!(stores.inbox.get("a-2").await.unwrap(), None);

    // Platform ids are unique per channel only.
    let elsewhere = inbound("a-3", "matrix", Some("event-7"));
    expect_new(stores, &elsewhere).await;

    // Messages without a platform id never collide with each other.
    expect_new(stores, &inbound("b-1", "telegram", None)).await;
    expect_new(stores, &inbound("b-2", "telegram", None)).await;

    assert_eq!(
        ids(&stores.inbox.unanswered().await.unwrap()),
        ["a-1", "a-3", "b-1", "b-2"]
    );
}

async fn inbox_lists_unanswered_in_acceptance_order(stores: &Stores) {
    // Received times run backwards so only the acceptance order can explain the result.
    for (index, id) in ["m-1", "m-2", "m-3", "m-4", "m-5"].iter().enumerate() {
        let mut message = inbound(id, "http", None);
        message.received_at_ms = 2_000_000 - i64::try_from(index).unwrap();
        expect_new(stores, &message).await;
    }
    assert_eq!(
        ids(&stores.inbox.unanswered().await.unwrap()),
        ["m-1", "m-2", "m-3", "m-4", "m-5"]
    );

    let answered = record_of(stores, "m-2").await.inbound;
    stores
        .inbox
        .complete("m-2", &turn_for(&answered, "done"))
        .await
        .unwrap();
    stores
        .inbox
        .give_up("m-4", "model down", "sorry", None)
        .await
        .unwrap();
    stores
        .inbox
        .record_failure("m-5", "timeout", 5_000)
        .await
        .unwrap();

    let unanswered = stores.inbox.unanswered().await.unwrap();
    assert_eq!(ids(&unanswered), ["m-1", "m-3", "m-5"]);
    assert!(
        unanswered
            .iter()
            .all(|record| record.status == InboxStatus::Accepted)
    );
    assert_eq!(
        unanswered[2].attempts, 1,
        "the retried message keeps its count"
    );
}

async fn inbox_lists_one_conversations_unanswered_in_acceptance_order(stores: &Stores) {
    // Two conversations of one channel, and the same conversation id on another.
    let kitchen = hearth::ids::ConversationKey::new("http", "kitchen").unwrap();
    for (id, channel, conversation) in [
        ("k-1", "http", "kitchen"),
        ("f-1", "http", "family-chat"),
        ("k-2", "http", "kitchen"),
        ("t-1", "telegram", "kitchen"),
        ("k-3", "http", "kitchen"),
    ] {
        let mut message = inbound(id, channel, None);
        message.conversation = hearth::ids::ConversationKey::new(channel, conversation).unwrap();
        expect_new(stores, &message).await;
    }
    let answered = record_of(stores, "k-2").await.inbound;
    stores
        .inbox
        .complete("k-2", &turn_for(&answered, "done"))
        .await
        .unwrap();
    let unanswered = stores.inbox.unanswered_in(&kitchen).await.unwrap();
    assert_eq!(ids(&unanswered), ["k-1", "k-3"]);
    assert!(
        unanswered
            .iter()
            .all(|record| record.inbound.conversation == kitchen)
    );
    let nobody = hearth::ids::ConversationKey::new("http", "nobody").unwrap();
    assert!(
        stores
            .inbox
            .unanswered_in(&nobody)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn inbox_accepting_reads_the_conversations_unanswered_with_it(stores: &Stores) {
    let kitchen = hearth::ids::ConversationKey::new("http", "kitchen").unwrap();
    let message = |id: &str, conversation: &str| {
        let mut message = inbound(id, "http", Some(&format!("event-{id}")));
        message.conversation = hearth::ids::ConversationKey::new("http", conversation).unwrap();
        message
    };
    for (id, conversation) in [
        ("k-1", "kitchen"),
        ("f-1", "family-chat"),
        ("k-2", "kitchen"),
    ] {
        expect_new(stores, &message(id, conversation)).await;
    }
    let answered = record_of(stores, "k-1").await.inbound;
    stores
        .inbox
        .complete("k-1", &turn_for(&answered, "done"))
        .await
        .unwrap();

    // Stored, with what waits in its conversation: itself last, as `unanswered_in` reads.
    let third = message("k-3", "kitchen");
    let (acceptance, unanswered) = stores.inbox.accept_reading(&third).await.unwrap();
    assert_eq!(acceptance, Acceptance::New);
    assert_eq!(ids(&unanswered), ["k-2", "k-3"]);
    assert_eq!(unanswered[1].inbound, third);
    assert_eq!(unanswered[1].status, InboxStatus::Accepted);
    assert_eq!(
        unanswered,
        stores.inbox.unanswered_in(&kitchen).await.unwrap()
    );

    // A duplicate (by id or by platform event) names its original and reads nothing.
    for again in [third.clone(), {
        let mut resent = message("k-9", "kitchen");
        resent.platform_event_id = third.platform_event_id.clone();
        resent
    }] {
        match stores.inbox.accept_reading(&again).await.unwrap() {
            (Acceptance::Duplicate(original), read) => {
                assert_eq!(original.inbound, third);
                assert!(read.is_empty(), "a duplicate reads nothing: {read:?}");
            }
            (Acceptance::New, _) => panic!("{:?} was accepted twice", again.id),
        }
    }
    assert_eq!(stores.inbox.get("k-9").await.unwrap(), None);
}

async fn inbox_complete_stores_reply_and_history(stores: &Stores) {
    let message = inbound("m-1", "http", Some("http-1"));
    expect_new(stores, &message).await;
    stores
        .inbox
        .record_failure("m-1", "first try timed out", 9_000)
        .await
        .unwrap();

    let turn = turn_for(&message, "Your name is Alice.");
    stores.inbox.complete("m-1", &turn).await.unwrap();

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(record.reply.as_deref(), Some("Your name is Alice."));
    assert_eq!(record.error, None, "an answered message carries no error");
    assert_eq!(record.attempts, 1);
    assert_eq!(record.inbound, message);
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());

    // The turn's chat text is history now; its tool round trip is stored but not replayed.
    let history = stores
        .memory
        .recent(&message.conversation, 50, 0)
        .await
        .unwrap();
    assert_eq!(
        history,
        [turn.messages[0].clone(), turn.messages[3].clone()],
        "user question and final answer, in order"
    );
}

async fn inbox_complete_twice_is_refused_without_duplicating_history(stores: &Stores) {
    let message = inbound("m-1", "console", None);
    expect_new(stores, &message).await;
    stores
        .inbox
        .complete("m-1", &turn_for(&message, "first answer"))
        .await
        .unwrap();

    let again = stores
        .inbox
        .complete("m-1", &turn_for(&message, "second answer"))
        .await;
    assert!(again.is_err(), "completing an answered message: {again:?}");

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.status, InboxStatus::Answered);
    assert_eq!(record.reply.as_deref(), Some("first answer"));
    let history = stores
        .memory
        .recent(&message.conversation, 50, 0)
        .await
        .unwrap();
    assert_eq!(contents(&history), [message.text.as_str(), "first answer"]);

    // Neither an unknown message nor a failed one can be completed.
    let unknown = inbound("nope", "console", None);
    let result = stores
        .inbox
        .complete("nope", &turn_for(&unknown, "x"))
        .await;
    assert!(result.is_err(), "completing an unknown message: {result:?}");
    assert_eq!(stores.inbox.get("nope").await.unwrap(), None);

    let failed = inbound("m-2", "console", None);
    expect_new(stores, &failed).await;
    stores
        .inbox
        .give_up("m-2", "broken", "sorry", None)
        .await
        .unwrap();
    let result = stores
        .inbox
        .complete("m-2", &turn_for(&failed, "late answer"))
        .await;
    assert!(result.is_err(), "completing a failed message: {result:?}");
    assert_eq!(record_of(stores, "m-2").await.status, InboxStatus::Failed);
    let history = stores
        .memory
        .recent(&message.conversation, 50, 0)
        .await
        .unwrap();
    assert_eq!(
        contents(&history),
        [message.text.as_str(), "first answer"],
        "refused completions write no history"
    );
}

async fn inbox_record_failure_counts_attempts(stores: &Stores) {
    let message = inbound("m-1", "matrix", Some("$event"));
    expect_new(stores, &message).await;

    let attempts = stores
        .inbox
        .record_failure("m-1", "rate limited", 1_000)
        .await
        .unwrap();
    assert_eq!(attempts, 1);
    let record = record_of(stores, "m-1").await;
    assert_eq!(record.attempts, 1);
    assert_eq!(record.status, InboxStatus::Accepted);
    assert_eq!(record.next_attempt_at_ms, Some(1_000));
    assert_eq!(record.error.as_deref(), Some("rate limited"));
    assert_eq!(record.reply, None);

    let attempts = stores
        .inbox
        .record_failure("m-1", "timeout", 3_000)
        .await
        .unwrap();
    assert_eq!(attempts, 2);
    let attempts = stores
        .inbox
        .record_failure("m-1", "timeout again", 7_000)
        .await
        .unwrap();
    assert_eq!(attempts, 3);

    let unanswered = stores.inbox.unanswered().await.unwrap();
    assert_eq!(
        ids(&unanswered),
        ["m-1"],
        "a failed attempt is retried later"
    );
    let record = &unanswered[0];
    assert_eq!(record.attempts, 3);
    assert_eq!(record.next_attempt_at_ms, Some(7_000));
    assert_eq!(record.error.as_deref(), Some("timeout again"));
    assert_eq!(record.status, InboxStatus::Accepted);
}

async fn inbox_give_up_marks_failed(stores: &Stores) {
    let message = inbound("m-1", "telegram", Some("upd-1"));
    let other = inbound("m-2", "telegram", Some("upd-2"));
    expect_new(stores, &message).await;
    expect_new(stores, &other).await;
    stores
        .inbox
        .record_failure("m-1", "timeout", 1_000)
        .await
        .unwrap();

    stores
        .inbox
        .give_up(
            "m-1",
            "model unavailable",
            "Sorry, I could not answer.",
            None,
        )
        .await
        .unwrap();

    let record = record_of(stores, "m-1").await;
    assert_eq!(record.status, InboxStatus::Failed);
    assert_eq!(record.reply.as_deref(), Some("Sorry, I could not answer."));
    assert_eq!(record.error.as_deref(), Some("model unavailable"));
    assert_eq!(record.attempts, 1);
    assert_eq!(record.inbound, message);
    assert_eq!(ids(&stores.inbox.unanswered().await.unwrap()), ["m-2"]);

    // A failed message is still known: its redelivery is a duplicate, not a new turn.
    match stores.inbox.accept(&message).await.unwrap() {
        Acceptance::Duplicate(original) => assert_eq!(original.status, InboxStatus::Failed),
        Acceptance::New => panic!("a given-up message was accepted again"),
    }
    // Giving up writes no history.
    assert!(
        stores
            .memory
            .recent(&message.conversation, 50, 0)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn inbox_get_unknown_and_ping(stores: &Stores) {
    stores.inbox.ping().await.unwrap();
    assert_eq!(stores.inbox.get("missing").await.unwrap(), None);
    assert!(stores.inbox.unanswered().await.unwrap().is_empty());
    expect_new(stores, &inbound("m-1", "http", None)).await;
    assert_eq!(stores.inbox.get("m-2").await.unwrap(), None);
    stores.inbox.ping().await.unwrap();
}

async fn inbox_keeps_what_came_with_the_text(stores: &Stores) {
    let mut message = inbound("m-extras", "telegram", Some("-100:7"));
    message.extras = InboundExtras {
        profile_id: None,
        quoted: Some(QuotedMessage {
            author: "Bob".into(),
            text: "the dentist is at 3".into(),
        }),
        attachments: vec![Attachment {
            kind: AttachmentKind::Image,
            file_name: "photo.jpg".into(),
            mime_type: Some("image/jpeg".into()),
            size_bytes: 12_345,
            path: None,
            note: Some("too large to download (over 5 MB)".into()),
            duration_seconds: None,
            transcript: None,
        }],
    };
    expect_new(stores, &message).await;
    let stored = stores.inbox.get("m-extras").await.unwrap().unwrap();
    assert_eq!(stored.inbound, message);
    assert_eq!(stores.inbox.unanswered().await.unwrap()[0].inbound, message);
}

/// A voice note's transcript replaces its text and extras while the message waits (a retry
/// or another worker reads it); once answered, the message is never rewritten.
async fn inbox_keeps_a_voice_notes_transcript_while_it_waits_and_never_after(stores: &Stores) {
    let mut message = inbound("m-voice", "telegram", Some("-100:9"));
    message.text = String::new();
    message.extras.attachments = vec![Attachment {
        kind: AttachmentKind::Audio,
        file_name: "voice.ogg".into(),
        mime_type: Some("audio/ogg".into()),
        size_bytes: 9_876,
        path: Some("/data/attachments/m-voice/voice.ogg".into()),
        note: None,
        duration_seconds: Some(4),
        transcript: None,
    }];
    expect_new(stores, &message).await;
    let mut transcribed = message.clone();
    transcribed.text = "remind me to buy milk".into();
    transcribed.extras.attachments[0].transcript = Some("remind me to buy milk".into());
    stores
        .inbox
        .store_transcript("m-voice", &transcribed.text, &transcribed.extras)
        .await
        .unwrap();
    let stored = stores.inbox.get("m-voice").await.unwrap().unwrap();
    assert_eq!(stored.inbound, transcribed);
    assert_eq!(stored.status, InboxStatus::Accepted);
    let conversation = message.conversation.clone();
    assert_eq!(
        stores.inbox.unanswered_in(&conversation).await.unwrap()[0].inbound,
        transcribed
    );
    stores
        .inbox
        .complete("m-voice", &turn_for(&transcribed, "Done."))
        .await
        .unwrap();
    let late = stores
        .inbox
        .store_transcript("m-voice", "something else", &message.extras)
        .await;
    assert!(
        late.is_err(),
        "an answered message is not rewritten: {late:?}"
    );
    let stored = stores.inbox.get("m-voice").await.unwrap().unwrap();
    assert_eq!(stored.inbound, transcribed);
}

/// Many writes at once (SQLite commits them in shared transactions): each caller gets
/// its own outcome, and a failing write does not take the others down with it.
async fn inbox_concurrent_writes_each_get_their_own_outcome(stores: &Stores) {
    let mut accepts = Vec::new();
    let mut refusals = Vec::new();
    for n in 0..100 {
        let inbox = stores.inbox.clone();
        accepts.push(tokio::spawn(async move {
            inbox
                .accept(&inbound(&format!("burst-{n:03}"), "http", None))
                .await
        }));
        if n % 5 == 0 {
            let inbox = stores.inbox.clone();
            refusals.push(tokio::spawn(async move {
                inbox.give_up(&format!("missing-{n}"), "e", "r", None).await
            }));
        }
    }
    for accept in accepts {
        assert_eq!(accept.await.unwrap().unwrap(), Acceptance::New);
    }
    for refusal in refusals {
        assert!(refusal.await.unwrap().is_err(), "an unknown id is refused");
    }
    let unanswered = stores.inbox.unanswered().await.unwrap();
    assert_eq!(unanswered.len(), 100);
}

async fn inbox_knows_the_events_it_accepted(stores: &Stores) {
    expect_new(stores, &inbound("k-1", "telegram", Some("1001:7"))).await;
    assert!(
        stores
            .inbox
            .knows_event("telegram", "1001:7")
            .await
            .unwrap()
    );
    assert!(!stores.inbox.knows_event("matrix", "1001:7").await.unwrap());
    assert!(
        !stores
            .inbox
            .knows_event("telegram", "1001:8")
            .await
            .unwrap()
    );
}

/// Every inbox write naming a message that was never accepted is an error.
async fn inbox_refuses_unknown_ids(stores: &Stores) {
    let unknown = inbound("ghost", "http", None);
    let result = stores
        .inbox
        .complete("ghost", &turn_for(&unknown, "x"))
        .await;
    assert!(result.is_err(), "complete: {result:?}");
    let result = stores.inbox.record_failure("ghost", "boom", 1).await;
    assert!(result.is_err(), "record_failure: {result:?}");
    let result = stores.inbox.give_up("ghost", "boom", "sorry", None).await;
    assert!(result.is_err(), "give_up: {result:?}");
    let result = stores
        .inbox
        .store_transcript("ghost", "hello", &unknown.extras)
        .await;
    assert!(result.is_err(), "store_transcript: {result:?}");
    assert_eq!(stores.inbox.get("ghost").await.unwrap(), None);
}

/// The id of the original a duplicate is reported with, when its id matches one stored
/// message and its platform event id another.
async fn original_of_an_ambiguous_duplicate(stores: &Stores) -> String {
    expect_new(stores, &inbound("a-1", "telegram", Some("event-1"))).await;
    expect_new(stores, &inbound("a-2", "telegram", Some("event-2"))).await;
    match stores
        .inbox
        .accept(&inbound("a-2", "telegram", Some("event-1")))
        .await
        .unwrap()
    {
        Acceptance::Duplicate(original) => original.inbound.id,
        Acceptance::New => panic!("an ambiguous duplicate was accepted as new"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adapters_agree_on_the_original_of_an_ambiguous_duplicate() {
    let mut originals = Vec::new();
    for (name, adapter) in every_adapter().await {
        originals.push((
            name,
            original_of_an_ambiguous_duplicate(&adapter.stores).await,
        ));
    }
    let (first, original) = &originals[0];
    for (name, other) in &originals[1..] {
        assert_eq!(other, original, "{name} vs {first}");
    }
}

/// Every read of a record says whether its turn had a journal then: `unanswered_in` and
/// `accept_reading` (the reads a worker holding the conversation queues from), `unanswered`
/// and `get`; a message stored just now has none, and a turn's end clears it.
async fn inbox_reads_say_which_messages_have_a_turn_journal(stores: &Stores) {
    let first = inbound("j-1", "http", None);
    let second = inbound("j-2", "http", None);
    expect_new(stores, &first).await;
    expect_new(stores, &second).await;
    stores
        .turn_journal
        .save_turn("j-1", &serde_json::json!({"rounds": 1}))
        .await
        .unwrap();
    let journaled = |records: &[hearth::ports::InboxRecord]| {
        records
            .iter()
            .map(|record| (record.inbound.id.clone(), record.journaled))
            .collect::<Vec<_>>()
    };
    let pair = |id: &str, journaled: bool| (id.to_string(), journaled);
    assert_eq!(
        journaled(
            &stores
                .inbox
                .unanswered_in(&first.conversation)
                .await
                .unwrap()
        ),
        [pair("j-1", true), pair("j-2", false)]
    );
    assert_eq!(
        journaled(&stores.inbox.unanswered().await.unwrap()),
        [pair("j-1", true), pair("j-2", false)]
    );
    let third = inbound("j-3", "http", None);
    let (acceptance, read) = stores.inbox.accept_reading(&third).await.unwrap();
    assert_eq!(acceptance, Acceptance::New);
    assert_eq!(
        journaled(&read),
        [pair("j-1", true), pair("j-2", false), pair("j-3", false)]
    );
    assert!(record_of(stores, "j-1").await.journaled);
    assert!(!record_of(stores, "j-2").await.journaled);
    // Its turn ended: the journal went with it.
    stores
        .inbox
        .complete("j-1", &turn_for(&first, "done"))
        .await
        .unwrap();
    assert!(!record_of(stores, "j-1").await.journaled);
    assert_eq!(
        journaled(
            &stores
                .inbox
                .unanswered_in(&first.conversation)
                .await
                .unwrap()
        ),
        [pair("j-2", false), pair("j-3", false)]
    );
}
