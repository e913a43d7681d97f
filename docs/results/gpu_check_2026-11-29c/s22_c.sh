#!/usr/bin/env bash
# Session 22, call C (run from the repository root): forward 9 and backward 12 promoted (the
# library's sm_90a passes for D = 64, 128 where TMA reads both sides) with the length-dependent
# launch order: the dev checks of 9 and 12 (now the library's) and 8, 11 (dev); the library's
# operator checks (fp64 reference, memcheck, 2x rule, non-finite rule); the operator benchmark at
# every size beside SDPA; the 7B-shape steps; the SmolLM2 stage-1 step beside plain PyTorch;
# #18's table.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
for pv in "forward 9" "backward 12" "forward 8" "backward 11"; do
  timeout 120 "$rk" $pv > "$OUT/check_${pv// /_}.log" 2>&1
  echo "check $pv rc=$? ok=$(grep -c '^ok' "$OUT/check_${pv// /_}.log") fail=$(grep -c FAIL "$OUT/check_${pv// /_}.log") skip=$(grep -c '^skip' "$OUT/check_${pv// /_}.log")"
  grep -E "^time" "$OUT/check_${pv// /_}.log" | awk '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print "   ", n, ms, "ms"}'
done
echo "dev done at $((SECONDS - t0)) s"
OUT="$OUT/operator" SKIP_BENCH=1 timeout 200 scripts/gpu_check.sh --operator > "$OUT/operator.log" 2>&1; tail -7 "$OUT/operator.log"
grep -E "^FAIL" "$OUT/operator/check_reference.log" | head -5
echo "checks done at $((SECONDS - t0)) s"
gpu_binaries linear_ard_ops bench_restore_gpu linear_ard_cli >/dev/null
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
timeout 150 python3 benchmarks/bench_relation_kl_gpu.py --out "$OUT" > "$OUT/bench.log" 2>&1; echo "bench rc=$? at $((SECONDS - t0)) s"
grep -E "^\| (1K|2K|4K|8K|16K|32K) " "$OUT/bench.log" | head -6
OUT="$OUT" timeout 200 scripts/gpu_check.sh --restore-bench > "$OUT/restore.log" 2>&1; echo "restore rc=$? at $((SECONDS - t0)) s"
python3 scripts/perf_table.py "$OUT" 2>&1 | grep -E "relation KL|7B"
timeout 150 python3 benchmarks/bench_step_real.py --cli "$build/src/cli/linear-ard" --model .devmodel/config --random-weights \
  --cases ard:2048:8 --out "$OUT/step_bench" 2>&1 | tail -4
echo "step done at $((SECONDS - t0)) s"
rm -rf "$OUT"/step_bench/ours_*/model "$OUT"/step_bench/*.npy "$OUT"/step_bench/random_model
