#!/usr/bin/env bash
# Session 23, call B (run from the repository root): dev/cuda forward version 10 (three consumer
# warpgroups) checked against the fp64 reference, then 9 (the library's) and 10 timed at 4K/8K/16K,
# each in its own process, alternated twice.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
timeout 150 "$rk" forward 10 > "$OUT/check_forward_10.log" 2>&1
echo "check forward 10 rc=$? ok=$(grep -c '^ok' "$OUT/check_forward_10.log") fail=$(grep -c FAIL "$OUT/check_forward_10.log") skip=$(grep -c '^skip' "$OUT/check_forward_10.log")"
grep -E "FAIL" "$OUT/check_forward_10.log" | head -5
for rep in 1 2; do for v in 9 10; do
  LINEAR_ARD_TIME_LENGTHS=4096,8192,16384 timeout 60 "$rk" forward $v --time-only 2>&1 |
    grep "^time" | awk -v t="run$rep forward_$v" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' | tee -a "$OUT/times.log"
done; done
