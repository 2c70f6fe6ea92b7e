#!/usr/bin/env bash
# Installs the real Matrix homeserver that the Matrix tests talk to: Synapse (matrix-synapse
# from PyPI) in a Python venv at $HEARTH_TEST_CACHE/synapse-venv (default
# ~/.cache/hearth-test/synapse-venv). Tests run `<venv>/bin/python -m synapse.app.homeserver`
# with a fresh loopback-only config (one server per test process, and one for each test that
# restarts it: see tests/support/synapse.rs).
#
# Idempotent: a second run only checks a marker file holding the version, and prints nothing.
set -euo pipefail

SYNAPSE_VERSION=1.163.2

cache="${HEARTH_TEST_CACHE:-$HOME/.cache/hearth-test}"
venv="$cache/synapse-venv"
marker="$venv/.hearth-test-synapse-installed"
stamp="matrix-synapse==$SYNAPSE_VERSION"

fail() {
    echo "install-test-synapse: $*" >&2
    exit 1
}

say() {
    echo "install-test-synapse: $*"
}

if [[ -x "$venv/bin/python" && -f "$marker" && "$(cat "$marker")" == "$stamp" ]]; then
    exit 0
fi

command -v python3 >/dev/null || fail "python3 is not installed (Synapse needs Python 3.10 or newer)"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    fail "python3 is $(python3 -V 2>&1); Synapse $SYNAPSE_VERSION needs Python 3.10 or newer"

mkdir -p "$cache"
log="$(mktemp "$cache/install-test-synapse.XXXXXX.log")"
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
# Synapse ships wheels with its Rust extension prebuilt, so this is a download, not a build.
run "pip install $stamp into $venv (under a minute)" \
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$stamp"

installed="$("$venv/bin/python" -c 'import synapse; print(synapse.__version__)' 2>"$log")" ||
    { cat "$log" >&2; fail "synapse does not import from $venv"; }
[[ "$installed" == "$SYNAPSE_VERSION" ]] ||
    fail "expected Synapse $SYNAPSE_VERSION in $venv, found $installed"
"$venv/bin/python" -c 'import synapse.app.homeserver' 2>"$log" ||
    { cat "$log" >&2; fail "synapse.app.homeserver does not import from $venv"; }

echo "$stamp" >"$marker"
say "Synapse $SYNAPSE_VERSION is installed in $venv"
