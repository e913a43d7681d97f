#!/usr/bin/env bash
# Session 23, call A (run from the repository root): ncu's full set, with per-instruction stall
# samples (SASS, CSV), of the library's forward 9 and backward 12 at 8K, one launch each, for
# planning the next kernel versions offline.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
for spec in "forward 9 relation_kl_fwd_tma_kernel fwd9" "backward 12 relation_kl_bwd_tma_dx_kernel bwd12"; do
  read -r pass ver kern name <<<"$spec"
  LINEAR_ARD_TIME_LENGTHS=8192 timeout 240 ncu --set full --import-source no -k "regex:$kern" --launch-skip 2 -c 1 \
    -o "$OUT/ncu_$name" "$rk" "$pass" "$ver" --time-only > "$OUT/ncu_${name}_run.log" 2>&1
  ncu -i "$OUT/ncu_$name.ncu-rep" --print-details all > "$OUT/ncu_$name.txt" 2>&1
  ncu -i "$OUT/ncu_$name.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_$name.csv" 2>&1
  echo "== ncu $name at $((SECONDS - t0)) s"
  grep -E "^ +(Duration|Compute \(SM\) Throughput|Issue Slots Busy|Warp Cycles Per Issued|Registers Per Thread|Achieved Occupancy|L2 Cache Throughput|L1/TEX Cache Throughput)" "$OUT/ncu_$name.txt" | head -10
done
rm -f "$OUT"/ncu_*.ncu-rep
ls -la "$OUT"
