#!/usr/bin/env bash
# Builds the CUDA relation-KL and its checks on the GPU machine and runs everything in one go:
# the fp64-reference checker (both kernel paths, determinism), compute-sanitizer memcheck on small
# cases, the torch-op check against PyTorch autograd (FlashAttention's 2x rule, Appendix L table)
# and the benchmark. Logs and results go to $OUT (or ./gpu_out).
#   scripts/gpu_check.sh            everything
#   scripts/gpu_check.sh --quick    checks plus the short benchmark (n <= 16K, LLaMA-3 case)
#   SKIP_BENCH=1 scripts/gpu_check.sh   checks only
#   scripts/gpu_check.sh --iterate  reference checker and the benchmark at 4K/8K/16K only (tuning)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="${OUT:-$root/gpu_out}"
mkdir -p "$out"
build="${BUILD_DIR:-$root/build-gpu}"
export PYTHONUNBUFFERED=1
quick=""
[[ "${1:-}" == "--quick" ]] && quick="--quick"
[[ "${1:-}" == "--iterate" ]] && quick="--sizes 4096,8192,16384"
status=0
summary=()
# step NAME RC: remembers a step's outcome for the table printed last.
step() { summary+=("$(printf '%-34s %s' "$1" "$([[ $2 -eq 0 ]] && echo ok || echo FAILED)")"); [[ $2 -eq 0 ]] || status=1; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$out/gpu.txt"
# Libraries carried from the CI-like machine (scripts/device_deps.sh): header-only ones as they are,
# PCRE2 / yaml-cpp / SentencePiece built here from Debian's source tarballs, once.
if [[ -d "$root/.devdeps" ]]; then
  export CMAKE_PREFIX_PATH="$root/.devdeps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  if [[ -d "$root/.devdeps/src" ]]; then
    prefix="$("$root/scripts/device_deps_build.sh")" || { echo "device dependencies failed to build"; exit 1; }
    export CMAKE_PREFIX_PATH="$prefix:$CMAKE_PREFIX_PATH"
  fi
fi
# No GoogleTest there: LINEAR_ARD_BUILD_TESTS stays on for the tools the Python checks drive.
export TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPython3_EXECUTABLE="$(which python3)" >"$out/configure.log" 2>&1 \
  || { tail -30 "$out/configure.log"; exit 1; }
targets="linear_ard_ops relation_kl_gpu_check"
cmake --build "$build" --target help | grep -q model_dump && targets="$targets model_dump"
cmake --build "$build" --target $targets >"$out/build.log" 2>&1 \
  || { grep -B2 -A10 -m3 error "$out/build.log"; exit 1; }
echo "build done"

"$build/tests/gpu/relation_kl_gpu_check" 2>&1 | tee "$out/check_reference.log" | grep -v "^ok"
step "CUDA vs fp64 reference" "${PIPESTATUS[0]}"
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
if [[ "${1:-}" == "--iterate" ]]; then
  python3 benchmarks/bench_relation_kl_gpu.py --out "$out" $quick 2>&1 | tee "$out/bench.log" || status=1
  exit $status
fi
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "$build/tests/gpu/relation_kl_gpu_check" --quick \
    >"$out/memcheck.log" 2>&1
  step "compute-sanitizer memcheck" $?
  tail -3 "$out/memcheck.log"
fi
python3 tests/gpu/check_relation_kl_torch.py 2>&1 | tee "$out/check_torch.log" | grep -v "^ok"
step "torch op vs autograd (2x rule)" "${PIPESTATUS[0]}"
# The model against transformers in bf16 on CUDA (FlashAttention's rule; docs/parity.md).
if [[ -x "$build/tests/model/model_dump" ]]; then
  LINEAR_ARD_BUILD_DIR="$build" python3 tests/python/test_model_parity.py --device cuda --dtype bfloat16 \
    --table "$out/parity_cuda_bf16.md" >"$out/parity.log" 2>&1
  step "model vs transformers (bf16, CUDA)" $?
  tail -6 "$out/parity.log"
else
  echo "model parity skipped: model_dump not built (run scripts/device_deps.sh and carry .devdeps)"
  step "model vs transformers (bf16, CUDA)" 1
fi
if [[ -z "${SKIP_BENCH:-}" ]]; then
  python3 benchmarks/bench_relation_kl_gpu.py --out "$out" $quick 2>&1 | tee "$out/bench.log"
  step "benchmark" "${PIPESTATUS[0]}"
fi
printf '\n%s\n' "GPU checks ($(head -2 "$out/gpu.txt" | tail -1 | cut -d, -f1))"
printf '%s\n' "${summary[@]}"
exit $status
