//! The Matrix benchmark: the real `hearth` binary on a real Synapse (loopback only) with an
//! instant scripted LLM. N family members, each in an encrypted room of their own with
//! hearth, send M messages the way people do (the next one after the previous reply), all
//! rooms at once.
//!
//! Run with `cargo bench --bench matrix` (Synapse is installed by
//! `scripts/install-test-synapse.sh`). Sizes: `HEARTH_BENCH_CHATS` (default 5) and
//! `HEARTH_BENCH_MESSAGES` (per room, default 10). Prints turns per second, p50/p99/max of
//! the time from a member's send to the reply reaching that member's client, hearth's CPU
//! per turn and its resident memory. Synapse's own latency (two sends and two syncs per
//! turn, encryption both ways) bounds these figures: they are reported, not judged.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::hearth_app::{Hearth, test_env};
use support::llm_server::{ScriptedLlmServer, Step};
use support::matrix_family::{
    Homeserver, homeserver, matrix_env, reply_from_hearth, room_with_hearth, write_matrix_config,
};
use support::matrix_member::MatrixMember;
use support::measure::{cpu_seconds, env_number, memory_mb, percentile};

/// Each member sends their messages one after another, each after the previous reply.
async fn run_rooms(
    server: &Homeserver,
    rooms: &[(MatrixMember, matrix_sdk::ruma::OwnedRoomId)],
    messages: usize,
    label: &str,
) -> Vec<Duration> {
    let chats = rooms.iter().enumerate().map(|(chat, (member, room))| {
        let label = label.to_string();
        async move {
            let mut latencies = Vec::with_capacity(messages);
            for n in 0..messages {
                let text = format!("{label} {chat} {n}");
                let answer = format!("echo: {text}");
                let sent = Instant::now();
                member.send_text(room, &text).await;
                let reply =
                    reply_from_hearth(member, server, |message| message.body == answer).await;
                latencies.push(reply.seen_at.saturating_duration_since(sent));
            }
            latencies
        }
    });
    futures::future::join_all(chats)
        .await
        .into_iter()
        .flatten()
        .collect()
}

/// Family members `m0`… with their Matrix ids, beside the config's alice and bob.
fn add_members(config: &std::path::Path, members: &[String]) {
    let lines: String = members
        .iter()
        .enumerate()
        .map(|(n, user_id)| format!("  - {{ id: m{n}, matrix_user_id: \"{user_id}\" }}\n"))
        .collect();
    let text = std::fs::read_to_string(config)
        .expect("bench config")
        .replacen("family:\n", &format!("family:\n{lines}"), 1);
    std::fs::write(config, text).expect("bench config written");
}

fn main() {
    let chats = env_number("HEARTH_BENCH_CHATS", 5);
    let messages = env_number("HEARTH_BENCH_MESSAGES", 10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let server = homeserver("bench_matrix")
            .await
            .expect("synapse is not installed: run scripts/install-test-synapse.sh");
        let mut people = Vec::with_capacity(chats);
        for n in 0..chats {
            people.push(
                server
                    .register(&format!("member{n}"), "member-password")
                    .await,
            );
        }
        let llm = ScriptedLlmServer::start();
        llm.set_default(Step::Echo);
        llm.set_recording(false);
        let folder = tempfile::tempdir().expect("temporary folder");
        let config = write_matrix_config(folder.path(), &llm, &server, &[]);
        let user_ids: Vec<String> = people.iter().map(|person| person.user_id.clone()).collect();
        add_members(&config, &user_ids);
        let log =
            std::env::var("HEARTH_BENCH_LOG").unwrap_or_else(|_| "warn,hearth::app=info".into());
        let mut env = matrix_env();
        env.push(("HEARTH_LOG", log.as_str()));
        let hearth = Hearth::spawn(&config, &test_env(&env));

        let mut rooms = Vec::with_capacity(chats);
        for person in &people {
            let member = MatrixMember::login(&server.synapse, person).await;
            let room = room_with_hearth(&member, &server, true, &[]).await;
            rooms.push((member, room));
        }
        // Warm-up: keys shared in every room, connections open, the database's pages read.
        run_rooms(&server, &rooms, 2, "warmup").await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let idle_rss = memory_mb(hearth.pid(), "VmRSS");

        let cpu_before = cpu_seconds(hearth.pid());
        let started = Instant::now();
        let mut latencies = run_rooms(&server, &rooms, messages, "load").await;
        let elapsed = started.elapsed();
        let cpu_used = cpu_seconds(hearth.pid()) - cpu_before;
        latencies.sort();
        let total = latencies.len();
        let max = latencies
            .last()
            .map_or(0.0, |max| max.as_secs_f64() * 1000.0);
        println!(
            "matrix: {chats} encrypted rooms x {messages} messages = {total} turns in \
             {elapsed:.2?} on a real Synapse (each member's next message after its reply)"
        );
        println!(
            "  turns/s     {:>9.1}",
            total as f64 / elapsed.as_secs_f64()
        );
        println!(
            "  latency p50 {:>9.1} ms      (member's send -> reply in the member's client)",
            percentile(&latencies, 0.50)
        );
        println!(
            "  latency p99 {:>9.1} ms      (bounded by Synapse: reported, not judged)",
            percentile(&latencies, 0.99)
        );
        println!("  latency max {max:>9.1} ms");
        println!(
            "  hearth CPU  {:>9.2} ms/turn",
            cpu_used * 1000.0 / total as f64
        );
        println!("  idle RSS    {idle_rss:>9.1} MB      (Matrix connected, E2EE store open)");
        println!("  peak RSS    {:>9.1} MB", memory_mb(hearth.pid(), "VmHWM"));
    });
}
