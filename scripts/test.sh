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
ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)"
LINEAR_ARD_BUILD_DIR="$root/$build_dir" "$LINEAR_ARD_PYTHON" -m pytest -q tests/python
