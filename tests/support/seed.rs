//! The random choices of a test that picks a random moment (a kill while replies flow),
//! made from a seed it prints first: `HEARTH_TEST_SEED=<seed>` makes the same choices
//! again, to replay a failure.

// The integration tests and the benchmarks each use a different part of the support.
#![allow(dead_code)]

/// The variable that replays a printed seed.
pub const SEED_VARIABLE: &str = "HEARTH_TEST_SEED";

/// A generator for `test`'s random choices, seeded from `HEARTH_TEST_SEED` when it is set,
/// else at random; the seed is printed on stderr before anything is chosen.
pub fn seeded(test: &str) -> fastrand::Rng {
    let seed = match std::env::var(SEED_VARIABLE) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_VARIABLE}={text:?} is not a number")),
        Err(_) => fastrand::u64(..),
    };
    eprintln!("{test}: random seed {seed} (replay with {SEED_VARIABLE}={seed})");
    fastrand::Rng::with_seed(seed)
}
