#!/usr/bin/env bash
# Runs every test of hearth on a fresh machine: installs what the tests need
# (the small local model for the real-model tests, the MCP servers, Synapse, Radicale,
# headless Chromium and chromedriver for the web tests, PostgreSQL for the storage suite,
# espeak-ng and opusenc for real voice notes, cargo-fuzz for the fuzz targets), then the
# whole cargo suite, then each fuzz target for a few seconds on its corpus.
# Extra arguments go to `cargo test` (e.g. a test-name filter).
set -euo pipefail
cd "$(dirname "$0")/.."

# The build cache lives outside the checkout so fresh clones reuse it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hearth-target}"
# Tests that need a real server fail instead of skipping when it is missing.
export HEARTH_REQUIRE_REAL_SERVERS=1
# The integration tests mostly wait on sockets, child processes and timers: four at a time
# keep two cores busy (one per core leaves them idle half the time).
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-4}"

bash scripts/install-local-llm.sh
bash scripts/install-test-mcp.sh
bash scripts/install-test-synapse.sh
bash scripts/install-test-radicale.sh
bash scripts/install-test-browser.sh
bash scripts/install-test-postgres.sh
bash scripts/install-test-audio.sh

# Unit tests, the integration binary and doc tests; the benchmark is built by
# clippy in .ci/run and run with `cargo bench`.
cargo test --lib --bins --tests "$@"

# The unit tests of the single-part builds (no filter given): what a Telegram-only and a
# Matrix-only hearth refuse and keep.
if [ "$#" -eq 0 ]; then
    for features in telegram matrix; do
        cargo test --lib --no-default-features --features "$features"
    done
fi

# Each fuzz target a few seconds on its committed corpus and what it mutates from it (no
# filter given), built unoptimised to build fast: a failed property, a panic or a stall
# fails the run (scripts/fuzz.sh; CONTRIBUTING.md, "Fuzzing").
if [ "$#" -eq 0 ]; then
    bash scripts/fuzz.sh --seconds 5 --dev
fi
