//! What the actors' thread is inside, readable from another thread: a `tracing` layer that,
//! on a thread being watched only, keeps the stack of spans entered there with their
//! fields (`turn{conversation=telegram:42 profile=default …}`). The watchdog reads it when
//! that thread stops answering, so a stall's log names the turn that held it.
//!
//! The cost stays tiny: on any other thread an entry costs one thread-local look; on the
//! watched thread, a span's label is written once when it is made, and an entry or exit
//! pushes or pops an `Arc` under a lock nobody else holds except the watchdog's rare look.

use std::cell::RefCell;
use std::fmt::Write;
use std::sync::{Arc, Mutex};

use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The longest label kept for one span: enough for a turn's conversation and profile.
const MAX_LABEL_CHARS: usize = 200;

/// The spans a watched thread is inside, innermost last.
#[derive(Default)]
pub struct SpanStack {
    entered: Mutex<Vec<(u64, Arc<str>)>>,
}

impl SpanStack {
    fn push(&self, id: u64, label: Arc<str>) {
        self.lock().push((id, label));
    }

    /// The span `id` exited: its last entry goes (spans may exit out of order).
    fn pop(&self, id: u64) {
        let mut entered = self.lock();
        if let Some(at) = entered.iter().rposition(|(entry, _)| *entry == id) {
            entered.remove(at);
        }
    }

    /// The labels of the spans entered now, outermost first, joined by ` > `; `None` when
    /// none is.
    pub fn describe(&self) -> Option<String> {
        let entered = self.lock();
        if entered.is_empty() {
            return None;
        }
        let labels: Vec<&str> = entered.iter().map(|(_, label)| &**label).collect();
        Some(labels.join(" > "))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(u64, Arc<str>)>> {
        self.entered
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

thread_local! {
    /// The stack of this thread, when it is watched.
    static WATCHED: RefCell<Option<Arc<SpanStack>>> = const { RefCell::new(None) };
}

/// Watch the spans entered on this thread from now on; the stack to read them from.
pub fn watch_this_thread() -> Arc<SpanStack> {
    let stack = Arc::new(SpanStack::default());
    WATCHED.with(|watched| *watched.borrow_mut() = Some(stack.clone()));
    stack
}

/// Stop watching this thread (when its watch ends).
pub fn unwatch_this_thread(stack: &Arc<SpanStack>) {
    WATCHED.with(|watched| {
        let mut watched = watched.borrow_mut();
        if watched.as_ref().is_some_and(|now| Arc::ptr_eq(now, stack)) {
            *watched = None;
        }
    });
}

fn on_watched_thread(action: impl FnOnce(&SpanStack)) {
    // `try_with`: a span entered while the thread's locals are torn down is not watched.
    let _ = WATCHED.try_with(|watched| {
        if let Ok(watched) = watched.try_borrow()
            && let Some(stack) = watched.as_ref()
        {
            action(stack);
        }
    });
}

/// A span's name and fields as the stall log shows them.
struct SpanLabel(Arc<str>);

/// The layer to add to the subscriber (`hearth run` does, in `main.rs`).
pub struct ActorThreadSpans;

impl<S> Layer<S> for ActorThreadSpans
where
    S: Subscriber + for<'lookup> LookupSpan<'lookup>,
{
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, context: Context<'_, S>) {
        on_watched_thread(|_| {
            let mut label = LabelWriter(attributes.metadata().name().to_string());
            attributes.record(&mut label);
            let mut label = label.0;
            if label.len() > MAX_LABEL_CHARS {
                let cut = (0..=MAX_LABEL_CHARS)
                    .rev()
                    .find(|at| label.is_char_boundary(*at))
                    .unwrap_or(0);
                label.truncate(cut);
                label.push('…');
            }
            if let Some(span) = context.span(id) {
                span.extensions_mut().insert(SpanLabel(label.into()));
            }
        });
    }

    fn on_enter(&self, id: &Id, context: Context<'_, S>) {
        on_watched_thread(|stack| {
            let Some(span) = context.span(id) else {
                return;
            };
            let label = match span.extensions().get::<SpanLabel>() {
                Some(label) => label.0.clone(),
                // Made on another thread: its name at least.
                None => Arc::from(span.name()),
            };
            stack.push(id.into_u64(), label);
        });
    }

    fn on_exit(&self, id: &Id, _context: Context<'_, S>) {
        on_watched_thread(|stack| stack.pop(id.into_u64()));
    }
}

/// `name{field=value …}`, fields as their `Debug` or `Display` says.
struct LabelWriter(String);

impl Visit for LabelWriter {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let opening = if self.0.ends_with('}') {
            self.0.pop();
            ' '
        } else {
            '{'
        };
        let _ = write!(self.0, "{opening}{}={value:?}}}", field.name());
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.record_debug(field, &format_args!("{value}"));
    }
}
