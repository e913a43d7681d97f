#!/usr/bin/env bash
# Session 23, call E (run from the repository root): the backward's row statistics read raw and
# converted at the end of the iteration (and the teacher-head division only where the head moves),
# in bwd_wgmma_cta (the library's backward 12, and 6, 11): dev checks of 12 and 11, then the
# library's backward 12 of this tree against the one before the change (.devpack/old.tar.xz, the
# binaries of commit 7b8e7aa's library) at 4K/8K/16K, each in its own process, alternated twice;
# then the library's operator checks and its 4K/8K/16K benchmark beside SDPA.
set -uo pipefail
source scripts/gpu_binaries.sh >/dev/null
old=$(PREBUILT=.devpack/old.tar.xz; gpu_binaries relation_kl_dev >/dev/null && echo "$build") || exit 1
export PREBUILT=.devpack/devbin.tar.xz
gpu_binaries relation_kl_dev >/dev/null || exit 1
rk="$build/dev/cuda/relation_kl"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
t0=$SECONDS
for pv in "backward 12" "backward 11"; do
  LINEAR_ARD_TIME_LENGTHS=4096 timeout 60 "$rk" $pv > "$OUT/check_${pv// /_}.log" 2>&1
  echo "check $pv rc=$? ok=$(grep -c '^ok' "$OUT/check_${pv// /_}.log") fail=$(grep -c FAIL "$OUT/check_${pv// /_}.log") skip=$(grep -c '^skip' "$OUT/check_${pv// /_}.log")"
done
# old: the previous library's binary with its own libraries first on the path
old_env=(env "LD_LIBRARY_PATH=$old/lib:$old/src/ops:$old/src/model:$LD_LIBRARY_PATH")
for rep in 1 2; do for which in old new; do
  if [[ $which == old ]]; then cmd=("${old_env[@]}" "$old/dev/cuda/relation_kl"); else cmd=("$rk"); fi
  LINEAR_ARD_TIME_LENGTHS=4096,8192,16384 timeout 40 "${cmd[@]}" backward 12 --time-only 2>&1 |
    grep "^time" | awk -v t="run$rep backward_12_$which" '{for(i=1;i<=NF;i++){if($i ~ /^n[0-9]+$/) n=$i; if($i=="ms") ms=$(i-1)}; print t, n, ms}' | tee -a "$OUT/times.log"
done; done
echo "A/B done at $((SECONDS - t0)) s"
OUT="$OUT/operator" timeout 200 scripts/gpu_check.sh --operator > "$OUT/operator.log" 2>&1; echo "operator rc=$?"
tail -9 "$OUT/operator.log"
grep -E "^FAIL" "$OUT/operator/check_reference.log" | head -5
echo "done at $((SECONDS - t0)) s"
