#!/usr/bin/env bash
# The search behind configs/smollm2_pi4.yaml's default recipe (docs/recipes.md): SmolLM2-135M-Instruct
# scaled x4 (8K -> 32K) at the main job's budget (4.26M tokens: stage 1 relation KL at 4K, stage 2
# CPT at 32K), one restore a setting, every setting on the same training sources with shuffled data
# (seed 0), each scored by the run's own validation on the held-out documents of those sources (KL to
# native, perplexity, passkey at the stage's target length): no test text is read. Settings: the
# trainable set (Q/K/V matrices, LoRA r 64 on q/k/v), the learning rate of both stages over a grid
# wide enough to show where training stops being stable, and YaRN x4 beside PI x4; one arm validates
# every 20 steps (its memory_bytes records show whether the validation's memory is given back). The
# qkv_1e-2 and lora_3e-2 arms (not run unless named) are the edges earlier searches found. The cpu_* arms
# (not run unless named) are the candidates for scripts/demo.sh's CPU setting.
#   PREBUILT=.devpack/devbin.tar.xz experiments/default_sweep.sh [ARM...]
# On the GPU machine (needs the model of dev/gpu/device_model.sh and the split of
# scripts/corpus_split.py packed as .devdata/real_data.tar.xz). JOBS restores share the card at once
# (default 3: a 32K stage peaks at ~37 GiB). Prints one table last (experiments/sweep_table.py).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
E="${EXPERIMENT_DIR:-$HOME/default_sweep}"
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
mkdir -p "$E/runs" "$E/logs"
source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries
LOG_DIR="$E/logs" gpu_binaries linear_ard_cli || exit 1
cli="$build/src/cli/linear-ard"
teacher="$(dev/gpu/device_model.sh)" || exit 3
data="$(dev/gpu/device_data.sh "$E/data")" || exit 1

lora=(trainable=lora_qkv lora.rank=64 lora.alpha=128)
yarn=(student_rope.rope_type=yarn student_rope.factor=4)
gpu=(data="[$data/train.jsonl]" val_data="[$data/val.jsonl]")  # every arm but the cpu_* ones
# The CPU setting of scripts/demo.sh (stage 1 only, 60 steps of 256 tokens of the bundled KJV sample,
# fp32), its quality measured here on the GPU (the arithmetic is the CPU's: fp32, the same blocks);
# validation on 16 held-out blocks and passkey at 2K, as far as a 256-token training can reach.
cpu=(data="[data/demo/restore.jsonl]" ctx_len=256 batch_size=1 steps=60 warmup_steps=3 stage2.steps=0
     stage2.warmup_steps=0 dtype=fp32 val_blocks=16 eval_every=20 "val_passkey.lengths=[2048]" val_passkey.samples=4)
declare -A arm=(
  [qkv_1e-3]="trainable=qkv lr=1.0e-3 stage2.lr=1.0e-3"
  [qkv_3e-3]="trainable=qkv lr=3.0e-3 stage2.lr=3.0e-3"
  [qkv_1e-2]="trainable=qkv lr=1.0e-2 stage2.lr=1.0e-2"
  [lora_1e-3]="${lora[*]} lr=1.0e-3 stage2.lr=1.0e-3"
  [lora_2e-3]="${lora[*]} lr=2.0e-3 stage2.lr=2.0e-3"
  [lora_3e-3]="${lora[*]} lr=3.0e-3 stage2.lr=3.0e-3"
  [lora_3e-3_e20]="${lora[*]} lr=3.0e-3 stage2.lr=3.0e-3 eval_every=20"
  [lora_1e-2]="${lora[*]} lr=1.0e-2 stage2.lr=1.0e-2"
  [lora_3e-2]="${lora[*]} lr=3.0e-2 stage2.lr=3.0e-2"
  [yarn_lora_3e-3]="${lora[*]} ${yarn[*]} lr=3.0e-3 stage2.lr=3.0e-3"
  [yarn_qkv_3e-3]="trainable=qkv ${yarn[*]} lr=3.0e-3 stage2.lr=3.0e-3"
  [cpu_qkv_1e-3]="${cpu[*]} trainable=qkv lr=1.0e-3"
  [cpu_qkv_3e-3]="${cpu[*]} trainable=qkv lr=3.0e-3"
  [cpu_lora_3e-3]="${cpu[*]} ${lora[*]} lr=3.0e-3"
  [cpu_lora_1e-2]="${cpu[*]} ${lora[*]} lr=1.0e-2"
  [cpu_pi2_qkv_1e-3]="${cpu[*]} trainable=qkv lr=1.0e-3 student_rope.factor=2"
  [cpu_pi2_lora_3e-3]="${cpu[*]} ${lora[*]} lr=3.0e-3 student_rope.factor=2")
arms=("$@")
(( ${#arms[@]} )) || arms=(qkv_1e-3 qkv_3e-3 lora_1e-3 lora_2e-3 lora_3e-3 lora_1e-2 yarn_lora_3e-3 yarn_qkv_3e-3
                            lora_3e-3_e20)
J="${JOBS:-3}"
for a in "${arms[@]}"; do
  [[ -n "${arm[$a]:-}" ]] || { echo "default_sweep: unknown arm '$a' (known: ${!arm[*]})" >&2; exit 2; }
  [[ -f "$E/runs/$a/training_summary.json" ]] && continue
  while (( $(jobs -rp | wc -l) >= J )); do wait -n; done
  # shellcheck disable=SC2086
  ( start=$SECONDS
    data_settings=("${gpu[@]}")
    [[ "$a" == cpu_* ]] && data_settings=()
    "$cli" restore configs/smollm2_pi4.yaml teacher="$teacher" seed="${SEED:-0}" output="$E/runs/$a" \
      overwrite=true "${data_settings[@]}" ${arm[$a]} >"$E/logs/$a.log" 2>&1
    echo "default_sweep: $a exit $? after $((SECONDS - start)) s" ) &
done
wait
python3 experiments/sweep_table.py "$E/runs" "${arms[@]}" --plot "$E/sweep.png" | tee "$E/sweep.md"
# The main job's default: the arm the kl_passkey rule keeps among the PI x4 GPU arms (YaRN changes the
# scaling the main job restores, a choice for `diagnose`), its settings in $E/kept_settings.txt
# (DEMO_SET of experiments/demo_gpu_seeds.sh).
pi=()
for a in "${arms[@]}"; do [[ "$a" == cpu_* || "$a" == yarn_* ]] || pi+=("$a"); done
kept="$(python3 experiments/sweep_table.py "$E/runs" "${pi[@]}" | sed -n 's/^kept by .*: //p')"
if [[ -n "$kept" ]]; then
  echo "${arm[$kept]}" >"$E/kept_settings.txt"
  echo "default_sweep: the main job's default among the PI x4 arms: $kept (${arm[$kept]})"
fi
