#!/usr/bin/env bash
# Installs the real browser the web tests drive: Debian's headless-capable Chromium and its
# WebDriver server, chromedriver (packages chromium and chromium-driver), plus
# fonts-liberation so pages render with real fonts in screenshots. Tests start
# `chromedriver --port=<free loopback port>` and a headless Chromium through it
# (see tests/support/browser.rs).
#
# Idempotent: when `chromium` and `chromedriver` are already on PATH it prints nothing.
# Needs root (apt-get); `apt-get update` runs only when the install fails without it.
set -euo pipefail

PACKAGES=(chromium chromium-driver fonts-liberation)

fail() {
    echo "install-test-browser: $*" >&2
    exit 1
}

say() {
    echo "install-test-browser: $*"
}

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi

command -v apt-get >/dev/null ||
    fail "apt-get is missing: install Chromium and chromedriver (same version) by hand"
as_root=()
if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || fail "installing ${PACKAGES[*]} needs root (or sudo)"
    as_root=(sudo)
fi

log="$(mktemp "${TMPDIR:-/tmp}/install-test-browser.XXXXXX.log")"
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
say "apt-get install ${PACKAGES[*]} (a minute or two)"
if ! "${install[@]}" >"$log" 2>&1; then
    # Most often the package lists are missing or stale: refresh them once and retry.
    run "apt-get update (the install failed without it)" "${as_root[@]}" apt-get update
    run "apt-get install ${PACKAGES[*]}" "${install[@]}"
fi

chromium_version="$(chromium --version 2>"$log")" ||
    { cat "$log" >&2; fail "chromium does not run after the install"; }
driver_version="$(chromedriver --version 2>"$log")" ||
    { cat "$log" >&2; fail "chromedriver does not run after the install"; }
say "installed $chromium_version and $driver_version"
