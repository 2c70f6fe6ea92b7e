#!/usr/bin/env bash
# Installs the real PostgreSQL the storage tests and the several-workers tests run against:
# Debian's `postgresql` package (its server binaries, initdb and pg_ctl among them). No
# cluster is set up here and no service is started: each test process starts its own
# scratch cluster on 127.0.0.1 in a temporary folder (tests/support/postgres.rs), as the
# `postgres` user when the tests run as root, since PostgreSQL refuses to run as root.
#
# Idempotent: when the server binaries are found it prints nothing.
# Needs root (apt-get); `apt-get update` runs only when the install fails without it.
set -euo pipefail

PACKAGES=(postgresql)

fail() {
    echo "install-test-postgres: $*" >&2
    exit 1
}

say() {
    echo "install-test-postgres: $*"
}

# Where the server binaries are: Debian keeps them off PATH, one folder per version.
server_binaries() {
    local folder
    for folder in /usr/lib/postgresql/*/bin; do
        if [[ -x "$folder/initdb" && -x "$folder/postgres" ]]; then
            echo "$folder"
            return 0
        fi
    done
    return 1
}

if server_binaries >/dev/null; then
    exit 0
fi

command -v apt-get >/dev/null ||
    fail "apt-get is missing: install PostgreSQL 15 or newer by hand (initdb and postgres)"
as_root=()
if [[ "$(id -u)" -ne 0 ]]; then
    command -v sudo >/dev/null || fail "installing ${PACKAGES[*]} needs root (or sudo)"
    as_root=(sudo)
fi

log="$(mktemp "${TMPDIR:-/tmp}/install-test-postgres.XXXXXX.log")"
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

# The package's own cluster is not wanted (tests start theirs), and a container has no
# service manager to start it.
install=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${PACKAGES[@]}")
say "apt-get install ${PACKAGES[*]} (a minute)"
if ! "${install[@]}" >"$log" 2>&1; then
    run "apt-get update (the install failed without it)" "${as_root[@]}" apt-get update
    run "apt-get install ${PACKAGES[*]}" "${install[@]}"
fi

folder="$(server_binaries)" || fail "the install left no initdb and postgres under /usr/lib/postgresql"
say "installed $("$folder/postgres" --version)"
