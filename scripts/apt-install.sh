# Sourced by the install-test-*.sh scripts that install Debian packages: `say` and `fail`
# in the script's name, and `apt_install`, which installs packages with apt-get as root
# (or through sudo), running `apt-get update` only when the install fails without it.
# Each step's output goes to a log shown only when the step fails.
#
# Before sourcing, set SCRIPT_NAME (as its messages start) and HAND_INSTALL_HINT (what to
# install by hand where there is no apt-get).

say() {
    echo "$SCRIPT_NAME: $*"
}

fail() {
    echo "$SCRIPT_NAME: $*" >&2
    exit 1
}

# apt_install "<how long, for the message>" PACKAGE...
apt_install() {
    local how_long="$1"
    shift
    local packages=("$@")
    command -v apt-get >/dev/null || fail "apt-get is missing: $HAND_INSTALL_HINT"
    local as_root=()
    if [[ "$(id -u)" -ne 0 ]]; then
        command -v sudo >/dev/null || fail "installing ${packages[*]} needs root (or sudo)"
        as_root=(sudo)
    fi
    APT_INSTALL_LOG="$(mktemp "${TMPDIR:-/tmp}/$SCRIPT_NAME.XXXXXX.log")"
    trap 'rm -f "$APT_INSTALL_LOG"' EXIT
    local install=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends "${packages[@]}")
    say "apt-get install ${packages[*]}$how_long"
    if ! "${install[@]}" >"$APT_INSTALL_LOG" 2>&1; then
        # Most often the package lists are missing or stale: refresh them once and retry.
        apt_step "apt-get update (the install failed without it)" "${as_root[@]}" apt-get update
        apt_step "apt-get install ${packages[*]}" "${install[@]}"
    fi
}

# apt_step "<what>" COMMAND...: runs it, its output shown only when it fails.
apt_step() {
    local what="$1"
    shift
    say "$what"
    if ! "$@" >"$APT_INSTALL_LOG" 2>&1; then
        cat "$APT_INSTALL_LOG" >&2
        fail "$what failed (output above)"
    fi
}

# The version line COMMAND prints, or a failure naming TOOL when it does not run.
version_of() {
    local tool="$1"
    shift
    local printed
    printed="$("$@" 2>"$APT_INSTALL_LOG" | head -n 1)" && [[ -n "$printed" ]] ||
        { cat "$APT_INSTALL_LOG" >&2; fail "$tool does not run after the install"; }
    echo "$printed"
}
