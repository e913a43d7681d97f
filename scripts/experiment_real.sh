#!/usr/bin/env bash
# The paper's Table 1 on a real model (issue #15, docs/results.md): SmolLM2-135M-Instruct scaled
# PI x4 (8K -> 32K), every method at the paper's 4.26M-token budget, on the GPU machine.
#   search     each method at three learning rates (seed 0), chosen by perplexity at 2K on the
#              validation split (training sources' held-out documents); LinearARD = stage 1 (final
#              layer QKV relations, blocks of 4096, 2.26M tokens) + stage 2 (CPT at 32768, 2.0M);
#              CPT (full model, and Q/K/V only) at 32768; LongReD-style hidden-state distillation
#              at 4096 with position ids stretched up to x4 (max_skip 4); YaRN x4 unrestored beside
#   seeds      the chosen setting of each method with seeds 1 and 2
#   ablations  attention-map KL, w/o V/V, + logit KL, all layers, LoRA, full (stage 1 + stage 2)
#   eval       `linear-ard eval compare` on the test sources (never trained on): perplexity at 2K
#              and 8K, last-word cloze accuracy, passkey at 4K/8K (native) and 16K/32K, RULER at
#              8K/16K/32K; the native model is the ceiling
# Every run and report is skipped when its output exists, so calls on a warm machine continue.
# Needs: PREBUILT binaries (scripts/prebuilt_pack.sh), the model (scripts/device_model.sh), and the
# data of scripts/experiment_real_data.py (+ cloze) packed as $DATA (.devdata/real_data.tar.xz).
#   PREBUILT=.devpack/devbin.tar.xz scripts/experiment_real.sh search seeds eval
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
E="${EXPERIMENT_DIR:-$HOME/real_experiment}"
out="${OUT:-$E/out}"
J="${JOBS:-4}"  # runs sharing the GPU at once (a 135M model leaves most of it idle)
mkdir -p "$E/runs" "$E/logs" "$E/search" "$out"
source scripts/gpu_binaries.sh  # defines: gpu_binaries
LOG_DIR="$E/logs" gpu_binaries linear_ard_cli || exit 1
cli="$build/src/cli/linear-ard"
teacher="$(scripts/device_model.sh)" || exit 3
data="$E/data"
if [[ ! -f "$data/train.jsonl" ]]; then
  mkdir -p "$data" && tar -C "$data" -xJf "${DATA:-.devdata/real_data.tar.xz}" || exit 1
fi

# Per-method settings at the paper's budget. 4096 x 8 x 69 = 2.26M; 32768 x 1 x 61 = 2.0M;
# 32768 x 1 x 130 = 4.26M; 4096 x 8 x 130 = 4.26M.
base=(teacher="$teacher" data="[$data/train.jsonl]" student_rope.rope_type=linear student_rope.factor=4
      eval_every=0 log_every=10 warmup_steps=5 overwrite=true)
ard=(method=ard trainable=qkv ctx_len=4096 batch_size=8 steps=69
     stage2.steps=61 stage2.ctx_len=32768 stage2.batch_size=1 stage2.lr=2.0e-5 stage2.warmup_steps=3)
cpt=(method=cpt trainable=full ctx_len=32768 batch_size=1 steps=130 stage2.steps=0 stage2.warmup_steps=0)
cpt_qkv=(method=cpt trainable=qkv ctx_len=32768 batch_size=1 steps=130 stage2.steps=0 stage2.warmup_steps=0)
longred=(method=longred trainable=full ctx_len=4096 batch_size=8 steps=130 longred.max_skip=4
         stage2.steps=0 stage2.warmup_steps=0)
# Learning-rate grids; GRID_<method> replaces one (e.g. GRID_ard="3e-3 1e-2" extends a search upward),
# METHODS limits the search to some methods.
declare -A grid=([ard]="${GRID_ard:-3e-4 1e-3 3e-3}" [cpt]="${GRID_cpt:-3e-5 1e-4 3e-4}"
                 [cpt_qkv]="${GRID_cpt_qkv:-3e-4 1e-3 3e-3}" [longred]="${GRID_longred:-3e-5 1e-4 3e-4}")
methods=(${METHODS:-ard cpt cpt_qkv longred})

running=()
# run NAME KEY=VALUE...: one `linear-ard restore` in the background, at most $J at once.
run() {
  local name="$1"; shift
  [[ -f "$E/runs/$name/training_summary.json" ]] && return
  while (( $(jobs -rp | wc -l) >= J )); do wait -n; done
  "$cli" restore configs/smollm2_pi4.yaml "${base[@]}" output="$E/runs/$name" "$@" >"$E/logs/$name.log" 2>&1 &
  running+=("$name")
}
settle() {
  wait
  for n in "${running[@]}"; do
    [[ -f "$E/runs/$n/training_summary.json" ]] || { echo "experiment_real: run $n failed:"; tail -3 "$E/logs/$n.log"; }
  done
  running=()
}
m() { echo "$E/runs/$1/model"; }
scaled() {  # NAME ROPE_JSON: the teacher under another RoPE, no training (weights linked)
  [[ -f "$E/runs/$1/model/config.json" ]] && return
  mkdir -p "$E/runs/$1/model.tmp"
  for f in "$teacher"/*; do ln -sf "$f" "$E/runs/$1/model.tmp/"; done
  rm "$E/runs/$1/model.tmp/config.json"
  python3 - "$teacher/config.json" "$E/runs/$1/model.tmp/config.json" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["rope_parameters"] = {"rope_theta": c["rope_parameters"]["rope_theta"], **json.loads(sys.argv[3])}
c["max_position_embeddings"] = 4 * c["max_position_embeddings"]
json.dump(c, open(sys.argv[2], "w"), indent=2)
PY
  mv "$E/runs/$1/model.tmp" "$E/runs/$1/model"
}
best() { cat "$E/search/best_$1" 2>/dev/null; }

for phase in "$@"; do
  start=$(date +%s)
  case $phase in
  search)
    scaled pi4 '{"rope_type": "linear", "factor": 4.0}'
    scaled yarn4 '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}'
    for method in "${methods[@]}"; do
      declare -n settings="$method"
      for lr in ${grid[$method]}; do run "${method}_lr${lr}" "${settings[@]}" lr="$lr"; done
    done
    settle
    for method in "${methods[@]}"; do
      [[ -n "$(best "$method")" ]] && continue
      names=() paths=()
      for lr in ${grid[$method]}; do names+=("lr$lr"); paths+=("$(m "${method}_lr${lr}")"); done
      "$cli" eval compare "${paths[@]}" --names "${names[@]}" --text "$data/val.jsonl" --ctx 2048 --quiet \
        -o "$out/search_$method" >"$E/logs/search_$method.log" 2>&1 || { tail -3 "$E/logs/search_$method.log"; continue; }
      python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['models']; print(min(m, key=lambda x: x['ppl'][0]['ppl'])['name'][2:])" \
        "$out/search_$method.json" >"$E/search/best_$method"
      echo "experiment_real: $method: best lr $(best "$method") (validation PPL @2K)"
    done ;;
  seeds)
    for method in ard cpt cpt_qkv longred; do
      declare -n settings="$method"
      lr="$(best "$method")"; [[ -n "$lr" ]] || { echo "experiment_real: no search result for $method"; continue; }
      for seed in 1 2; do run "${method}_lr${lr}_s$seed" "${settings[@]}" lr="$lr" seed="$seed"; done
    done
    settle ;;
  ablations)
    lr="$(best ard)"
    run abl_attention "${ard[@]}" lr="$lr" objective.relations=attention
    run abl_no_vv "${ard[@]}" lr="$lr" lambda_v=0
    run abl_logit "${ard[@]}" lr="$lr" objective.logit_kl=1
    run abl_all_layers "${ard[@]}" lr="$lr" layers=all
    run abl_lora "${ard[@]}" lr="$lr" trainable=lora_qkv lora.rank=64 lora.alpha=128
    run abl_full "${ard[@]}" lr="$lr" trainable=full
    run abl_stage1_only "${ard[@]}" lr="$lr" stage2.steps=0 stage2.warmup_steps=0
    settle ;;
  eval)
    [[ -f "$data/cloze.jsonl" ]] || python3 scripts/make_cloze.py "$data/test.jsonl" -o "$data/cloze.jsonl" --count 500
    common=(--text "$data/test.jsonl" --ctx 2048 8192 --tasks "$data/cloze.jsonl" --limit 500 --quiet
            --passkey-lengths 4096 8192 16384 32768 --passkey-samples "${PASSKEY_SAMPLES:-2}")
    names=(native pi4 yarn4) paths=("$teacher" "$(m pi4)" "$(m yarn4)")
    for method in ard cpt cpt_qkv longred; do
      lr="$(best "$method")"
      for s in "" ${EVAL_SEEDS-_s1 _s2}; do
        # A run that did not finish (e.g. cut off by a call's time limit) is left out, and said so.
        [[ -f "$(m "${method}_lr${lr}$s")/config.json" ]] || { echo "experiment_real: no ${method}_lr${lr}$s; left out of main"; continue; }
        names+=("$method$s"); paths+=("$(m "${method}_lr${lr}$s")")
      done
    done
    [[ -f "$out/main.json" ]] || "$cli" eval compare "${paths[@]}" --names "${names[@]}" "${common[@]}" \
      -o "$out/main" >"$E/logs/eval_main.log" 2>&1 &
    # RULER on the seed-0 model of each row (generation at 32K is the costly part of the evaluation).
    rnames=(native pi4 yarn4) rpaths=("$teacher" "$(m pi4)" "$(m yarn4)")
    for method in ard cpt cpt_qkv longred; do rnames+=("$method"); rpaths+=("$(m "${method}_lr$(best "$method")")"); done
    [[ -f "$out/ruler.json" ]] || "$cli" eval compare "${rpaths[@]}" --names "${rnames[@]}" --quiet \
      --ruler-lengths 8192 16384 32768 --ruler-tasks ${RULER_TASKS:-niah_single_1 niah_multikey_1 vt} --ruler-samples "${RULER_SAMPLES:-5}" \
      -o "$out/ruler" >"$E/logs/eval_ruler.log" 2>&1 &
    abl=(native pi4 ard abl_attention abl_no_vv abl_logit abl_all_layers abl_lora abl_full abl_stage1_only)
    apaths=("$teacher" "$(m pi4)" "$(m "ard_lr$(best ard)")")
    for a in "${abl[@]:3}"; do apaths+=("$(m "$a")"); done
    [[ -z "${SKIP_ABLATIONS:-}" && ! -f "$out/ablations.json" ]] && "$cli" eval compare "${apaths[@]}" --names "${abl[@]}" "${common[@]}" \
      -o "$out/ablations" >"$E/logs/eval_ablations.log" 2>&1 &
    wait
    tail -n 3 "$E"/logs/eval_*.log ;;
  *) echo "experiment_real: unknown phase $phase (search, seeds, ablations, eval)"; exit 2 ;;
  esac
  echo "experiment_real: $phase took $(( $(date +%s) - start )) s"
done
# Results as files: every run's summary and metrics, the reports.
for d in "$E"/runs/*/; do
  n="$(basename "$d")"; [[ -f "$d/training_summary.json" ]] || continue
  mkdir -p "$out/runs/$n" && cp "$d"/training_summary.json "$d"/resolved_config.yaml "$d"/*.jsonl "$out/runs/$n/" 2>/dev/null
done
cp -r "$E/search" "$out/" 2>/dev/null
tar -C "$out" -cJf "${OUT_ARCHIVE:-/tmp/real_experiment.tar.xz}" . && echo "experiment_real: results in ${OUT_ARCHIVE:-/tmp/real_experiment.tar.xz}"
