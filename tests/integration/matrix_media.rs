//! Matrix attachments are streamed to disk and cut off at `max_attachment_bytes` whatever
//! the event says: the real binary, sent 50 MB (once declared, once hidden behind a false
//! small size), refuses the file without ever holding it in memory, and tells the model why.

use std::time::Duration;

use crate::support::hearth_app::{HearthProcess, test_env};
use crate::support::llm_server::{ScriptedLlmServer, Step};
use crate::support::matrix_family::{
    homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use crate::support::matrix_member::MatrixMember;

/// The highest resident memory the process ever had, in kB.
fn peak_rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|value| value.split_whitespace().next()?.parse().ok())
        .unwrap()
}

fn files_in(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    entries
        .flatten()
        .flat_map(|entry| {
            std::fs::read_dir(entry.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|entry| entry.path())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_50_mb_attachment_is_refused_without_being_held_in_memory() {
    let Some(server) = homeserver("matrix_big_attachment").await else {
        return;
    };
    let llm = ScriptedLlmServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = write_matrix_config(folder.path(), &llm, &server, "");
    let mut env = matrix_env();
    env.push(("HEARTH__CHANNELS__MATRIX__MAX_ATTACHMENT_BYTES", "1048576"));
    let hearth = HearthProcess::spawn(&config, &test_env(&env));
    let alice = MatrixMember::login(&server.synapse, &server.alice).await;
    let room = room_with_hearth(&alice, &server, false, &[]).await;
    let fifty_mb: Vec<u8> = (0..50_000_000u32)
        .map(|index| (index % 253) as u8)
        .collect();
    let before = peak_rss_kb(hearth.pid());

    // Said to be 50 MB: not downloaded at all.
    llm.push(Step::Reply("Too big, as declared.".into()));
    alice
        .send_image_claiming(&room, "declared.png", fifty_mb.clone(), Some(50_000_000))
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "Too big, as declared."
    })
    .await;
    // Said to be a kilobyte, really 50 MB: the download stops at the limit.
    llm.push(Step::Reply("Too big, whatever it said.".into()));
    alice
        .send_image_claiming(&room, "lying.png", fifty_mb, Some(1000))
        .await;
    reply_from_hearth(&alice, &server, |message| {
        message.body == "Too big, whatever it said."
    })
    .await;

    let after = peak_rss_kb(hearth.pid());
    assert!(
        after < before + 20 * 1024,
        "peak memory grew from {before} kB to {after} kB: the file was held in memory"
    );
    for index in 0..2 {
        let seen = llm.requests()[index].body["messages"].to_string();
        assert!(
            seen.contains("It could not be kept: it is larger than the 1024 KB"),
            "{seen}"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let kept = files_in(&folder.path().join("attachments"));
    assert!(kept.is_empty(), "nothing is left on disk: {kept:?}");
}
