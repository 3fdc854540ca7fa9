#!/usr/bin/env bash
# The project's test command: lint (ruff, import order included), then the test suite.
# Fails on any lint error, any test failure and on "no tests collected" (pytest exit 5).
# --fast: everyday work, the tests not marked slow or verl_e2e (`-m "not slow and not verl_e2e"`); CI runs all.
# --cuda: on a machine with a GPU, only the tests marked cuda (tests/test_cuda.py), no lint; fails without a device
# (elsewhere those tests skip themselves).
set -uo pipefail
cd "$(dirname "$0")/.."
marker=()
if [ "${1:-}" = "--cuda" ]; then
  shift
  python3 -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else "error: --cuda: torch sees no CUDA device")' || exit 1
  exec python3 -m pytest -q -m cuda tests/test_cuda.py "$@"
fi
if [ "${1:-}" = "--fast" ]; then
  shift
  marker=(-m "not slow and not verl_e2e")
fi
python3 -m ruff check src tests benchmarks examples studies scripts || exit 1
# The import contract (pyproject.toml [tool.importlinter]): the layers, and no import cycles.
lint_imports="$(python3 -c 'import os, sys; print(os.path.join(os.path.dirname(sys.executable), "lint-imports"))')"
"$lint_imports" --no-cache >/dev/null || { "$lint_imports" --no-cache; exit 1; }
python3 -m pytest -q "${marker[@]}" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
