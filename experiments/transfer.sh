#!/usr/bin/env bash
# Which choices transfer (docs/recipes.md): is the relation objective worth it, and where? SmolLM2-135M
# with the main job's trainable set (a LoRA r 64 on q/k/v), two arms on the same shuffled data:
#   ard:     LinearARD, stage 1 relation KL at 4K then stage 2 next-token loss at 32K (the main job);
#   cpt_qkv: the next-token loss at 32K for the whole budget (CPT of the same LoRA);
# at budgets of 1/16, 1/8, 1/4, 1/2 and 1 times the paper's 4.26M tokens (each stage's steps scaled
# alike), under PI x4, PI x16 (the paper's Appendix F stress test) and YaRN x4, seeds 0-2 (a seed is
# one data order, the same for both arms: the pairs are analysed). Each arm's learning rate (both
# stages together) is chosen per scaling by `linear-ard tune` on a quarter of the full budget, by the
# validation KL alone (select.criterion kl). Every run validates about five times, so the relation
# loss can be read against the KL to native during training (the paper's Appendix L); passkey at 32K.
#   PREBUILT=.devpack/devbin.tar.xz experiments/transfer.sh [lr] [runs] [table]
# On the GPU machine (the model of dev/gpu/device_model.sh, the split of scripts/corpus_split.py as
# .devdata/real_data.tar.xz). JOBS runs share the card (default 3). Every tune and run is skipped when
# its output exists, so calls that end early continue where they stopped. SCALINGS, BUDGETS (the
# divisors of the full budget) and SEEDS narrow it; EXTRA (key=value settings, after every other one)
# changes it, e.g. a CPU smoke run of the driver on the bundled demo model. Prints
# experiments/transfer_table.py's table last.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
E="${EXPERIMENT_DIR:-$HOME/transfer}"
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
mkdir -p "$E/tune" "$E/runs" "$E/logs"
source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries
LOG_DIR="$E/logs" gpu_binaries linear_ard_cli || exit 1
cli="$build/src/cli/linear-ard"
teacher="$(dev/gpu/device_model.sh)" || exit 3
data="$(dev/gpu/device_data.sh "$E/data")" || exit 1
phases=("$@")
(( ${#phases[@]} )) || phases=(lr runs table)
scalings=(${SCALINGS:-pi4 pi16 yarn4})
budgets=(${BUDGETS:-16 8 4 2 1})
seeds=(${SEEDS:-0 1 2})
J="${JOBS:-3}"
read -r -a extra <<<"${EXTRA:-}"
common=(teacher="$teacher" data="[$data/train.jsonl]" val_data="[$data/val.jsonl]" val_ctx_len=4096 "val_passkey.lengths=[32768]"
        val_passkey.samples=20 overwrite=true)
declare -A rope=([pi4]="student_rope.rope_type=linear student_rope.factor=4"
                 [pi16]="student_rope.rope_type=linear student_rope.factor=16"
                 [yarn4]="student_rope.rope_type=yarn student_rope.factor=4")
declare -A method=([ard]="method=ard"
                   [cpt_qkv]="method=cpt ctx_len=32768 batch_size=1 steps=130 warmup_steps=5 stage2.steps=0 stage2.warmup_steps=0")

# `divisor` of the full budget: each stage's steps and warm-up divided alike; a validation every quarter of the run.
budget() {
  local a=$1 d=$2
  if [[ $a == ard ]]; then
    local s1=$(( (69 + d / 2) / d )) s2=$(( (61 + d / 2) / d ))
    echo "steps=$s1 warmup_steps=$(( s1 > 5 ? 5 : 1 )) stage2.steps=$s2 stage2.warmup_steps=$(( s2 > 3 ? 3 : 1 ))" \
         "eval_every=$(( (s1 + s2 + 3) / 4 ))"
  else
    local s=$(( (130 + d / 2) / d ))
    echo "steps=$s warmup_steps=$(( s > 5 ? 5 : 1 )) eval_every=$(( (s + 3) / 4 ))"
  fi
}

run_bg() {  # NAME COMMAND...: in the background, at most J at once, its log in $E/logs/NAME.log
  local name=$1; shift
  while (( $(jobs -rp | wc -l) >= J )); do wait -n; done
  ( start=$SECONDS; "$@" >"$E/logs/$name.log" 2>&1; echo "transfer: $name exit $? after $((SECONDS - start)) s" ) &
}

lr_of() {  # the tuned learning rate of arm $1 under scaling $2
  python3 -c "import json, sys; t = json.load(open(sys.argv[1]))
print(next(o.split('=', 1)[1] for o in t['trials'][t['winner']]['settings'] if o.startswith('lr=')))" "$E/tune/$2_$1/tune.json"
}

for phase in "${phases[@]}"; do
  case "$phase" in
    lr)
      for s in "${scalings[@]}"; do for a in ard cpt_qkv; do
        [[ -f "$E/tune/${s}_$a/tune.json" ]] && continue
        # shellcheck disable=SC2086
        run_bg "tune_${s}_$a" "$cli" tune configs/smollm2_pi4.yaml "${common[@]}" ${rope[$s]} ${method[$a]} \
          select.criterion=kl "${extra[@]}" output="$E/tune/${s}_$a" --grid lr,stage2.lr=1e-3,2e-3,3e-3 --trial-fraction 0.25 --no-final
      done; done
      wait ;;
    runs)
      for seed in "${seeds[@]}"; do for d in "${budgets[@]}"; do for s in "${scalings[@]}"; do for a in ard cpt_qkv; do
        name="${s}_${a}_b${d}_s$seed"
        [[ -f "$E/runs/$name/training_summary.json" ]] && continue
        lr="$(lr_of "$a" "$s")" || { echo "transfer: no tuned learning rate for $a under $s (run the lr phase)" >&2; exit 1; }
        # shellcheck disable=SC2086
        run_bg "$name" "$cli" restore configs/smollm2_pi4.yaml "${common[@]}" ${rope[$s]} ${method[$a]} \
          $(budget "$a" "$d") lr="$lr" stage2.lr="$lr" seed="$seed" "${extra[@]}" output="$E/runs/$name"
      done; done; done; done
      wait ;;
    table)
      python3 experiments/transfer_table.py "$E/runs" --plot "$E/transfer.png" | tee "$E/transfer.md" ;;
    *) echo "transfer: unknown phase '$phase' (lr, runs, table)" >&2; exit 2 ;;
  esac
done
