#!/usr/bin/env bash
# Configures and builds linear-ard on the GPU machine, the one way every GPU script does it: the
# libraries carried in .devdeps (dev/gpu/device_deps.sh; PCRE2 / utf8proc / yaml-cpp / SentencePiece built
# there from Debian's source tarballs once, dev/gpu/device_deps_build.sh), CMake + Ninja in
# $BUILD_DIR (default build-gpu), TORCH_CUDA_ARCH_LIST 9.0 unless set. Logs go to $LOG_DIR.
#   dev/gpu/gpu_build.sh TARGET...        e.g. linear_ard_cli linear_ard_ops
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="${BUILD_DIR:-$root/build-gpu}"
logs="${LOG_DIR:-$build}"
mkdir -p "$logs"
if [[ -d "$root/.devdeps" ]]; then
  export CMAKE_PREFIX_PATH="$root/.devdeps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  if [[ -d "$root/.devdeps/src" ]]; then
    prefix="$("$root/dev/gpu/device_deps_build.sh")" || { echo "gpu_build: device dependencies failed to build"; exit 1; }
    export CMAKE_PREFIX_PATH="$prefix:$CMAKE_PREFIX_PATH"
  fi
fi
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
# No GoogleTest there: LINEAR_ARD_BUILD_TESTS stays on for the tools the Python checks drive.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(which python3)" \
  >"$logs/configure.log" 2>&1 || { tail -30 "$logs/configure.log"; exit 1; }
# A target whose layer was left out (a library missing: see configure.log) is skipped with a note;
# the scripts check for the binaries they need.
known="$(cmake --build "$build" --target help)"
targets=()
for t in "$@"; do
  if grep -qE "^(\.\.\. )?$t(:| |$)" <<<"$known"; then targets+=("$t"); else echo "gpu_build: no target $t (left out at configure)"; fi
done
[[ ${#targets[@]} -gt 0 ]] || { echo "gpu_build: nothing to build"; exit 1; }
cmake --build "$build" --target "${targets[@]}" >"$logs/build.log" 2>&1 \
  || { grep -B2 -A10 -m3 error "$logs/build.log"; exit 1; }
echo "gpu_build: built ${targets[*]} in $build"
