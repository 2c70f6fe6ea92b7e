//! What a target needs around hearth's code, made once per fuzzing process: a scratch
//! folder removed with the process, and a tokio runtime on the fuzzing thread for the
//! entry points that are async.

use std::path::Path;
use std::sync::OnceLock;

/// A folder of this process's own, for the files a target writes.
pub fn folder() -> &'static Path {
    static FOLDER: OnceLock<tempfile::TempDir> = OnceLock::new();
    FOLDER
        .get_or_init(|| tempfile::tempdir().expect("a scratch folder"))
        .path()
}

/// A runtime on the current thread, with its timers and I/O.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}
