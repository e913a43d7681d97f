#!/usr/bin/env bash
# Session 23, call D (run from the repository root): forward versions 9 and 10 at D = 64 (the dev
# harness's new D = 64 check case; timing at d = 64, 4K-32K, each version in its own process,
# alternated twice), and the torch checks with the three cases past 8K (D = 128 and D = 64).
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev linear_ard_ops >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for v in 9 10; do
  LINEAR_ARD_TIME_LENGTHS=4096 timeout 120 "$rk" forward $v > "$OUT/check_forward_$v.log" 2>&1
  echo "check forward $v rc=$? ok=$(grep -c '^ok' "$OUT/check_forward_$v.log") fail=$(grep -c FAIL "$OUT/check_forward_$v.log") skip=$(grep -c '^skip' "$OUT/check_forward_$v.log")"
  grep -E "d64/64" "$OUT/check_forward_$v.log" | cut -c1-150
done
for rep in 1 2; do for v in 9 10; do
  LINEAR_ARD_TIME_DIM=64 LINEAR_ARD_TIME_LENGTHS=4096,8192,16384,32768 timeout 90 "$rk" forward $v --time-only 2>&1 |
    grep "^time" | awk -v t="run$rep forward_$v d64" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' | tee -a "$OUT/times_d64.log"
done; done
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
timeout 200 python3 tests/gpu/check_relation_kl_torch.py > "$OUT/check_torch.log" 2>&1; echo "torch check rc=$?"
grep -E "n=(8200|8203|8195)" "$OUT/check_torch.log" | cut -c1-220
grep -E "failure|^\| " "$OUT/check_torch.log" | tail -6
