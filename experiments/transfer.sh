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
# divisors of the full budget) and SEEDS narrow it; CELLS ("scaling:divisor ...", default every
# scaling at every budget) orders the runs phase, a cell's seeds and arms together, so the cells that
# matter most finish first. The lr phase tunes GRID (default 1e-3,2e-3,3e-3) into tune/<scaling>_<arm>,
# or into tune/<scaling>_<arm>_<TUNE_TAG> when TUNE_TAG is set: a second grid for a pair whose winner
# sat at the first grid's edge. A run takes the learning rate of the lowest validation KL over every
# tune of its pair, waiting for tunes still running in the same call (the lr phase does not wait, so
# the runs that need no new tune share the card with it). EXTRA (key=value settings, after every
# other one) changes it, e.g. a CPU smoke run of the driver on the bundled demo model. Prints
# experiments/transfer_table.py's table last. To go on from the recorded runs, copy the tunes and
# runs of experiments/gpu_logs/*/transfer/ into $EXPERIMENT_DIR first; to outlive a device call, start
# it with `DRIVER=experiments/transfer.sh experiments/experiment_real_bg.sh start transfer VAR=VALUE...
# -- lr runs table` and collect with `experiments/experiment_real_bg.sh wait SECONDS`.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root" || exit 1
E="${EXPERIMENT_DIR:-$HOME/transfer}"
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
mkdir -p "$E/tune" "$E/runs" "$E/logs"
rm -f "$E"/logs/*.running  # one driver at a time: what an interrupted call left is not running
# shellcheck source=dev/gpu/gpu_binaries.sh
source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries (sets build)
LOG_DIR="$E/logs" gpu_binaries linear_ard_cli || exit 1
cli="$build/src/cli/linear-ard"
teacher="$(dev/gpu/device_model.sh)" || exit 3
data="$(dev/gpu/device_data.sh "$E/data")" || exit 1
phases=("$@")
(( ${#phases[@]} )) || phases=(lr runs table)
read -r -a scalings <<<"${SCALINGS:-pi4 pi16 yarn4}"
read -r -a budgets <<<"${BUDGETS:-16 8 4 2 1}"
read -r -a seeds <<<"${SEEDS:-0 1 2}"
J="${JOBS:-3}"
if [[ -n "${CELLS:-}" ]]; then
  read -r -a cells <<<"$CELLS"
else
  cells=(); for d in "${budgets[@]}"; do for s in "${scalings[@]}"; do cells+=("$s:$d"); done; done
fi
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

run_bg() {  # NAME COMMAND...: in the background, at most J at once, its log in $E/logs/NAME.log;
  # $E/logs/NAME.running exists while it runs
  local name=$1; shift
  while (( $(jobs -rp | wc -l) >= J )); do wait -n; done
  touch "$E/logs/$name.running"
  ( start=$SECONDS; "$@" >"$E/logs/$name.log" 2>&1; rc=$?; rm -f "$E/logs/$name.running"
    echo "transfer: $name exit $rc after $((SECONDS - start)) s" ) &
}

lr_of() {  # the learning rate of the lowest validation KL over every tune of arm $1 under scaling $2,
  # once no tune of the pair runs
  while compgen -G "$E/logs/tune_$2_$1*.running" >/dev/null; do sleep 5; done
  python3 - "$E/tune/$2_$1"{,_*}/tune.json <<'PY'
import json, os, sys
tunes = [json.load(open(p)) for p in sys.argv[1:] if os.path.exists(p)]
winners = [t["trials"][t["winner"]] for t in tunes if "winner" in t]
if not winners:
    sys.exit(f"transfer: no finished tune (a tune.json with a winner) among {' '.join(sys.argv[1:])}")
best = min(winners, key=lambda trial: trial["chosen"]["val_kl"])
print(next(o.split("=", 1)[1] for o in best["settings"] if o.startswith("lr=")))
PY
}

restore_run() {  # NAME SCALING ARM DIVISOR SEED: one run of the grid, at its pair's tuned learning rate
  local name=$1 s=$2 a=$3 d=$4 seed=$5 lr steps
  lr="$(lr_of "$a" "$s")" || { echo "transfer: no tuned learning rate for $a under $s (run the lr phase)"; return 1; }
  read -r -a steps <<<"$(budget "$a" "$d")"
  # shellcheck disable=SC2086
  "$cli" restore configs/smollm2_pi4.yaml "${common[@]}" ${rope[$s]} ${method[$a]} \
    "${steps[@]}" lr="$lr" stage2.lr="$lr" seed="$seed" "${extra[@]}" output="$E/runs/$name"
}

for phase in "${phases[@]}"; do
  case "$phase" in
    lr)
      for s in "${scalings[@]}"; do for a in ard cpt_qkv; do
        pair="${s}_$a${TUNE_TAG:+_$TUNE_TAG}"
        [[ -f "$E/tune/$pair/tune.json" ]] && continue
        # shellcheck disable=SC2086
        run_bg "tune_$pair" "$cli" tune configs/smollm2_pi4.yaml "${common[@]}" ${rope[$s]} ${method[$a]} \
          select.criterion=kl "${extra[@]}" output="$E/tune/$pair" --grid lr,stage2.lr="${GRID:-1e-3,2e-3,3e-3}" \
          --trial-fraction 0.25 --no-final
      done; done ;;
    runs)
      for c in "${cells[@]}"; do for seed in "${seeds[@]}"; do for a in ard cpt_qkv; do
        s="${c%%:*}" d="${c##*:}"
        name="${s}_${a}_b${d}_s$seed"
        [[ -f "$E/runs/$name/training_summary.json" ]] && continue
        run_bg "$name" restore_run "$name" "$s" "$a" "$d" "$seed"
      done; done; done
      wait ;;
    table)
      wait
      python3 experiments/transfer_table.py "$E/runs" --plot "$E/transfer.png" | tee "$E/transfer.md" ;;
    *) echo "transfer: unknown phase '$phase' (lr, runs, table)" >&2; exit 2 ;;
  esac
done
