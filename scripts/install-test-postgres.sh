#!/usr/bin/env bash
# Installs the real PostgreSQL the storage tests and the several-workers tests run against:
# Debian's `postgresql` package (its server binaries, initdb and pg_ctl among them), and
# Debian's `faketime` (libfaketime), which gives one worker of a test a clock running
# ahead (tests/support/faketime.rs). No
# cluster is set up here and no service is started: each test process starts its own
# scratch cluster on 127.0.0.1 in a temporary folder (tests/support/postgres.rs), as the
# `postgres` user when the tests run as root, since PostgreSQL refuses to run as root.
#
# Idempotent: when the server binaries and libfaketime are found it prints nothing.
# Needs root (apt-get); `apt-get update` runs only when the install fails without it.
set -euo pipefail

SCRIPT_NAME=install-test-postgres
HAND_INSTALL_HINT="install PostgreSQL 15 or newer by hand (initdb and postgres)"
source "$(dirname "$0")/apt-install.sh"

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

# The multi-threaded libfaketime, wherever the package put it.
faketime_library() {
    compgen -G "/usr/lib/*/faketime/libfaketimeMT.so.1" >/dev/null ||
        [[ -e /usr/lib/faketime/libfaketimeMT.so.1 ]]
}

if ! server_binaries >/dev/null; then
    # The package's own cluster is not wanted (tests start theirs), and a container has no
    # service manager to start it.
    apt_install " (a minute)" postgresql
    folder="$(server_binaries)" || fail "the install left no initdb and postgres under /usr/lib/postgresql"
    say "installed $("$folder/postgres" --version)"
fi

if ! faketime_library; then
    apt_install "" faketime
    faketime_library || fail "the install left no libfaketimeMT.so.1 under /usr/lib"
    say "installed libfaketime"
fi
