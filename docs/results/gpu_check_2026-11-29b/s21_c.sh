#!/usr/bin/env bash
# Session 21, call C: the launch order (RelationKLParams::cta_head_group): reference checks of the
# library's forward (8) and backward (6) at several groups, their times at groups 1..32 (each run in
# its own process, two rounds), then the library's operator checks, benchmark and 7B-shape step
# with the library's default group.
set -uo pipefail
cd "$(dirname "$0")/.."
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
t0=$SECONDS
for G in 1 3 8; do for pv in "forward 8" "forward 6" "backward 6"; do
  LINEAR_ARD_CTA_HEAD_GROUP=$G timeout 120 "$rk" $pv > "$OUT/check_g${G}_${pv// /_}.log" 2>&1
  echo "check G=$G $pv rc=$? ok=$(grep -c '^ok' "$OUT/check_g${G}_${pv// /_}.log") fail=$(grep -c FAIL "$OUT/check_g${G}_${pv// /_}.log")"
done; done
for r in 1 2; do for G in 1 2 4 8 16 32; do for pv in "forward 8" "backward 6"; do
  LINEAR_ARD_CTA_HEAD_GROUP=$G timeout 60 "$rk" $pv --time-only 2>&1 | grep "^time" |
    awk -v t="r$r G$G ${pv// /_}" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' >> "$OUT/order.log"
done; done; done
echo "timing done at $((SECONDS - t0)) s"
python3 - "$OUT/order.log" <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r, G, pv, n, ms = l.split(); d[(pv, n, G)].append(float(ms))
print("pass n " + " ".join(f"G{g:>6}" for g in [1, 2, 4, 8, 16, 32]))
for pv in ["forward_8", "backward_6"]:
    for n in ["n4096", "n8192"]:
        print(pv, n, " ".join(f"{st.median(d[(pv, n, 'G%d' % g)]):7.3f}" for g in [1, 2, 4, 8, 16, 32]))
PY
OUT="$OUT/operator" SKIP_BENCH=1 timeout 200 scripts/gpu_check.sh --operator > "$OUT/operator.log" 2>&1; tail -7 "$OUT/operator.log"
echo "checks done at $((SECONDS - t0)) s"
gpu_binaries linear_ard_ops bench_restore_gpu >/dev/null
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
timeout 150 python3 benchmarks/bench_relation_kl_gpu.py --out "$OUT" > "$OUT/bench.log" 2>&1; echo "bench rc=$? at $((SECONDS - t0)) s"
OUT="$OUT" timeout 200 scripts/gpu_check.sh --restore-bench > "$OUT/restore.log" 2>&1; echo "restore rc=$? at $((SECONDS - t0)) s"
python3 scripts/perf_table.py "$OUT" 2>&1 | grep -E "relation KL|7B"
