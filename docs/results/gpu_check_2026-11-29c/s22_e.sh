#!/usr/bin/env bash
# Session 22, call E (run from the repository root): after a negative-scale reference case (the sm_90a
# forward's unfolded update, fwd_fold_ok false) and the dev harness's one runner for the superseded
# TMA kernels: the dev checks of forward 8 / 9 and backward 11 / 12, and the library's operator checks.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
t0=$SECONDS
for pv in "forward 8" "forward 9" "backward 11" "backward 12"; do
  timeout 120 "$rk" $pv > "$OUT/check_${pv// /_}.log" 2>&1
  echo "check $pv rc=$? ok=$(grep -c '^ok' "$OUT/check_${pv// /_}.log") fail=$(grep -c FAIL "$OUT/check_${pv// /_}.log") skip=$(grep -c '^skip' "$OUT/check_${pv// /_}.log")"
done
echo "dev done at $((SECONDS - t0)) s"
OUT="$OUT/operator" SKIP_BENCH=1 timeout 240 scripts/gpu_check.sh --operator > "$OUT/operator.log" 2>&1; tail -7 "$OUT/operator.log"
grep -E "tscale|^FAIL" "$OUT/operator/check_reference.log" | head -8
echo "checks done at $((SECONDS - t0)) s"
