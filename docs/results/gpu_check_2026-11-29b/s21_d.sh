#!/usr/bin/env bash
# Session 21, call D: backward version 11 (X tiles by TMA) — reference checks, A/B against
# version 6 (both at the library's launch group 8, each run in its own process), ncu of 11; then
# the library's operator checks after the merge (backward 6's body moved into bwd_wgmma_cta).
set -uo pipefail
cd "$(dirname "$0")/.."
export PREBUILT=.devpack/devbin.tar.xz LINEAR_ARD_CTA_HEAD_GROUP=8
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
t0=$SECONDS
timeout 120 "$rk" backward 11 > "$OUT/check_backward_11.log" 2>&1
echo "check backward 11 rc=$? ok=$(grep -c '^ok' "$OUT/check_backward_11.log") fail=$(grep -c FAIL "$OUT/check_backward_11.log") skip=$(grep -c '^skip' "$OUT/check_backward_11.log")"
grep -E "^(ok|FAIL|skip)" "$OUT/check_backward_11.log" | cut -c1-150
for r in 1 2; do for v in 6 11; do
  timeout 60 "$rk" backward $v --time-only 2>&1 | grep "^time" |
    awk -v t="r$r v$v" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' | tee -a "$OUT/ab.log"
done; done
echo "timing done at $((SECONDS - t0)) s"
M='--section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats'
timeout 90 ncu --clock-control none $M -k regex:relation_kl_bwd_tma --launch-skip 14 -c 1 "$rk" backward 11 --time-only > "$OUT/ncu_bwd_11.txt" 2>&1
grep -E "Duration|L2 Cache Throughput|Issue Slots Busy|Warp Cycles Per Issued|excessive" "$OUT/ncu_bwd_11.txt" | head -6
unset LINEAR_ARD_CTA_HEAD_GROUP
OUT="$OUT/operator" SKIP_BENCH=1 timeout 200 scripts/gpu_check.sh --operator > "$OUT/operator.log" 2>&1; tail -7 "$OUT/operator.log"
echo "done at $((SECONDS - t0)) s"
