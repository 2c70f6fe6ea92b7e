//! The watch on a real System thread blocked on purpose inside a turn's span: the
//! histogram counts the stall and the watchdog's one log line names the span.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;

use super::spans::ActorThreadSpans;
use super::*;

/// Everything logged, kept for the test to read.
#[derive(Clone, Default)]
struct Logged(Arc<Mutex<Vec<u8>>>);

impl Logged {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl Write for Logged {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Logged {
    type Writer = Logged;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A message whose handler holds the thread it runs on, as work that never yields does.
#[derive(actix::Message)]
#[rtype(result = "()")]
struct HoldTheThread(Duration);

struct Holder;

impl actix::Actor for Holder {
    type Context = actix::Context<Self>;
}

impl actix::Handler<HoldTheThread> for Holder {
    type Result = ();

    fn handle(&mut self, message: HoldTheThread, _ctx: &mut Self::Context) {
        let turn = tracing::info_span!("turn", conversation = "telegram:42", profile = "default");
        let _inside = turn.enter();
        std::thread::sleep(message.0);
    }
}

#[test]
fn a_stall_over_a_second_is_counted_and_logged_naming_its_span() {
    let logged = Logged::default();
    let subscriber = tracing_subscriber::registry().with(ActorThreadSpans).with(
        tracing_subscriber::fmt::layer()
            .with_writer(logged.clone())
            .with_ansi(false),
    );
    let _default = tracing::subscriber::set_default(subscriber);
    let metrics = Arc::new(Metrics::default());
    let system = actix::System::new();
    system.block_on({
        let metrics = metrics.clone();
        async move {
            use actix::Actor;
            let watch = ActorThreadWatch::start(metrics.clone());
            // A few quiet ticks first: none of them late by a second.
            tokio::time::sleep(TICK * 3).await;
            assert_eq!(metrics.actor_thread_stalls().count_above(1.0), Some(0));
            let holder = Holder.start();
            holder
                .send(HoldTheThread(Duration::from_millis(1_600)))
                .await
                .unwrap();
            // The tick that was held runs, then the watchdog sees it beat again.
            tokio::time::sleep(TICK * 2 + LOOK * 3).await;
            drop(watch);
        }
    });
    let stalls = metrics.actor_thread_stalls();
    assert_eq!(stalls.count_above(1.0), Some(1), "{stalls:?}");
    assert!(stalls.count >= 4, "{stalls:?}");
    let text = logged.text();
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("the actors' thread was held"))
        .collect();
    assert_eq!(lines.len(), 1, "one line per stall: {text}");
    let line = lines[0];
    assert!(line.contains("WARN"), "{line}");
    assert!(
        line.contains("turn{conversation=telegram:42 profile=default}"),
        "the span is named: {line}"
    );
    let stalled_ms: u64 = line
        .split("stalled_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("no duration in {line}"));
    assert!(stalled_ms >= 1_000, "{line}");
}

#[test]
fn spans_of_other_threads_are_not_kept() {
    let subscriber = tracing_subscriber::registry().with(ActorThreadSpans);
    let _default = tracing::subscriber::set_default(subscriber);
    let stack = spans::watch_this_thread();
    let outer = tracing::info_span!("turn", conversation = "matrix:!room");
    let _outer = outer.enter();
    {
        let _inner = tracing::info_span!("stage", stage = "llm").entered();
        assert_eq!(
            stack.describe().as_deref(),
            Some("turn{conversation=matrix:!room} > stage{stage=llm}")
        );
    }
    assert_eq!(
        stack.describe().as_deref(),
        Some("turn{conversation=matrix:!room}")
    );
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let _elsewhere = tracing::info_span!("elsewhere").entered();
        });
    });
    assert_eq!(
        stack.describe().as_deref(),
        Some("turn{conversation=matrix:!room}")
    );
    spans::unwatch_this_thread(&stack);
}
