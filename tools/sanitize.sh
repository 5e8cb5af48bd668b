#!/usr/bin/env bash
# Builds the C core with sanitizers (AGENTGRAMMAR_SANITIZE, default address,undefined) into a
# temporary copy of the repository and runs a short subset of the tests against that build, with
# the sanitizer runtimes preloaded. Fails on any sanitizer report. The installed agentgrammar
# (editable or not) is left alone: the copy is imported because the tests run from inside it.
#
#   bash tools/sanitize.sh                              # ASan + UBSan, the default subset
#   bash tools/sanitize.sh tests/engine/test_threads.py # other tests (pytest arguments)
#   (AGENTGRAMMAR_SANITIZE=thread builds, but CPython crashes at start-up with a preloaded TSan
#   runtime; tests/engine/test_threads.py runs a TSan-built C driver instead.)
#   KEEP=1 bash tools/sanitize.sh                       # keep the build folder (printed)
#
# Leak detection is off (CPython leaks by design); the C core's own leaks are checked by
# tests/csrc/test_c_api.py.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
SANITIZE=${AGENTGRAMMAR_SANITIZE:-address,undefined}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/agentgrammar-sanitize.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
  echo "sanitize: build folder $WORK (kept)"
else
  trap 'rm -rf "$WORK"' EXIT
fi

# What the build and the tests need (the package itself is not installed).
# setuptools >= 77 as pyproject.toml's build-system asks (older ones cannot read its license field).
if ! "$PY" -c "import cffi, numpy, pydantic, jsonschema, rich, pytest, hypothesis, setuptools as s; assert int(s.__version__.split('.')[0]) >= 77" 2>/dev/null; then
  "$PY" -m pip install -q cffi "setuptools>=77" numpy pydantic jsonschema rich pytest hypothesis
fi

# A copy of the source tree (tracked files and new, not-ignored ones), without any built core.
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$ROOT" ls-files -z -co --exclude-standard |
    tar -C "$ROOT" --null -T - --ignore-failed-read -cf - 2>/dev/null | tar -xf - -C "$WORK"
else
  tar -cf - --exclude='.venv*' --exclude=build --exclude='*.so' agentgrammar csrc tests tools setup.py pyproject.toml | tar -xf - -C "$WORK"
fi
find "$WORK/agentgrammar" -name '_core*.so' -delete

echo "sanitize: building the C core with -fsanitize=$SANITIZE"
(cd "$WORK" && AGENTGRAMMAR_SANITIZE=$SANITIZE "$PY" setup.py -q build_ext --inplace >"$WORK/build.log" 2>&1) || {
  tail -50 "$WORK/build.log"
  echo "sanitize: the build failed" >&2
  exit 1
}
SO=$(find "$WORK/agentgrammar" -name '_core*.so' | head -1)
PRELOAD=""
for s in ${SANITIZE//,/ }; do
  case "$s" in
    address) lib=libasan.so; sym=__asan_init ;;
    undefined) lib=libubsan.so; sym=__ubsan_handle ;;
    thread) lib=libtsan.so; sym=__tsan_init ;;
    *) echo "sanitize: unknown sanitizer '$s'" >&2; exit 2 ;;
  esac
  if ! nm -D "$SO" | grep -q "$sym"; then
    echo "sanitize: $SO is not instrumented for $s" >&2
    exit 1
  fi
  path=$(${CC:-gcc} -print-file-name="$lib")
  if [ ! -e "$path" ]; then
    echo "sanitize: no $lib runtime found (${CC:-gcc} -print-file-name=$lib)" >&2
    exit 1
  fi
  PRELOAD="$PRELOAD:$(readlink -f "$path")"
done
PRELOAD=${PRELOAD#:}

LOGS="$WORK/sanitizer-logs"
mkdir -p "$LOGS"
export LD_PRELOAD="$PRELOAD"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_stack_use_after_return=0:log_path=$LOGS/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$LOGS/ubsan"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:log_path=$LOGS/tsan${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export PYTHONDONTWRITEBYTECODE=1

if [ $# -eq 0 ]; then
  # About two minutes under ASan: the engine, the C API, structural tags, threads, fuzz smoke.
  # The xgrammar differential tests are left to the plain run (they mostly time xgrammar).
  set -- tests/engine tests/csrc tests/grammar/test_structural_tag.py tests/fuzz \
    -m "not slow" -k "not xgrammar"
fi

status=0
(
  cd "$WORK"
  "$PY" -c 'import sys, agentgrammar; assert agentgrammar.__file__.startswith(sys.argv[1]), agentgrammar.__file__' "$WORK"
  exec "$PY" -m pytest -q -p no:cacheprovider -x "$@"
) || status=$?

if compgen -G "$LOGS/*" >/dev/null; then
  echo "sanitize: sanitizer reports:" >&2
  for f in "$LOGS"/*; do
    echo "==== $f" >&2
    head -80 "$f" >&2
  done
  exit 1
fi
if [ $status -ne 0 ]; then
  echo "sanitize: the tests failed under -fsanitize=$SANITIZE (status $status)" >&2
  exit $status
fi
echo "sanitize: clean under -fsanitize=$SANITIZE"
