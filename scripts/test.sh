#!/usr/bin/env bash
# The project's test command (README.md): installs what the build and the tests need on a fresh
# Debian 12 machine, configures, builds (CUDA sources too, where nvcc is installed) and runs every
# suite: GoogleTest through ctest, then pytest. Exits non-zero on any failure.
#   scripts/test.sh            everything
#   BUILD_DIR=build-x scripts/test.sh   another build folder
#   (LINEAR_ARD_CMAKE_ARGS: more configure arguments, scripts/build.sh)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"

# Every layer is required here: a missing library fails instead of leaving its tests out.
"$root/scripts/build.sh" --require-all "$build_dir"
source "$root/scripts/env.sh"
source "$root/scripts/timing.sh"
linear_ard_timed "ctest" ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
# pytest on every core (pytest-xdist): a file's tests stay together on one worker, so the expensive
# module fixtures (a trained tiny teacher, an lm-eval run) are built once; the slowest tests are
# listed at the end.
LINEAR_ARD_BUILD_DIR="$root/$build_dir" linear_ard_timed "pytest" \
  "$LINEAR_ARD_PYTHON" -m pytest -q -n "$(nproc)" --dist loadfile --durations=15 tests/python
