#!/usr/bin/env bash
# Installs the real MCP servers that `tests/integration/tools/mcp_tools.rs` talks to over stdio:
# the reference servers @modelcontextprotocol/server-everything (echo, elicitation, a tool
# list that changes) and @modelcontextprotocol/server-filesystem (reads within allowed
# folders only), from npm into $HEARTH_TEST_CACHE/mcp (default ~/.cache/hearth-test/mcp).
# Tests run them as `node <cache>/mcp/node_modules/<package>/dist/index.js ...`.
#
# Idempotent and quiet: a second run only checks a marker file holding the versions.
set -euo pipefail

SERVER_EVERYTHING_VERSION=2026.8.31
SERVER_FILESYSTEM_VERSION=2026.8.31

cache="${HEARTH_TEST_CACHE:-$HOME/.cache/hearth-test}"
prefix="$cache/mcp"
modules="$prefix/node_modules/@modelcontextprotocol"
marker="$prefix/.hearth-test-mcp-installed"
stamp="server-everything@$SERVER_EVERYTHING_VERSION server-filesystem@$SERVER_FILESYSTEM_VERSION"

fail() {
    echo "install-test-mcp: $*" >&2
    exit 1
}

if [[ -f "$marker" && "$(cat "$marker")" == "$stamp" &&
    -f "$modules/server-everything/dist/index.js" &&
    -f "$modules/server-filesystem/dist/index.js" ]]; then
    exit 0
fi

command -v node >/dev/null || fail "node is not installed (the test MCP servers need Node.js 18 or newer)"
command -v npm >/dev/null || fail "npm is not installed (it comes with Node.js)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 18 ? 1 : 0)' ||
    fail "node is $(node --version); the test MCP servers need Node.js 18 or newer"

mkdir -p "$prefix"
log="$(mktemp "$cache/install-test-mcp.XXXXXX.log")"
trap 'rm -f "$log"' EXIT

rm -f "$marker"
# A package.json of our own keeps npm from walking up to some other project's.
if [[ ! -f "$prefix/package.json" ]]; then
    echo '{ "name": "hearth-test-mcp", "private": true }' >"$prefix/package.json"
fi
if ! npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error --save-exact \
    "@modelcontextprotocol/server-everything@$SERVER_EVERYTHING_VERSION" \
    "@modelcontextprotocol/server-filesystem@$SERVER_FILESYSTEM_VERSION" >"$log" 2>&1; then
    cat "$log" >&2
    fail "npm install of $stamp into $prefix failed (output above)"
fi

for package in server-everything server-filesystem; do
    [[ -f "$modules/$package/dist/index.js" ]] ||
        fail "$modules/$package/dist/index.js is missing after npm install"
done

echo "$stamp" >"$marker"
