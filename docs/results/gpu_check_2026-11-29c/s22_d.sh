#!/usr/bin/env bash
# Session 22, call D (run from the repository root, right after call C on the same machine): a
# second sample of the operator benchmark beside SDPA and of the 7B-shape steps, same binaries.
set -uo pipefail
export PREBUILT=.devpack/devbin.tar.xz
source scripts/gpu_binaries.sh >/dev/null; gpu_binaries linear_ard_ops bench_restore_gpu >/dev/null || exit 1
export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
t0=$SECONDS
timeout 150 python3 benchmarks/bench_relation_kl_gpu.py --out "$OUT" > "$OUT/bench.log" 2>&1; echo "bench rc=$? at $((SECONDS - t0)) s"
grep -E "^\| (1K|2K|4K|8K|16K|32K) " "$OUT/bench.log" | head -6
OUT="$OUT" timeout 200 scripts/gpu_check.sh --restore-bench > "$OUT/restore.log" 2>&1; echo "restore rc=$? at $((SECONDS - t0)) s"
python3 scripts/perf_table.py "$OUT" 2>&1 | grep -E "relation KL|7B"
rm -rf "$OUT"/profile_7b
