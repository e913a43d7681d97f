#!/usr/bin/env bash
# Session 22, call A (run from the repository root): the launch order's group (cta_head_group) of
# the library's forward (8) and backward (11) at 4K-32K, each group in its own process; then ncu's
# full set of both at 8K, with per-instruction stall samples (SASS, CSV) for reading offline.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
for G in 1 2 4 8 16; do for pv in "forward 8" "backward 11"; do
  LINEAR_ARD_TIME_LENGTHS=4096,8192,16384,32768 LINEAR_ARD_CTA_HEAD_GROUP=$G timeout 90 "$rk" $pv --time-only 2>&1 |
    grep "^time" | awk -v t="G$G ${pv// /_}" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' >> "$OUT/order.log"
done; done
echo "sweep done at $((SECONDS - t0)) s"
python3 - "$OUT/order.log" <<'PY'
import sys, collections
d = {}
for l in open(sys.argv[1]):
    G, pv, n, ms = l.split(); d[(pv, n, G)] = float(ms)
gs = ["G1", "G2", "G4", "G8", "G16"]
print("pass        n      " + " ".join(f"{g:>7}" for g in gs))
for pv in ["forward_8", "backward_11"]:
    for n in ["n4096", "n8192", "n16384", "n32768"]:
        print(f"{pv:11} {n:7}" + " ".join(f"{d.get((pv, n, g), float('nan')):7.3f}" for g in gs))
PY
for spec in "forward 8 relation_kl_fwd_tma fwd8" "backward 11 relation_kl_bwd_tma bwd11"; do
  read -r pass ver kern name <<<"$spec"
  LINEAR_ARD_TIME_LENGTHS=8192 timeout 240 ncu --set full -k "regex:$kern" --launch-skip 2 -c 1 -o "$OUT/ncu_$name" \
    "$rk" "$pass" "$ver" --time-only > "$OUT/ncu_${name}_run.log" 2>&1
  ncu -i "$OUT/ncu_$name.ncu-rep" --print-details all > "$OUT/ncu_$name.txt" 2>&1
  ncu -i "$OUT/ncu_$name.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$name.csv" 2>&1
  echo "== ncu $name at $((SECONDS - t0)) s"
  grep -E "^ +(Duration|Compute \(SM\) Throughput|Issue Slots Busy|Warp Cycles Per Issued|Registers Per Thread|Achieved Occupancy)" "$OUT/ncu_$name.txt" | head -8
  grep -iE "Stall|stalled" "$OUT/ncu_$name.txt" | head -12
done
rm -f "$OUT"/ncu_*.ncu-rep.tmp
ls -la "$OUT"
