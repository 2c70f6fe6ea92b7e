//! The queue's retries of a failed turn on the paused clock: after
//! `queue.retry_delay_seconds`, doubling, up to `queue.max_attempts`; the member told once
//! that the answer is delayed, then either answered or told it failed; each failed attempt
//! stored with when the next one is due.

use std::time::Duration;

use hearth::actors::request_queue::{DELAYED_REPLY, FAILED_REPLY, ReplyKind};
use hearth::llm::LlmError;
use hearth::ports::{InboxStatus, now_ms};

use crate::support::paused::{PausedHearth, run_paused};

/// Ten seconds, doubling, four attempts; the broker tries each model call once, so every
/// failure reaches the queue.
const RETRIES: [(&str, &str); 3] = [
    ("HEARTH__QUEUE__RETRY_DELAY_SECONDS", "10"),
    ("HEARTH__QUEUE__MAX_ATTEMPTS", "4"),
    ("HEARTH__LLM_RETRY__MAX_ATTEMPTS", "1"),
];

fn down() -> LlmError {
    LlmError::Connect("connection refused".into())
}

/// In how many seconds (rounded up) the stored next attempt is due.
fn due_in(next_attempt_at_ms: Option<i64>) -> i64 {
    let due_ms = next_attempt_at_ms.expect("a next attempt is stored") - now_ms();
    (due_ms + 999) / 1000
}

/// When each model call came, in seconds after the first.
fn call_times(hearth: &PausedHearth) -> Vec<u64> {
    let calls = hearth.model.calls();
    calls.iter().map(|at| (*at - calls[0]).as_secs()).collect()
}

#[test]
fn a_failing_turn_is_tried_again_after_doubling_delays_then_given_up() {
    run_paused(|| async {
        let mut hearth = PausedHearth::start(&RETRIES).await;
        for _ in 0..4 {
            hearth.model.script.push_error(down());
        }
        let id = hearth.say("alice", "What's for dinner?").await;

        let (delayed_at, delayed) = hearth.next_reply().await;
        assert_eq!(
            (delayed.kind, delayed.text.as_str()),
            (ReplyKind::Delayed, DELAYED_REPLY)
        );
        let record = hearth.record(&id).await;
        assert_eq!((record.status, record.attempts), (InboxStatus::Accepted, 1));
        assert_eq!(due_in(record.next_attempt_at_ms), 10);

        // Told once: the next reply is the failure, after the fourth attempt.
        let (failed_at, failed) = hearth.next_reply().await;
        assert_eq!(
            (failed.kind, failed.text.as_str()),
            (ReplyKind::Failed, FAILED_REPLY)
        );
        assert_eq!(call_times(&hearth), [0, 10, 30, 70]);
        assert_eq!(failed_at - delayed_at, Duration::from_secs(70));
        let record = hearth.record(&id).await;
        assert_eq!(record.status, InboxStatus::Failed);
        assert_eq!(record.reply.as_deref(), Some(FAILED_REPLY));

        // Given up for good: no fifth attempt.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert_eq!(hearth.model.calls().len(), 4);
        assert!(!hearth.has_reply());
    });
}

#[test]
fn a_turn_that_fails_twice_is_answered_at_its_third_attempt() {
    run_paused(|| async {
        let mut hearth = PausedHearth::start(&RETRIES).await;
        hearth.model.script.push_error(down());
        hearth.model.script.push_error(down());
        hearth.model.script.push_reply("Pasta.");
        let id = hearth.say("alice", "What's for dinner?").await;

        let (delayed_at, delayed) = hearth.next_reply().await;
        assert_eq!(delayed.kind, ReplyKind::Delayed);
        let record = hearth.record(&id).await;
        assert_eq!(record.attempts, 1);

        // Between the attempts the failure is stored with the next one's time.
        tokio::time::sleep(Duration::from_secs(15)).await;
        let record = hearth.record(&id).await;
        assert_eq!(record.attempts, 2);
        assert_eq!(due_in(record.next_attempt_at_ms), 15);

        let (answered_at, answer) = hearth.next_reply().await;
        assert_eq!(
            (answer.kind, answer.text.as_str()),
            (ReplyKind::Answer, "Pasta.")
        );
        assert_eq!(answered_at - delayed_at, Duration::from_secs(30));
        assert_eq!(call_times(&hearth), [0, 10, 30]);
        let record = hearth.record(&id).await;
        assert_eq!(record.status, InboxStatus::Answered);
        assert_eq!(record.reply.as_deref(), Some("Pasta."));

        // Answered once: no retry after the answer.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert_eq!(hearth.model.calls().len(), 3);
        assert!(!hearth.has_reply());
    });
}
