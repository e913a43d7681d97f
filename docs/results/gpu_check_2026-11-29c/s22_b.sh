#!/usr/bin/env bash
# Session 22, call B (run from the repository root): forward 9 and backward 12 (dev) against the
# library's forward 8 and backward 11: reference checks (fp64, dev harness cases), then times at
# 4K / 8K / 16K, two rounds, each run in its own process, with the library's launch order (its new
# length-dependent group) and, for 8 and 11, the old group of 8.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
for pv in "forward 9" "backward 12" "forward 8" "backward 11"; do
  timeout 150 "$rk" $pv > "$OUT/check_${pv// /_}.log" 2>&1
  echo "check $pv rc=$? ok=$(grep -c '^ok' "$OUT/check_${pv// /_}.log") fail=$(grep -c FAIL "$OUT/check_${pv// /_}.log") skip=$(grep -c '^skip' "$OUT/check_${pv// /_}.log")"
  grep FAIL "$OUT/check_${pv// /_}.log" | head -3
done
for pv in "forward 9" "backward 12"; do
  LINEAR_ARD_TIME_LENGTHS=1000 timeout 240 compute-sanitizer --tool memcheck "$rk" $pv > "$OUT/memcheck_${pv// /_}.log" 2>&1
  echo "memcheck $pv rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck_${pv// /_}.log" | tail -1)"
done
echo "checks done at $((SECONDS - t0)) s"
time_run() {  # label, group (empty: library's), pass, version
  LINEAR_ARD_TIME_LENGTHS=4096,8192,16384 ${2:+LINEAR_ARD_CTA_HEAD_GROUP=$2} timeout 120 "$rk" $3 $4 --time-only 2>&1 |
    grep "^time" | awk -v t="$1 $3_$4" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' >> "$OUT/times.log"
}
for r in 1 2; do
  for pv in "forward 8" "forward 9" "backward 11" "backward 12"; do time_run lib "" $pv; done
  for pv in "forward 8" "backward 11"; do time_run g8 8 $pv; done
done
echo "timing done at $((SECONDS - t0)) s"
python3 - "$OUT/times.log" <<'PY'
import sys, statistics as st, collections
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    g, pv, n, ms = l.split(); d[(g, pv, n)].append(float(ms))
ns = ["n4096", "n8192", "n16384"]
print("ms (median of 2)       " + " ".join(f"{n:>8}" for n in ns))
for g, pv in [("g8", "forward_8"), ("lib", "forward_8"), ("lib", "forward_9"), ("g8", "backward_11"), ("lib", "backward_11"), ("lib", "backward_12")]:
    print(f"{g:4} {pv:17}" + " ".join(f"{st.median(d[(g, pv, n)]) if d[(g, pv, n)] else float('nan'):8.3f}" for n in ns))
PY
