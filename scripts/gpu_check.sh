#!/usr/bin/env bash
# Builds the CUDA relation-KL and its checks on the GPU machine and runs everything in one go:
# the fp64-reference checker (both kernel paths, determinism), compute-sanitizer memcheck on small
# cases, the torch-op check against PyTorch autograd (FlashAttention's 2x rule, Appendix L table)
# and the benchmark. Logs and results go to $OUT (or ./gpu_out).
#   scripts/gpu_check.sh            everything
#   scripts/gpu_check.sh --quick    checks plus the short benchmark (n <= 8K)
#   SKIP_BENCH=1 scripts/gpu_check.sh   checks only
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/gpu_out}"
mkdir -p "$out"
build="${BUILD_DIR:-$root/build-gpu}"
export PYTHONUNBUFFERED=1
quick=""
[[ "${1:-}" == "--quick" ]] && quick="--quick"
status=0

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$out/gpu.txt"
# src/io/tokenizer asks pkg-config for libpcre2-8, which the GPU image lacks; nothing built here
# needs it, so let configure pass with a stub .pc file.
if ! pkg-config --exists libpcre2-8 2>/dev/null; then
  mkdir -p "$build/pkgconfig-stub"
  printf 'Name: libpcre2-8\nDescription: stub\nVersion: 10.42\nLibs: -lpcre2-8\nCflags:\n' \
    >"$build/pkgconfig-stub/libpcre2-8.pc"
  export PKG_CONFIG_PATH="$build/pkgconfig-stub${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLINEAR_ARD_BUILD_TESTS=OFF \
  -DPython3_EXECUTABLE="$(which python3)" -DCMAKE_CUDA_ARCHITECTURES=90-real >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
cmake --build "$build" --target linear_ard_ops linear_ard_core_reference >"$out/build.log" 2>&1 \
  || { grep -B2 -A10 -m3 error "$out/build.log"; exit 1; }
# tests/gpu is a stand-alone program (no GoogleTest): link it against the built core libraries.
c++ -O2 -std=c++17 -fopenmp -Iinclude -I"${CUDA_HOME:-/usr/local/cuda}/include" tests/gpu/relation_kl_gpu_check.cpp \
  "$build/src/core/liblinear_ard_core_reference.a" "$build/src/core/liblinear_ard_core.a" \
  -L"${CUDA_HOME:-/usr/local/cuda}/lib64" -lcudart -o "$build/relation_kl_gpu_check" || exit 1
echo "build done"

"$build/relation_kl_gpu_check" 2>&1 | tee "$out/check_reference.log" | grep -v "^ok" || status=1
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/relation_kl_gpu_check" --quick \
    >"$out/memcheck.log" 2>&1 || status=1
  tail -3 "$out/memcheck.log"
fi
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
python3 tests/gpu/check_relation_kl_torch.py 2>&1 | tee "$out/check_torch.log" | grep -v "^ok" || status=1
if [[ -z "${SKIP_BENCH:-}" ]]; then
  python3 benchmarks/bench_relation_kl_gpu.py --out "$out" $quick 2>&1 | tee "$out/bench.log" || status=1
fi
exit $status
