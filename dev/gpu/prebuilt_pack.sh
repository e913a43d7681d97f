#!/usr/bin/env bash
# Packs binaries built on this (CI-like, Debian 12) machine for the GPU machine, so a device call
# can skip its ~3.5-minute build: the same PyPI libtorch 2.11 runs on both, and Debian's glibc 2.36
# is older than the GPU image's. Copies whichever of the GPU scripts' targets exist in BUILD_DIR
# into OUT (default .devbin, git-excluded) with the build tree's layout, plus the Debian shared
# libraries linear-ard links (yaml-cpp, PCRE2, utf8proc, SentencePiece) into OUT/lib, which the GPU image
# lacks. On the device: carry OUT and run e.g. `PREBUILT=.devbin dev/gpu/gpu_check.sh --iterate`.
# Also writes .devpack/devbin.tar.xz (~5 MB instead of ~50: the fat binaries compress well), for calls
# whose carried files would pass the device's 64 MiB (e.g. with the corpus): carry .devpack and set
# PREBUILT=.devpack/devbin.tar.xz, which gpu_binaries.sh unpacks there.
#   dev/gpu/prebuilt_pack.sh BUILD_DIR [OUT]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:?usage: dev/gpu/prebuilt_pack.sh BUILD_DIR [OUT]}"
out="${2:-$root/.devbin}"
[[ -d "$build" ]] || { echo "prebuilt_pack: $build is not a build folder" >&2; exit 1; }
rm -rf "$out.tmp" && mkdir -p "$out.tmp/lib"
n=0
for f in src/ops/liblinear_ard_ops.so src/model/liblinear_ard_model.so tests/core/relation_kl_ops \
         tests/model/model_dump tests/model/fused_kernels_check tests/train/fused_adamw_check src/cli/linear-ard benchmarks/bench_restore_gpu \
         benchmarks/bench_lm_loss dev/cuda/relation_kl; do
  if [[ -f "$build/$f" ]]; then
    mkdir -p "$out.tmp/$(dirname "$f")"
    cp "$build/$f" "$out.tmp/$f"
    n=$((n + 1))
  fi
done
# The Debian libraries of every packed ELF file, by the names the loader asks for.
for f in $(find "$out.tmp" -type f ! -path "*/lib/*"); do
  ldd "$f" 2>/dev/null | awk '/libyaml-cpp|libpcre2|libutf8proc|libsentencepiece/ {print $3}' | while read -r lib; do
    [[ -f "$lib" ]] && cp -L "$lib" "$out.tmp/lib/"
  done
done
rm -rf "$out" && mv "$out.tmp" "$out"
mkdir -p "$root/.devpack"
tar -C "$out" -cf - . | xz -6 -T2 >"$root/.devpack/devbin.tar.xz.tmp" && mv "$root/.devpack/devbin.tar.xz.tmp" "$root/.devpack/devbin.tar.xz"
echo "prebuilt_pack: $n binaries and $(ls "$out/lib" | wc -l) libraries in $out ($(du -sh "$out" | cut -f1)), packed in .devpack/devbin.tar.xz ($(du -sh "$root/.devpack/devbin.tar.xz" | cut -f1))"
