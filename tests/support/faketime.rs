//! A process whose clock is wrong on purpose: Debian's libfaketime, preloaded into a hearth
//! process, shifts every read of the date and time (and the monotonic clock, by the same
//! constant) by an offset. Installed by `scripts/install-test-postgres.sh` beside
//! PostgreSQL, for the several-workers tests. With `HEARTH_REQUIRE_REAL_SERVERS=1` a missing
//! install fails the test, otherwise the test skips.

// The benchmarks include the support modules too, and use none of this.
#![allow(dead_code)]

use std::path::PathBuf;

use super::real_llm::require_real_servers;

/// The environment that makes a process's clock run `offset` ahead (`"+20s"`), or `None`
/// (the test skips) when libfaketime is not installed and real servers are not required.
pub fn clock_ahead(offset: &str) -> Option<Vec<(String, String)>> {
    let Some(library) = library() else {
        assert!(
            !require_real_servers(),
            "libfaketime is not installed: run scripts/install-test-postgres.sh"
        );
        eprintln!("skipped: libfaketime is not installed (scripts/install-test-postgres.sh)");
        return None;
    };
    Some(vec![
        ("LD_PRELOAD".to_string(), library.display().to_string()),
        ("FAKETIME".to_string(), offset.to_string()),
        // Read the offset once: it never changes in a test.
        ("FAKETIME_NO_CACHE".to_string(), "0".to_string()),
    ])
}

/// The multi-threaded build of libfaketime (hearth runs several threads), wherever the
/// Debian package put it.
fn library() -> Option<PathBuf> {
    let folders = std::fs::read_dir("/usr/lib").ok()?;
    folders
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("faketime").join("libfaketimeMT.so.1"))
        .chain([PathBuf::from("/usr/lib/faketime/libfaketimeMT.so.1")])
        .find(|path| path.exists())
}
