#!/usr/bin/env bash
# The SASS of a small CUDA source, on any machine with nvcc (no GPU): compiles SOURCE.cu to a cubin
# for ARCH (default sm_90a; -O3, as the library) and prints `cuobjdump -sass` of it. cuobjdump (and
# the nvdisasm it runs) are taken from PATH, else from PyPI's nvidia-cuda-cuobjdump and
# nvidia-cuda-nvdisasm wheels, fetched by pip into a temporary folder (the CUDA toolkit's Debian
# packages for nvcc leave them out).
#   dev/cuda/sass_dump.sh SOURCE.cu [ARCH]
set -euo pipefail
src="${1:?usage: dev/cuda/sass_dump.sh SOURCE.cu [ARCH]}"
arch="${2:-sm_90a}"
[[ -f "$src" ]] || { echo "sass_dump: no such file: $src" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if ! command -v cuobjdump >/dev/null || ! command -v nvdisasm >/dev/null; then
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp/wheel" nvidia-cuda-cuobjdump \
    nvidia-cuda-nvdisasm >&2 \
    || { echo "sass_dump: cuobjdump not on PATH and pip could not fetch its wheels" >&2; exit 1; }
  for w in "$tmp"/wheel/*.whl; do python3 -m zipfile -e "$w" "$tmp/wheel/x"; done
  for t in cuobjdump nvdisasm; do
    f="$(find "$tmp/wheel/x" -type f -name "$t" | head -1)"
    [[ -n "$f" ]] || { echo "sass_dump: the fetched wheels hold no $t" >&2; exit 1; }
    chmod +x "$f"
    PATH="$(dirname "$f"):$PATH"
  done
fi
nvcc -O3 -std=c++17 -arch="$arch" -cubin -o "$tmp/out.cubin" "$src"
cuobjdump -sass "$tmp/out.cubin"
