#!/usr/bin/env bash
# The project's test command: lint (ruff, import order included), then the test suite.
# Fails on any lint error, any test failure and on "no tests collected" (pytest exit 5).
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m ruff check src tests benchmarks || exit 1
python3 -m pytest -q "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "error: pytest collected no tests" >&2
  exit 1
fi
exit "$rc"
