#!/usr/bin/env bash
# Session 21, call F: a second sample of the 7B-shape all-layer step, and the SmolLM2 stage-1 step
# (random weights of the real config) beside plain PyTorch, with the session's kernels.
set -uo pipefail
cd "$(dirname "$0")/.."
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries linear_ard_ops bench_restore_gpu linear_ard_cli >/dev/null || exit 1
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
t0=$SECONDS
timeout 100 "$build/benchmarks/bench_restore_gpu" --cases all:4096,last1:4096 2>&1 | grep -E "^\| (all|last)" | cut -c1-120
echo "restore done at $((SECONDS - t0)) s"
timeout 200 python3 benchmarks/bench_step_real.py --cli "$build/src/cli/linear-ard" --model .devmodel/config --random-weights \
  --cases ard:2048:8 --out "$OUT/step_bench" 2>&1 | tail -6
echo "step done at $((SECONDS - t0)) s"
rm -rf "$OUT"/step_bench/ours_*/model "$OUT"/step_bench/*.npy "$OUT"/step_bench/random_model
