#!/usr/bin/env bash
# Session 23, call C (run from the repository root): forward version 10 promoted for n >= 8K (the
# library's sm_90a TMA forward with three consumer warpgroups from kFwdThreeGroupsFrom keys on):
# dev checks of forward 9 and 10 (each at every length), the library's operator checks (fp64
# reference on every path, memcheck, torch checks with two cases past 8K, the 4K/8K/16K benchmark),
# then the operator benchmark at every size beside SDPA.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
for pv in "forward 9" "forward 10"; do
  LINEAR_ARD_TIME_LENGTHS=4096,8192,16384 timeout 120 "$rk" $pv > "$OUT/check_${pv// /_}.log" 2>&1
  echo "check $pv rc=$? ok=$(grep -c '^ok' "$OUT/check_${pv// /_}.log") fail=$(grep -c FAIL "$OUT/check_${pv// /_}.log") skip=$(grep -c '^skip' "$OUT/check_${pv// /_}.log")"
  grep -E "^time" "$OUT/check_${pv// /_}.log" | awk '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print "   ", n, ms, "ms"}'
done
echo "dev done at $((SECONDS - t0)) s"
OUT="$OUT/operator" timeout 330 scripts/gpu_check.sh --operator > "$OUT/operator.log" 2>&1; echo "operator rc=$?"
tail -8 "$OUT/operator.log"
grep -E "^FAIL" "$OUT/operator/check_reference.log" "$OUT/operator/check_torch.log" | head -5
grep -E "n=(8200|8203)" "$OUT/operator/check_torch.log" | head -4
echo "checks done at $((SECONDS - t0)) s"
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
timeout 150 python3 benchmarks/bench_relation_kl_gpu.py --out "$OUT" > "$OUT/bench.log" 2>&1; echo "bench rc=$? at $((SECONDS - t0)) s"
grep -E "^\| (1K|2K|4K|8K|16K|32K) " "$OUT/bench.log" | head -6
