//! "typing…" while a conversation's turns run, for the channels that show it: turns are
//! counted per conversation, the notice is sent again on a timer (platforms show it for a
//! few seconds), and it stops when the last turn answers, or after `MAX_TYPING` whatever
//! happens, so a turn that never answers does not leave it on.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use actix::{Actor, AsyncContext, Context, SpawnHandle};
// tokio's: the bound is kept on the runtime's clock, the one its timer runs on.
use tokio::time::Instant;

const MAX_TYPING: Duration = Duration::from_secs(10 * 60);

struct Typing {
    turns: usize,
    since: Instant,
    handle: SpawnHandle,
}

pub(crate) struct TypingTurns<K> {
    running: HashMap<K, Typing>,
}

impl<K> Default for TypingTurns<K> {
    fn default() -> Self {
        TypingTurns {
            running: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + Clone + Unpin + 'static> TypingTurns<K> {
    /// A turn of `key` runs: `show` now and every `every` until its last turn stops.
    /// `field` finds these turns in the actor, for the timer.
    pub(crate) fn started<A>(
        &mut self,
        key: K,
        ctx: &mut Context<A>,
        every: Duration,
        show: impl Fn() + 'static,
        field: fn(&mut A) -> &mut TypingTurns<K>,
    ) where
        A: Actor<Context = Context<A>>,
    {
        if let Some(typing) = self.running.get_mut(&key) {
            typing.turns += 1;
            return;
        }
        show();
        let timer_key = key.clone();
        let handle = ctx.run_interval(every, move |act, ctx| {
            let turns = field(act);
            match turns.running.get(&timer_key) {
                Some(typing) if typing.since.elapsed() < MAX_TYPING => show(),
                Some(typing) => {
                    ctx.cancel_future(typing.handle);
                    turns.running.remove(&timer_key);
                }
                None => {}
            }
        });
        self.running.insert(
            key,
            Typing {
                turns: 1,
                since: Instant::now(),
                handle,
            },
        );
    }

    /// A turn of `key` answered or waits for the member; `true` when it was the last one
    /// (the notice has stopped).
    pub(crate) fn stopped<A>(&mut self, key: &K, ctx: &mut Context<A>) -> bool
    where
        A: Actor<Context = Context<A>>,
    {
        let Some(typing) = self.running.get_mut(key) else {
            return false;
        };
        typing.turns = typing.turns.saturating_sub(1);
        if typing.turns > 0 {
            return false;
        }
        ctx.cancel_future(typing.handle);
        self.running.remove(key);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use actix::{Addr, Handler, Message};

    use super::*;

    const EVERY: Duration = Duration::from_secs(4);

    /// An actor showing "typing…" in one place; when it was shown is noted.
    #[derive(Default)]
    struct Shows {
        typing: TypingTurns<&'static str>,
        shown: Arc<Mutex<Vec<Instant>>>,
    }

    impl Actor for Shows {
        type Context = Context<Self>;
    }

    /// A turn of the one conversation started or stopped, as `ChannelActor` tells its
    /// `TypingTurns`. Sent by the tests below; handled by `Shows`, here.
    #[derive(Message)]
    #[rtype(result = "bool")]
    enum Turn {
        Started,
        Stopped,
    }

    impl Handler<Turn> for Shows {
        type Result = bool;

        fn handle(&mut self, turn: Turn, ctx: &mut Context<Self>) -> bool {
            match turn {
                Turn::Started => {
                    let shown = self.shown.clone();
                    let show = move || shown.lock().unwrap().push(Instant::now());
                    self.typing
                        .started("chat", ctx, EVERY, show, |act: &mut Self| &mut act.typing);
                    true
                }
                Turn::Stopped => self.typing.stopped(&"chat", ctx),
            }
        }
    }

    /// The actor, started on a paused clock, and when each of its notices was shown in
    /// seconds after now.
    fn start_showing() -> (Addr<Shows>, impl Fn() -> Vec<u64>) {
        tokio::time::pause();
        let actor = Shows::default();
        let shown = actor.shown.clone();
        let start = Instant::now();
        let shown_at = move || {
            let shown = shown.lock().unwrap();
            shown.iter().map(|at| (*at - start).as_secs()).collect()
        };
        (actor.start(), shown_at)
    }

    #[actix::test]
    async fn typing_is_shown_again_while_a_turn_runs_and_stops_with_the_last_turn() {
        let (shows, shown_at) = start_showing();

        shows.send(Turn::Started).await.unwrap();
        tokio::time::sleep(Duration::from_secs(9)).await;
        // A second turn of the same chat: the same notice, not a second one.
        shows.send(Turn::Started).await.unwrap();
        assert!(!shows.send(Turn::Stopped).await.unwrap());
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(shows.send(Turn::Stopped).await.unwrap());
        tokio::time::sleep(Duration::from_secs(60)).await;

        assert_eq!(shown_at(), [0, 4, 8, 12]);
    }

    #[actix::test]
    async fn a_turn_that_never_answers_stops_showing_typing_after_ten_minutes() {
        let (shows, shown_at) = start_showing();

        shows.send(Turn::Started).await.unwrap();
        tokio::time::sleep(MAX_TYPING * 2).await;

        let shows_at = shown_at();
        assert_eq!(shows_at.len(), 150, "every 4 s for 10 minutes");
        assert_eq!(shows_at.last(), Some(&596));
        // The turn is forgotten: its end shows nothing more.
        assert!(!shows.send(Turn::Stopped).await.unwrap());
    }
}
