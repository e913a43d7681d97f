# Sourced by the GPU scripts (gpu_check.sh, multi_gpu_check.sh, experiment.sh):
#   gpu_binaries TARGET...
# sets `build` to a build tree that holds the TARGETs: $PREBUILT when set (binaries packed on the
# CI-like machine by dev/gpu/prebuilt_pack.sh and carried; the Debian libraries they link come in
# $PREBUILT/lib, libtorch is this machine's), else $BUILD_DIR (default build-gpu) after building the
# TARGETs there with dev/gpu/gpu_build.sh (logs in $LOG_DIR). PREBUILT may also name the archive
# prebuilt_pack.sh writes (.devpack/devbin.tar.xz), unpacked beside it on first use. Returns non-zero
# when the build fails.
gpu_binaries() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
  if [[ -n "${PREBUILT:-}" ]]; then
    if [[ -f "$PREBUILT" && "$PREBUILT" == *.tar.xz ]]; then
      local dir="${PREBUILT%.tar.xz}"
      if [[ ! -d "$dir" ]]; then
        mkdir -p "$dir.tmp" && tar -C "$dir.tmp" -xJf "$PREBUILT" && mv "$dir.tmp" "$dir" \
          || { echo "gpu_binaries: cannot unpack $PREBUILT" >&2; return 1; }
      fi
      PREBUILT="$dir"
    fi
    [[ -d "$PREBUILT" ]] || { echo "gpu_binaries: PREBUILT=$PREBUILT is neither a folder nor a .tar.xz of dev/gpu/prebuilt_pack.sh" >&2; return 1; }
    build="$(cd "$PREBUILT" && pwd)" || return 1
    local torch_lib
    # libtorch and the CUDA runtime of the wheel (nvidia/cu13/lib), which the binaries also ask for.
    torch_lib="$(python3 -c 'import glob, os, torch; d = os.path.dirname(torch.__file__)
print(":".join([os.path.join(d, "lib")] + sorted(glob.glob(os.path.join(d, "..", "nvidia", "cu*", "lib")))))')" || return 1
    export LD_LIBRARY_PATH="$build/lib:$build/src/ops:$build/src/model:$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    echo "gpu_binaries: prebuilt binaries in $build (not built here)"
  else
    build="${BUILD_DIR:-$root/build-gpu}"
    BUILD_DIR="$build" "$root/dev/gpu/gpu_build.sh" "$@"
  fi
}
