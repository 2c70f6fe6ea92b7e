//! "typing…" while a conversation's turns run, for the channels that show it: turns are
//! counted per conversation, the notice is sent again on a timer (platforms show it for a
//! few seconds), and it stops when the last turn answers, or after `MAX_TYPING` whatever
//! happens, so a turn that never answers does not leave it on.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

use actix::{Actor, AsyncContext, Context, SpawnHandle};

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
