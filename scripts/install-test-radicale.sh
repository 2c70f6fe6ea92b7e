#!/usr/bin/env bash
# Installs the real CalDAV server the calendar tests talk to: Radicale (from PyPI) in a
# Python venv at $HEARTH_TEST_CACHE/radicale-venv (default ~/.cache/hearth-test/radicale-venv).
# Tests run `<venv>/bin/python -m radicale` with a loopback-only config, a password file and
# a storage folder of their own (see tests/support/radicale.rs).
#
# Idempotent: a second run only checks a marker file holding the version, and prints nothing.
set -euo pipefail

RADICALE_VERSION=3.9.0

cache="${HEARTH_TEST_CACHE:-$HOME/.cache/hearth-test}"
venv="$cache/radicale-venv"
marker="$venv/.hearth-test-radicale-installed"
stamp="radicale==$RADICALE_VERSION"

fail() {
    echo "install-test-radicale: $*" >&2
    exit 1
}

say() {
    echo "install-test-radicale: $*"
}

if [[ -x "$venv/bin/python" && -f "$marker" && "$(cat "$marker")" == "$stamp" ]]; then
    exit 0
fi

command -v python3 >/dev/null || fail "python3 is not installed (Radicale needs Python 3.9 or newer)"

mkdir -p "$cache"
log="$(mktemp "$cache/install-test-radicale.XXXXXX.log")"
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

rm -f "$marker"
if [[ ! -x "$venv/bin/python" ]]; then
    run "creating the venv $venv (on Debian: apt-get install python3-venv)" \
        python3 -m venv "$venv"
fi
run "pip install $stamp into $venv (seconds)" \
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$stamp"

installed="$("$venv/bin/python" -c 'import radicale; print(radicale.VERSION)' 2>"$log")" ||
    { cat "$log" >&2; fail "radicale does not import from $venv"; }
[[ "$installed" == "$RADICALE_VERSION" ]] ||
    fail "expected Radicale $RADICALE_VERSION in $venv, found $installed"

echo "$stamp" >"$marker"
say "Radicale $RADICALE_VERSION is installed in $venv"
