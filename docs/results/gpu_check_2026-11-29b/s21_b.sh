#!/usr/bin/env bash
# Session 21, call B: the library with forward version 8 promoted (TMA key tiles): the operator's
# checks, the operator benchmark at 4K-32K beside SDPA, the 7B-shape restore step, #18's table.
set -uo pipefail
cd "$(dirname "$0")/.."
export PREBUILT=.devpack/devbin.tar.xz
t0=$SECONDS
OUT="$OUT/operator" SKIP_BENCH=1 timeout 200 scripts/gpu_check.sh --operator 2>&1 | tail -8
echo "checks done at $((SECONDS - t0)) s"
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries linear_ard_ops bench_restore_gpu >/dev/null
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
timeout 150 python3 benchmarks/bench_relation_kl_gpu.py --out "$OUT" > "$OUT/bench.log" 2>&1; echo "bench rc=$? at $((SECONDS - t0)) s"
tail -8 "$OUT/bench.log"
OUT="$OUT" timeout 230 scripts/gpu_check.sh --restore-bench 2>&1 | grep -E "^\| (last|all)|ok|FAIL" | cut -c1-170
echo "restore bench done at $((SECONDS - t0)) s"
cp "$OUT/operator/gpu.txt" "$OUT/gpu.txt" 2>/dev/null
python3 scripts/perf_table.py "$OUT" 2>&1 | tail -14
