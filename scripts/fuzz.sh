#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (libFuzzer, through cargo-fuzz) one after another and
# reports what each found. CONTRIBUTING.md ("Fuzzing") says what each target checks.
#
#   bash scripts/fuzz.sh --minutes 20            # every target, 20 minutes EACH
#   bash scripts/fuzz.sh --minutes 5 format when # only these targets
#   bash scripts/fuzz.sh --seconds 5 --dev       # what the test command runs
#   bash scripts/fuzz.sh --merge ...             # afterwards, add what found new coverage
#                                                # to the committed corpus (minimised)
#
# Each target starts from its committed corpus (fuzz/corpus/<target>) and from what earlier
# runs on this machine found (kept in the build cache, never in the checkout). A finding (a
# failed property, a panic, a crash, an input running past --timeout seconds, or memory past
# 2 GiB) is kept in $CARGO_TARGET_DIR/fuzz-artifacts/<target>/ and makes the script exit 1;
# replay one with `<binary printed below> <file>`. cargo-fuzz is installed when missing (a
# pinned version, into cargo's bin folder). The Rust here is stable: RUSTC_BOOTSTRAP=1 lets
# cargo-fuzz use the nightly flags it needs, and no sanitizer is built (hearth and the
# parsers it fuzzes are safe Rust; libFuzzer still catches panics, aborts, stack overflows,
# timeouts and memory blow-ups). --dev builds the targets unoptimised, with debug assertions
# and overflow checks (a few minutes' build instead of ten, at fewer runs a second), and
# starts each from the committed corpus alone: the test command uses it to replay the corpus
# and mutate a little; long runs want the default.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_FUZZ_VERSION=0.13.2

seconds=""
timeout=10
merge=false
profile=release
targets=()
while [ "$#" -gt 0 ]; do
    case "$1" in
        --minutes) seconds=$(($2 * 60)); shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        --merge) merge=true; shift ;;
        --dev) profile=dev; shift ;;
        -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
        -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) targets+=("$1"); shift ;;
    esac
done
if [ -z "$seconds" ]; then
    echo "fuzz.sh: say how long each target runs: --minutes N or --seconds N" >&2
    exit 2
fi
if [ "${#targets[@]}" -eq 0 ]; then
    for file in fuzz/fuzz_targets/*.rs; do
        targets+=("$(basename "$file" .rs)")
    done
fi

# The build cache lives outside the checkout, as for the rest of hearth.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hearth-target}"
fuzz_build="$CARGO_TARGET_DIR/fuzz"
found_corpus="$CARGO_TARGET_DIR/fuzz-corpus"
artifacts="$CARGO_TARGET_DIR/fuzz-artifacts"

cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
if ! "$cargo_bin/cargo-fuzz" --version 2>/dev/null | grep -qx "cargo-fuzz $CARGO_FUZZ_VERSION"; then
    echo "== installing cargo-fuzz $CARGO_FUZZ_VERSION into $cargo_bin"
    CARGO_TARGET_DIR="$CARGO_TARGET_DIR/cargo-fuzz-install" \
        cargo install cargo-fuzz --version "$CARGO_FUZZ_VERSION" --locked --root "${CARGO_HOME:-$HOME/.cargo}"
fi

echo "== the fuzz targets' own checks"
nice -n 10 cargo test --quiet --manifest-path fuzz/Cargo.toml -p hearth-fuzz-checks \
    --target-dir "$fuzz_build"

echo "== building the fuzz targets"
# One build for all targets: one `cargo fuzz build` per target would link each again.
if [ "$profile" = dev ]; then
    # No incremental cache: gigabytes kept beside the build for little gain in a build
    # that starts from a fresh clone.
    CARGO_INCREMENTAL=0 RUSTC_BOOTSTRAP=1 nice -n 10 "$cargo_bin/cargo-fuzz" build --dev --sanitizer none \
        --target-dir "$fuzz_build" --fuzz-dir fuzz
    binaries="$fuzz_build/x86_64-unknown-linux-gnu/debug"
else
    RUSTC_BOOTSTRAP=1 nice -n 10 "$cargo_bin/cargo-fuzz" build --sanitizer none \
        --target-dir "$fuzz_build" --fuzz-dir fuzz
    binaries="$fuzz_build/x86_64-unknown-linux-gnu/release"
fi

findings=()
summary=()
for target in "${targets[@]}"; do
    binary="$binaries/$target"
    if [ ! -x "$binary" ]; then
        echo "fuzz.sh: no fuzz target $target (fuzz/fuzz_targets/$target.rs)" >&2
        exit 2
    fi
    mkdir -p "$found_corpus/$target" "$artifacts/$target"
    log="$artifacts/$target/last-run.log"
    echo "== $target: ${seconds}s"
    before=$(find "$artifacts/$target" -type f ! -name '*.log' | wc -l)
    status=0
    # New finds go to the first folder; the committed corpus is only read. A --dev run
    # starts from the committed corpus alone, into a folder dropped afterwards: replaying
    # the thousands of inputs long runs found here would take it minutes per target.
    if [ "$profile" = dev ]; then
        finds=$(mktemp -d)
    else
        finds="$found_corpus/$target"
    fi
    nice -n 10 "$binary" -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$artifacts/$target/" \
        "$finds" "fuzz/corpus/$target" >"$log" 2>&1 || status=$?
    if [ "$profile" = dev ]; then
        rm -rf "$finds"
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    after=$(find "$artifacts/$target" -type f ! -name '*.log' | wc -l)
    if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
        findings+=("$target")
        summary+=("$(printf '%-18s FINDING after %s runs (exit %s)' "$target" "${runs:-?}" "$status")")
        echo "-- $target found something; its log: $log"
        grep -E -m 20 'panicked|ERROR|SUMMARY|Test unit written|deadly signal|timeout' "$log" || tail -20 "$log"
        echo "-- replay: $binary <the file named above>"
    else
        summary+=("$(printf '%-18s ok: %s runs, coverage %s' "$target" "${runs:-?}" "${coverage:-?}")")
    fi
    if $merge; then
        nice -n 10 "$binary" -merge=1 -timeout="$timeout" \
            "fuzz/corpus/$target" "$found_corpus/$target" >>"$log" 2>&1
        echo "-- merged new coverage into fuzz/corpus/$target"
    fi
done

echo "== fuzzing summary (${seconds}s per target, $profile build)"
printf '%s\n' "${summary[@]}"
if [ "${#findings[@]}" -gt 0 ]; then
    echo "fuzz.sh: findings in: ${findings[*]} (inputs in $artifacts/<target>/)" >&2
    exit 1
fi
