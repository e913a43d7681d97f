#!/usr/bin/env bash
# Builds the CUDA relation-KL and its checks on the GPU machine and runs everything in one go:
# the operator harness's check against the fp64 reference (tests/core/relation_kl_ops --backend cuda
# --mode test: every kernel path, the non-finite rule, single-key rows, determinism),
# compute-sanitizer memcheck on small cases, the torch-op check against PyTorch autograd
# (FlashAttention's 2x rule, Appendix L table) and the benchmark. Logs and results go to $OUT (or
# ./gpu_out).
#   dev/gpu/gpu_check.sh            everything (one command: checks, operator, 7B-shape and
#                                   real-model step benchmarks; one table last: dev/gpu/perf_table.py)
#   dev/gpu/gpu_check.sh --quick    checks plus the short benchmark (n <= 16K, LLaMA-3 case)
#   SKIP_BENCH=1 dev/gpu/gpu_check.sh   checks only
#   dev/gpu/gpu_check.sh --iterate  reference checker and the benchmark at 4K/8K/16K only (tuning)
#   dev/gpu/gpu_check.sh --dev      the kernel versions of dev/cuda (checked and timed; needs
#                                   build/dev/cuda/relation_kl, from -DLINEAR_ARD_BUILD_DEV=ON)
#   dev/gpu/gpu_check.sh --bench    the benchmarks and the summary table of the full run, no checks
#                                   (to fit a call's time limit after a separate SKIP_BENCH=1 run)
#   dev/gpu/gpu_check.sh --restore-bench  only the restore-step benchmark (7B shape, docs/training.md)
#   dev/gpu/gpu_check.sh --step-bench     the real model's restore step (SmolLM2-135M from
#                                   dev/gpu/device_model.sh): stage 1, stage 2 and CPT, ours beside
#                                   plain PyTorch (benchmarks/bench_step_real.py), with our profiles,
#                                   the LM loss alone (benchmarks/bench_lm_loss) and the
#                                   teacher-overlap check (tests/gpu/check_teacher_overlap.py)
#   dev/gpu/gpu_check.sh --operator the relation-KL operator alone (builds only its two targets):
#                                   the harness's check (fp64 reference on every kernel path, the
#                                   non-finite rule, exact zero gradient of single-key rows,
#                                   determinism), memcheck, the torch checks (2x rule: bf16/fp16,
#                                   fp32 KL on peaked self-relations; NaN through the op and
#                                   relation_loss), the harness's 4K/8K speed table (default and
#                                   mma.sync kernels) and the 4K/8K/16K benchmark
#   dev/gpu/gpu_check.sh --deterministic  the deterministic backward (builds only the operator's two
#                                   targets): the harness's check with every path's default and
#                                   deterministic backward against the fp64 reference, two
#                                   deterministic backwards bitwise equal, exact zero rows; the torch
#                                   checks (2x rule on both backwards, bitwise); then its cost beside
#                                   the default backward at the 7B head's and SmolLM2's shapes
#                                   (benchmarks/bench_relation_kl_deterministic.py), a table last
#   PREBUILT=.devbin dev/gpu/gpu_check.sh ...  use binaries packed by dev/gpu/prebuilt_pack.sh on the
#                                   CI-like machine (carried) instead of building here
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out="${OUT:-$root/gpu_out}"
mkdir -p "$out"
build="${BUILD_DIR:-$root/build-gpu}"
export PYTHONUNBUFFERED=1
quick=""
[[ "${1:-}" == "--quick" ]] && quick="--quick"
[[ "${1:-}" == "--iterate" ]] && quick="--sizes 4096,8192,16384"
status=0
summary=()
# step NAME RC: remembers a step's outcome for the table printed last.
step() { summary+=("$(printf '%-34s %s' "$1" "$([[ $2 -eq 0 ]] && echo ok || echo FAILED)")"); [[ $2 -eq 0 ]] || status=1; }

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv | tee "$out/gpu.txt"
source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries (PREBUILT=DIR: carried binaries, no build)
if [[ "${1:-}" == "--operator" || "${1:-}" == "--dev" || "${1:-}" == "--deterministic" ]]; then
  LOG_DIR="$out" gpu_binaries linear_ard_ops relation_kl_ops || exit 1
else
  LOG_DIR="$out" gpu_binaries linear_ard_ops relation_kl_ops model_dump fused_kernels_check fused_adamw_check linear_ard_cli bench_restore_gpu \
    bench_lm_loss || exit 1
fi

export LINEAR_ARD_LIBRARY="$build/src/ops/liblinear_ard_ops.so"
# The restore training step (restore_step: objective, trainable set, AdamW) at the LLaMA-2-7B shape
# beside the paper's Appendix C; only where the trainer builds (yaml-cpp from .devdeps).
restore_bench() {
  local b="$build/benchmarks/bench_restore_gpu" rc=0
  if [[ -x "$b" ]]; then
    # The paper's rows (Q/K/V trainable, recompute on) with where the time goes, then the step
    # recomputing the first 8 layers (within the authors' memory with half a GiB to spare) and
    # none, and with the authors' trainable set (LoRA r 1024 on q/k/v), recomputed and not.
    ( "$b" --profile "$out/profile_7b" || rc=1
      "$b" --checkpoint-layers 8 --cases last1:4096 || rc=1
      "$b" --no-checkpoint-layers --cases last1:4096 || rc=1
      "$b" --trainable lora_qkv --lora-rank 1024 --cases last1:4096,all:4096 || rc=1
      "$b" --trainable lora_qkv --lora-rank 1024 --no-checkpoint-layers --cases last1:4096 || rc=1
      exit $rc ) 2>&1 | tee "$out/bench_restore.log"
    step "restore step benchmark (7B shape)" "${PIPESTATUS[0]}"
    summary+=("$(grep -h "^bench_restore_gpu: \|^| last 1 | 4096\|^| all" "$out/bench_restore.log" | cut -c1-160)")
  else
    echo "restore benchmark skipped: bench_restore_gpu was not built (see $out/configure.log)"
  fi
}
# The real model's step, ours beside plain PyTorch, and where our time goes (profile/summary.md).
# STEP_BENCH_WEIGHTS=random: the model's config and tokenizer only (.devmodel/config, carried; written
# by dev/gpu/device_model_pack.sh) with random weights, which time the same, with no GGUF transfer.
step_bench() {
  local model weights=()
  # The LM loss of stage 2 / CPT alone at 32K (SmolLM2's head): chunked beside unfused.
  if [[ -x "$build/benchmarks/bench_lm_loss" ]]; then
    "$build/benchmarks/bench_lm_loss" 2>&1 | tee "$out/bench_lm_loss.log" | tail -4
    step "LM loss alone (chunked vs unfused)" "${PIPESTATUS[0]}"
  fi
  if [[ "${STEP_BENCH_WEIGHTS:-}" == random ]]; then
    model="$root/.devmodel/config" weights=(--random-weights)
  else
    model="$(dev/gpu/device_model.sh | tail -1)" || { step "real-model step benchmark" 1; return; }
  fi
  python3 benchmarks/bench_step_real.py --cli "$build/src/cli/linear-ard" --model "$model" "${weights[@]}" \
    --profile-steps 2 ${STEP_BENCH_CASES:+--cases "$STEP_BENCH_CASES"} \
    --out "$out/step_bench" 2>&1 | tee "$out/step_bench.log" | tail -8
  step "real-model step benchmark" "${PIPESTATUS[0]}"
  for f in "$out"/step_bench/ours_*/profile/summary.md; do
    [[ -f "$f" ]] && cp "$f" "$out/profile_$(basename "$(dirname "$(dirname "$f")")").md"
  done
  rm -rf "$out"/step_bench/ours_*/model "$out"/step_bench/ours_*/profile/trace.json "$out"/step_bench/*.npy \
    "$out"/step_bench/random_model
}
# The trainer's teacher overlap (second host thread and CUDA stream) against the plain order, bit for bit.
teacher_overlap_check() {
  if [[ -x "$build/src/cli/linear-ard" ]]; then
    python3 tests/gpu/check_teacher_overlap.py --build "$build" >"$out/teacher_overlap.log" 2>&1
    step "teacher overlap = plain order (CUDA)" $?
    tail -4 "$out/teacher_overlap.log"
  else
    echo "teacher overlap check skipped: linear-ard was not built (see $out/configure.log)"
  fi
}
# The benchmarks of the full run, the summary under the title $1, and the performance table last
# (dev/gpu/perf_table.py), read from this call's files only (an earlier call's are removed first);
# its SmolLM2 cases add the table's 2048 x 8.
benchmarks_and_table() {
  rm -f "$out/bench_relation_kl_gpu.json" "$out/bench_restore.log" "$out/step_bench/results.json"
  STEP_BENCH_CASES="${STEP_BENCH_CASES:-ard:2048:8,ard:4096:8,stage2:32768:1,cpt:32768:1}"
  python3 benchmarks/bench_relation_kl_gpu.py --out "$out" 2>&1 | tee "$out/bench.log"
  step "benchmark" "${PIPESTATUS[0]}"
  restore_bench
  step_bench
  printf '\n%s\n' "$1 ($(head -2 "$out/gpu.txt" | tail -1 | cut -d, -f1))"
  printf '%s\n' "${summary[@]}"
  python3 dev/gpu/perf_table.py "$out" || status=1
}
if [[ "${1:-}" == "--bench" ]]; then
  benchmarks_and_table "GPU benchmarks"
  exit $status
fi
if [[ "${1:-}" == "--restore-bench" || "${1:-}" == "--step-bench" ]]; then
  [[ "${1:-}" == "--restore-bench" ]] && restore_bench
  [[ "${1:-}" == "--step-bench" ]] && { teacher_overlap_check; step_bench; }
  printf '%s\n' "${summary[@]}"
  exit $status
fi
if [[ "${1:-}" == "--dev" ]]; then
  if [[ ! -x "$build/dev/cuda/relation_kl" ]]; then
    echo "gpu_check --dev: no $build/dev/cuda/relation_kl (configure with -DLINEAR_ARD_BUILD_DEV=ON, build" \
      "relation_kl_dev and pack it with dev/gpu/prebuilt_pack.sh)"
    exit 1
  fi
  for pass in forward backward; do
    "$build/dev/cuda/relation_kl" "$pass" 2>&1 | tee "$out/dev_$pass.log" | grep -v "^ok"
    step "dev/cuda $pass versions" "${PIPESTATUS[0]}"
  done
  printf '%s\n' "${summary[@]}"
  exit $status
fi
ops=("$build/tests/core/relation_kl_ops" --backend cuda)
if [[ "${1:-}" == "--operator" ]]; then
  "${ops[@]}" --mode test >"$out/check_reference.log" 2>&1
  step "CUDA vs fp64 reference" $?
  grep "^FAIL" "$out/check_reference.log" | head -20
  tail -6 "$out/check_reference.log"
  if command -v compute-sanitizer >/dev/null; then
    compute-sanitizer --tool memcheck --error-exitcode 9 "${ops[@]}" --mode test --quick \
      >"$out/memcheck.log" 2>&1
    step "compute-sanitizer memcheck" $?
  fi
  python3 tests/gpu/check_relation_kl_torch.py >"$out/check_torch.log" 2>&1
  step "torch op: 2x rules, non-finite rule" $?
  grep "^FAIL" "$out/check_torch.log" | head -20
  sed -n "/^fp32 relation KL on peaked/,/^\$/p" "$out/check_torch.log"
  tail -5 "$out/check_torch.log"
  "${ops[@]}" --mode perf --kernels default,mma --sizes 4096,8192 2>&1 | tee "$out/perf.log"
  step "harness speed table 4K/8K" "${PIPESTATUS[0]}"
  python3 benchmarks/bench_relation_kl_gpu.py --out "$out" --sizes 4096,8192,16384 2>&1 | tee "$out/bench.log" | tail -8
  step "benchmark 4K/8K/16K" "${PIPESTATUS[0]}"
  printf '\n%s\n' "GPU checks of the operator ($(head -2 "$out/gpu.txt" | tail -1 | cut -d, -f1))"
  printf '%s\n' "${summary[@]}"
  exit $status
fi
if [[ "${1:-}" == "--deterministic" ]]; then
  "${ops[@]}" --mode test --kernels default,mma,simt,default-det,mma-det,simt-det >"$out/check_reference.log" 2>&1
  step "CUDA vs fp64, default + deterministic" $?
  grep "^FAIL" "$out/check_reference.log" | head -20
  grep "^determinism" "$out/check_reference.log"
  tail -7 "$out/check_reference.log"
  python3 tests/gpu/check_relation_kl_torch.py >"$out/check_torch.log" 2>&1
  step "torch op: 2x rule both, bitwise, zeros" $?
  grep "^FAIL" "$out/check_torch.log" | head -20
  tail -7 "$out/check_torch.log"
  "${ops[@]}" --mode perf --kernels default,default-det --sizes 4096,8192 >"$out/perf.log" 2>&1
  step "harness speed 4K/8K, default + det" $?
  tail -5 "$out/perf.log"
  python3 benchmarks/bench_relation_kl_deterministic.py --json "$out/bench_deterministic.json" \
    >"$out/bench_deterministic.log" 2>&1
  step "deterministic bwd: cost, bitwise" $?
  printf '\n%s\n' "GPU checks of the deterministic backward ($(head -2 "$out/gpu.txt" | tail -1 | cut -d, -f1), $(date -u +%F))"
  printf '%s\n' "${summary[@]}"
  echo
  sed -n '/^| shape /,$p' "$out/bench_deterministic.log"
  grep -v "^|" "$out/bench_deterministic.log" | tail -3
  exit $status
fi
"${ops[@]}" --mode test 2>&1 | tee "$out/check_reference.log" | grep -v "^ok"
step "CUDA vs fp64 reference" "${PIPESTATUS[0]}"
if [[ "${1:-}" == "--iterate" ]]; then
  python3 benchmarks/bench_relation_kl_gpu.py --out "$out" $quick 2>&1 | tee "$out/bench.log" || status=1
  exit $status
fi
if command -v compute-sanitizer >/dev/null; then
  compute-sanitizer --tool memcheck --error-exitcode 9 "${ops[@]}" --mode test --quick \
    >"$out/memcheck.log" 2>&1
  step "compute-sanitizer memcheck" $?
  tail -3 "$out/memcheck.log"
fi
python3 tests/gpu/check_relation_kl_torch.py 2>&1 | tee "$out/check_torch.log" | grep -v "^ok"
step "torch op vs autograd (2x rule)" "${PIPESTATUS[0]}"
# The model's fused CUDA kernels (q/k/v split + RoPE, SwiGLU) against the composite ops.
if [[ -x "$build/tests/model/fused_kernels_check" ]]; then
  "$build/tests/model/fused_kernels_check" >"$out/fused_kernels.log" 2>&1
  step "fused model kernels vs composite" $?
  grep -v "^ok" "$out/fused_kernels.log"
fi
# The held-gradient AdamW kernel against the cast-up update (torch's _fused_adamw_), bit for bit.
if [[ -x "$build/tests/train/fused_adamw_check" ]]; then
  "$build/tests/train/fused_adamw_check" >"$out/fused_adamw.log" 2>&1
  step "held-gradient AdamW vs cast-up" $?
  grep -v "^ok" "$out/fused_adamw.log"
fi
# The model against transformers in bf16 on CUDA (FlashAttention's rule; docs/parity.md).
if [[ -x "$build/tests/model/model_dump" ]]; then
  LINEAR_ARD_BUILD_DIR="$build" python3 tests/python/test_model_parity.py --device cuda --dtype bfloat16 \
    --table "$out/parity_cuda_bf16.md" >"$out/parity.log" 2>&1
  step "model vs transformers (bf16, CUDA)" $?
  tail -6 "$out/parity.log"
else
  echo "model parity skipped: model_dump not built (run dev/gpu/device_deps.sh and carry .devdeps)"
  step "model vs transformers (bf16, CUDA)" 1
fi
# Evaluation (tasks loglikelihoods, passkey/RULER greedy tokens) against transformers in bf16, and
# RULER tokens/s; only where the linear-ard binary builds (it needs CLI11 and yaml-cpp).
if [[ -x "$build/src/cli/linear-ard" ]]; then
  python3 tests/gpu/check_eval_transformers.py --build "$build" --device cuda >"$out/eval.log" 2>&1
  step "eval vs transformers (bf16, CUDA)" $?
  tail -8 "$out/eval.log"
else
  echo "eval check skipped: linear-ard was not built (see $out/configure.log)"
fi
teacher_overlap_check
# The full run ends with the performance figures in one table (dev/gpu/perf_table.py).
if [[ -z "${1:-}" && -z "${SKIP_BENCH:-}" ]]; then
  benchmarks_and_table "GPU checks and benchmarks"
  exit $status
fi
if [[ -z "${SKIP_BENCH:-}" ]]; then
  python3 benchmarks/bench_relation_kl_gpu.py --out "$out" $quick 2>&1 | tee "$out/bench.log"
  step "benchmark" "${PIPESTATUS[0]}"
  restore_bench
  step_bench
fi
printf '\n%s\n' "GPU checks ($(head -2 "$out/gpu.txt" | tail -1 | cut -d, -f1))"
printf '%s\n' "${summary[@]}"
exit $status
