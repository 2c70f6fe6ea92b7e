#!/usr/bin/env bash
# Installs the tools the voice-note tests make real voice notes with: espeak-ng speaks a
# sentence into a WAV file, opusenc (opus-tools) encodes it as OGG/Opus, the format
# Telegram, Matrix clients and phones record voice notes in (see tests/support/voice.rs).
#
# Idempotent: when `espeak-ng` and `opusenc` are already on PATH it prints nothing.
# Needs root (apt-get); `apt-get update` runs only when the install fails without it.
set -euo pipefail

PACKAGES=(espeak-ng opus-tools)

fail() {
    echo "install-test-audio: $*" >&2
    exit 1
}

say() {
    echo "install-test-audio: $*"
}

if command -v espeak-ng >/dev/null && command -v opusenc >/dev/null; then
    exit 0
fi

command -v apt-get >/dev/null ||
    fail "apt-get is missing: install espeak-ng and opus-tools by hand"
as_root=()
if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || fail "installing ${PACKAGES[*]} needs root (or sudo)"
    as_root=(sudo)
fi

log="$(mktemp "${TMPDIR:-/tmp}/install-test-audio.XXXXXX.log")"
trap 'rm -f "$log"' EXIT

# Any output of a step goes to the log, shown only when the step fails.
run() {
    local what="$1"
    shift
    say "$what"
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        fail "$what failed (output above)"
    fi
}

install=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${PACKAGES[@]}")
say "apt-get install ${PACKAGES[*]}"
if ! "${install[@]}" >"$log" 2>&1; then
    # Most often the package lists are missing or stale: refresh them once and retry.
    run "apt-get update (the install failed without it)" "${as_root[@]}" apt-get update
    run "apt-get install ${PACKAGES[*]}" "${install[@]}"
fi

espeak_version="$(espeak-ng --version 2>"$log")" ||
    { cat "$log" >&2; fail "espeak-ng does not run after the install"; }
opusenc_version="$(opusenc --version 2>"$log" | head -n 1)" ||
    { cat "$log" >&2; fail "opusenc does not run after the install"; }
say "installed $espeak_version and $opusenc_version"
