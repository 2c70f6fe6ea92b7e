//! The family benchmark: what reading the family from the database costs every request.
//! Each message, answer and HTTP call is authorised after `Family::refresh`, one read of
//! the family's version (and of the members when it moved); the other way would read the
//! members each time. Both are measured here, in process, on SQLite (a temporary file) and
//! on PostgreSQL (a scratch server on loopback, `tests/support/postgres.rs`, installed by
//! `scripts/install-test-postgres.sh`), with a family of eight stored members.
//!
//! Run with `cargo bench --bench family`. Size: `HEARTH_BENCH_READS` (default 5000) reads
//! of each kind. Prints p50/p99/max per read beside the target (p99 under a millisecond:
//! small beside a turn).

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hearth::family::Family;
use hearth::ids::FamilyRole;
use hearth::ports::{ConfiguredMembers, InvitePurpose, NewInvite, PlatformUser, Redeem};
use hearth::storage::Stores;
use support::measure::{env_number, percentile, verdict};
use support::postgres::PostgresServer;

const TARGET_P99_MS: f64 = 1.0;
const MEMBERS: i64 = 8;

/// Eight members joined on codes, as a family grows.
async fn fill(stores: &Stores) {
    let configured = ConfiguredMembers(vec![("alice".parse().unwrap(), FamilyRole::Parent)]);
    let now = hearth::ports::now_ms();
    for n in 0..MEMBERS {
        let hash = format!("bench-{n}");
        let invite = NewInvite {
            code_hash: hash.clone(),
            purpose: InvitePurpose::Join {
                role: FamilyRole::Child,
                name: Some(format!("Member {n}")),
            },
            created_by: Some("alice".parse().unwrap()),
            created_at_ms: now,
            expires_at_ms: now + 3_600_000,
        };
        stores
            .members
            .create_invite(&invite, &configured)
            .await
            .expect("invite stored")
            .expect("invite allowed");
        let redeem = Redeem {
            code_hash: hash,
            user: PlatformUser::Telegram(1000 + n),
            configured: configured.clone(),
            name: None,
            at_ms: now,
            source: format!("telegram:{}", 1000 + n),
        };
        stores
            .members
            .redeem(&redeem)
            .await
            .expect("code redeemed")
            .expect("code taken");
    }
}

/// Each of `reads` calls of `read`, timed; p50/p99/max printed under `what`.
async fn measure<F, Fut>(database: &str, what: &str, reads: usize, read: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut took: Vec<Duration> = Vec::with_capacity(reads);
    for _ in 0..reads {
        let started = Instant::now();
        read().await;
        took.push(started.elapsed());
    }
    took.sort_unstable();
    let p99 = percentile(&took, 0.99);
    println!(
        "{database:<10} {what:<38} p50 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.3} ms  ({})",
        percentile(&took, 0.5),
        p99,
        percentile(&took, 1.0),
        verdict(p99 < TARGET_P99_MS)
    );
}

async fn bench(database: &str, stores: Stores, reads: usize) {
    fill(&stores).await;
    let family = Arc::new(Family::new(&[]).stored_in(stores.members.clone()));
    family.reload().await.expect("family read");
    let refreshed = family.clone();
    measure(
        database,
        "per request: the version, unchanged",
        reads,
        || {
            let family = refreshed.clone();
            async move { family.refresh().await.expect("version read") }
        },
    )
    .await;
    let members = stores.members.clone();
    measure(database, "the other way: every member read", reads, || {
        let members = members.clone();
        async move {
            members.stored_family().await.expect("family read");
        }
    })
    .await;
    stores.close().await;
}

fn main() {
    let reads = env_number("HEARTH_BENCH_READS", 5000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let folder = tempfile::tempdir().expect("a temporary folder");
        let url = format!("sqlite://{}", folder.path().join("family.db").display());
        let sqlite = hearth::storage::open(&url, 4).await.expect("SQLite opens");
        bench("sqlite", sqlite, reads).await;
        match PostgresServer::shared() {
            Some(server) => {
                let url = server.fresh_database().await;
                let postgres = hearth::storage::open(&url, 4)
                    .await
                    .expect("PostgreSQL opens");
                bench("postgres", postgres, reads).await;
            }
            None => {
                println!("postgres   skipped: not installed (scripts/install-test-postgres.sh)")
            }
        }
    });
}
