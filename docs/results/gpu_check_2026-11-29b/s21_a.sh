#!/usr/bin/env bash
# Session 21, call A: forward version 8 (TMA key tiles) — its reference checks, A/B timing against
# version 6 of the same pack and of the old pack (pre-refactor library), ncu of 8, then the library's
# operator checks with the new pack (the consumer-side refactor of the library forward).
set -uo pipefail
cd "$(dirname "$0")/.."
run_pack() {  # run_pack PACK ARGS...
  ( export PREBUILT="$1"; shift; source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
    "$build/dev/cuda/relation_kl" "$@" )
}
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
for pv in "forward 8" "forward 6"; do
  timeout 150 bash -c "$(declare -f run_pack); run_pack .devpack/devbin.tar.xz $pv" >"$OUT/new_${pv// /_}.log" 2>&1
  echo "new $pv rc=$? fails=$(grep -c FAIL "$OUT/new_${pv// /_}.log") ok=$(grep -c '^ok' "$OUT/new_${pv// /_}.log") skip=$(grep -ci skip "$OUT/new_${pv// /_}.log")"
done
grep -m3 -iE "FAIL|error|skip" "$OUT/new_forward_8.log"
for r in 1 2 3; do for c in "devbin forward_8" "devbin forward_6" "old forward_6"; do
  set -- $c; pk=$1; pv=${2/_/ }
  timeout 60 bash -c "$(declare -f run_pack); run_pack .devpack/$pk.tar.xz $pv --time-only" 2>&1 | grep "^time" |
    awk -v t="r$r $pk $2" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' | tee -a "$OUT/ab.log"
done; done
echo "== medians (ms)"
python3 - "$OUT/ab.log" <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r, pk, pv, n, ms = l.split(); d[(pk, pv, n)].append(float(ms))
for n in ["n4096", "n8192"]:
    o6, n6, n8 = (st.median(d.get(k, [float('nan')])) for k in [("old","forward_6",n),("devbin","forward_6",n),("devbin","forward_8",n)])
    print(f"{n} old6 {o6:.3f} new6 {n6:.3f} v8 {n8:.3f} v8/new6 {n8/n6:.3f}")
PY
M='--section SpeedOfLight --section MemoryWorkloadAnalysis --section SourceCounters --section WarpStateStats'
( export PREBUILT=.devpack/devbin.tar.xz; source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null
  timeout 120 ncu --clock-control none $M -k regex:relation_kl_fwd_tma --launch-skip 14 -c 1 "$build/dev/cuda/relation_kl" forward 8 --time-only >"$OUT/ncu_fwd_8.txt" 2>&1 )
echo "== ncu forward 8"; grep -E "Duration|L2 Cache Throughput|Issue Slots Busy|excessive" "$OUT/ncu_fwd_8.txt" | head -8
if [[ "${WITH_OPERATOR:-1}" == 1 ]]; then
  PREBUILT=.devpack/devbin.tar.xz OUT="$OUT/operator" SKIP_BENCH=1 timeout 330 scripts/gpu_check.sh --operator 2>&1 | tail -12
fi
