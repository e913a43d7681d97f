#!/usr/bin/env bash
# Session 21, call E: backward version 11 promoted (the library's sm_90a backward for D = 64, 128
# where TMA can read both sides): the dev checks of forward 8, backward 6 and 11 (with a 3 x 3 case),
# backward 6 vs 11 at the library's group 8, the library's operator checks, then the operator
# benchmark at every size, the 7B-shape step and #18's table.
set -uo pipefail
cd "$(dirname "$0")/.."
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
t0=$SECONDS
for pv in "forward 8" "backward 11" "backward 6"; do
  timeout 120 "$rk" $pv > "$OUT/check_${pv// /_}.log" 2>&1
  echo "check $pv rc=$? ok=$(grep -c '^ok' "$OUT/check_${pv// /_}.log") fail=$(grep -c FAIL "$OUT/check_${pv// /_}.log") skip=$(grep -c '^skip' "$OUT/check_${pv// /_}.log")"
done
for v in 6 11; do
  LINEAR_ARD_CTA_HEAD_GROUP=8 timeout 60 "$rk" backward $v --time-only 2>&1 | grep "^time" |
    awk -v t="v$v" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' | tee -a "$OUT/ab.log"
done
echo "dev done at $((SECONDS - t0)) s"
OUT="$OUT/operator" SKIP_BENCH=1 timeout 200 scripts/gpu_check.sh --operator > "$OUT/operator.log" 2>&1; tail -7 "$OUT/operator.log"
grep -E "^FAIL" "$OUT/operator/check_reference.log" | head -5
echo "checks done at $((SECONDS - t0)) s"
gpu_binaries linear_ard_ops bench_restore_gpu >/dev/null
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
timeout 150 python3 benchmarks/bench_relation_kl_gpu.py --out "$OUT" > "$OUT/bench.log" 2>&1; echo "bench rc=$? at $((SECONDS - t0)) s"
grep -E "^\| (1K|2K|4K|8K|16K|32K) " "$OUT/bench.log" | head -6
OUT="$OUT" timeout 200 scripts/gpu_check.sh --restore-bench > "$OUT/restore.log" 2>&1; echo "restore rc=$? at $((SECONDS - t0)) s"
python3 scripts/perf_table.py "$OUT" 2>&1 | grep -E "relation KL|7B"
