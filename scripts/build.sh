#!/usr/bin/env bash
# The one CPU build every script uses (test.sh, demo.sh, make_demo_model.sh): installs what the
# build needs on Debian 12 (scripts/setup.sh: apt packages, the .venv whose libtorch it links),
# configures BUILD_DIR (Release, that Python) and builds the targets given, or everything, printing
# the time of each of the three (scripts/timing.sh).
#   scripts/build.sh [--require-all] BUILD_DIR [TARGET...]
#     --require-all   a library some layer needs that is missing fails the configure
#                     (LINEAR_ARD_REQUIRE_ALL=ON) instead of leaving the layer out with a warning
# Environment: LINEAR_ARD_WITH_CUDA, ON, OFF or AUTO (default: AUTO, the CUDA kernels where nvcc is
# found), passed on every configure so that a folder an earlier call configured otherwise follows;
# LINEAR_ARD_CMAKE_ARGS, more configure arguments (split on spaces; they come last and win), e.g.
#   LINEAR_ARD_CMAKE_ARGS="-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache";
# CMAKE_BUILD_PARALLEL_LEVEL, the build's jobs (default: nproc).
# The configure's own output goes to BUILD_DIR/configure.log (its warnings and errors to stderr).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

configure=(-DCMAKE_BUILD_TYPE=Release -DLINEAR_ARD_WITH_CUDA="${LINEAR_ARD_WITH_CUDA:-AUTO}")
if [[ "${1:-}" == "--require-all" ]]; then
  configure+=(-DLINEAR_ARD_REQUIRE_ALL=ON)
  shift
fi
if [[ $# -lt 1 || "$1" == -* ]]; then
  echo "usage: scripts/build.sh [--require-all] BUILD_DIR [TARGET...]" >&2
  exit 2
fi
build_dir="$1"
shift

source "$root/scripts/timing.sh"
linear_ard_timed "setup" "$root/scripts/setup.sh"
source "$root/scripts/env.sh"
# Ninja where it is installed (scripts/setup.sh installs it) schedules the whole build as one graph:
# a target's objects compile while the libraries it links are still linking, which keeps both of a
# 2-core machine's cores busy. A folder keeps the generator it was first configured with.
if [[ ! -f "$build_dir/CMakeCache.txt" && -z "${CMAKE_GENERATOR:-}" ]] && command -v ninja >/dev/null; then
  configure+=(-G Ninja)
fi
read -r -a extra <<<"${LINEAR_ARD_CMAKE_ARGS:-}"
configure+=(-DPython3_EXECUTABLE="$LINEAR_ARD_PYTHON" ${extra[@]+"${extra[@]}"})

# ccache (when a launcher names it) may cache compiles that use the precompiled <torch/torch.h>
# (cmake/torch_pch.cmake) only with these relaxations; the header's own hash still keys them.
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"

mkdir -p "$build_dir"
mark=$(linear_ard_mark)
if ! cmake -S . -B "$build_dir" "${configure[@]}" >"$build_dir/configure.log"; then
  tail -30 "$build_dir/configure.log" >&2
  echo "build: configuring $build_dir failed (log: $build_dir/configure.log)" >&2
  exit 1
fi
linear_ard_report "configure $build_dir" "$mark"
targets=()
for t in "$@"; do targets+=(--target "$t"); done
linear_ard_timed "build $build_dir${*:+ ($*)}" \
  cmake --build "$build_dir" -j "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" ${targets[@]+"${targets[@]}"}
