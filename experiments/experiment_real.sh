#!/usr/bin/env bash
# The paper's Table 1 on a real model (docs/results.md): SmolLM2-135M-Instruct scaled
# PI x4 (8K -> 32K), every method at the paper's 4.26M-token budget, on the GPU machine.
#   search     each method at three learning rates (seed 0), chosen by perplexity at 2K on the
#              validation split (training sources' held-out documents); LinearARD = stage 1 (final
#              layer QKV relations, blocks of 4096, 2.26M tokens) + stage 2 (CPT at 32768, 2.0M);
#              CPT (full model, and Q/K/V only) at 32768; LongReD-style hidden-state distillation
#              at 4096 with position ids stretched up to x4 (max_skip 4); YaRN x4 unrestored beside;
#              METHODS="ard_lora cpt_qkv_lora": both with a LoRA (r 64) on q/k/v instead of the matrices
#   seeds      the chosen setting of each method with seeds 1 and 2
#   ablations  attention-map KL, w/o V/V, + logit KL, all layers, LoRA, full, stage 1 only: LinearARD's
#              chosen setting with one change each (SEEDS: their seeds, default 0)
#   stage2     why LinearARD retrieves so little: stage 2's learning rate (the recipe's 2e-5 beside a
#              grid, chosen like the others on the validation split), then seeds 1-2 of the chosen rate
#   yarn       every method's chosen setting with the student scaled YaRN x4 instead of PI x4 (SEEDS)
#   budget     the token-efficiency curve: each method at BUDGETS x the paper's budget (default 4;
#              LinearARD's extra tokens go to stage 2, stage 1 stays 2.26M)
#   reports    the test-source reports (RULER too) of stage2, stage2_seeds, yarn (one a method),
#              budget_x<K> (or budget_split: one a method and K), the late ablations and the seeded
#              ablations (one an ablation) (models that exist only; the others left out and named)
#   settings   the rest of the search, on the validation split beside each method's chosen run (seed 0):
#              context at the same tokens (batch x ctx fixed), and for LinearARD the relation weights
#              and the layer scope (last 2); SETTINGS names the variants (default all)
#   final      the main rows at their chosen settings (LinearARD with its chosen stage-2 rate), seeds
#              0, 1 and 2 (FINAL_METHODS: which methods to train, default all four)
#   final_reports  their reports (FINAL_METHODS, and `ref`): per method its seeds' short-text report
#              beside native (final_<method>), and per model RULER's full task set (ruler_<model>;
#              RULER_FINAL_TASKS, RULER_FINAL_SAMPLES a cell), native and YaRN x4 unrestored included
#   eval       `linear-ard eval compare` on the test sources (never trained on): perplexity at 2K
#              and 8K, last-word cloze and next-sentence choice accuracy, passkey at 4K/8K (native) and 16K/32K, RULER at
#              8K/16K/32K; the native model is the ceiling
# Every run and report is skipped when its output exists, so calls on a warm machine continue.
# Needs: PREBUILT binaries (dev/gpu/prebuilt_pack.sh), the model (dev/gpu/device_model.sh), and the
# data of experiments/experiment_real_data.py (+ cloze) packed as $DATA (.devdata/real_data.tar.xz).
#   PREBUILT=.devpack/devbin.tar.xz experiments/experiment_real.sh search seeds eval
# Runs longer than one device call: experiments/experiment_real_bg.sh starts drivers that outlive the call.
# The large corpus (experiments/make_corpus_large.sh; 92.7M training tokens, ~68 MiB as .tar.xz) goes in
# parts: here `experiment_real_data.py build/corpus_large D`, tar D as above, `dev/gpu/device_parts.sh
# split real_data_large.tar.xz .devdata/large`; there, one part a call, then
#   DATA="$(dev/gpu/device_parts.sh join .devdata/large ~/linear-ard-parts | tail -1)" EXPERIMENT_DIR=~/real_large ...
# (experiments/experiment_real_large.sh does that for the large budget's 1x and 16x runs.)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
E="${EXPERIMENT_DIR:-$HOME/real_experiment}"
# Fewer out-of-memory failures when two 32K runs share the card (libtorch reads it as torch does).
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
out="${OUT:-$E/out}"
# GPUS: the cards this driver uses (default all); each run or report goes to the one running the
# fewest of this driver's jobs. JOBS: jobs at once (default one a card: a 32K run peaks at ~37 GiB,
# so two share an 80 GB card only when one of them is short-context; three out-of-memory). Two
# drivers may share a machine when their GPUS do not overlap (e.g. the long budget runs beside the rest).
gpus=(${GPUS:-$(seq 0 $(( $(nvidia-smi -L 2>/dev/null | wc -l) - 1 )) 2>/dev/null)})
(( ${#gpus[@]} )) || gpus=(0)
J="${JOBS:-${#gpus[@]}}"
mkdir -p "$E/runs" "$E/logs" "$E/search" "$out"
source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries
LOG_DIR="$E/logs" gpu_binaries linear_ard_cli || exit 1
cli="$build/src/cli/linear-ard"
teacher="$(dev/gpu/device_model.sh)" || exit 3
data="$E/data"
# The data folder is shared by every driver of $E: the first to come unpacks it into a temporary
# folder and renames it, under a lock (two drivers started together once raced: one read test.jsonl
# before the other's tar had written it).
prepare_data() {
  [[ -f "$data/choice.jsonl" ]] && return
  rm -rf "$data.tmp" && mkdir -p "$data.tmp" && tar -C "$data.tmp" -xJf "${DATA:-.devdata/real_data.tar.xz}" || return 1
  python3 experiments/make_cloze.py "$data.tmp/test.jsonl" -o "$data.tmp/cloze.jsonl" --count 500 || return 1
  python3 experiments/make_choice.py "$data.tmp/test.jsonl" -o "$data.tmp/choice.jsonl" --count 500 || return 1
  rm -rf "$data" && mv "$data.tmp" "$data"
}
exec {data_lock}>"$E/data.lock"
flock "$data_lock" || exit 1
prepare_data || { echo "experiment_real: cannot prepare $data"; exit 1; }
flock -u "$data_lock"

# Per-method settings at the paper's budget. 4096 x 8 x 69 = 2.26M; 32768 x 1 x 61 = 2.0M;
# 32768 x 1 x 130 = 4.26M; 4096 x 8 x 130 = 4.26M.
# DATA_SHUFFLE=K: every run draws its blocks from a shuffle buffer of K blocks seeded by its seed
# (`data_shuffle`, docs/restore.md), so that seeds vary the data order; 0 (the default, and every
# pass so far) trains the blocks in the files' order, where seeds of full-matrix runs differ only by
# the GPU's floating-point nondeterminism.
base=(teacher="$teacher" data="[$data/train.jsonl]" student_rope.rope_type=linear student_rope.factor=4
      eval_every=0 log_every=10 warmup_steps=5 overwrite=true data_shuffle="${DATA_SHUFFLE:-0}")
ard=(method=ard trainable=qkv ctx_len=4096 batch_size=8 steps=69
     stage2.steps=61 stage2.ctx_len=32768 stage2.batch_size=1 stage2.lr=2.0e-5 stage2.warmup_steps=3)
cpt=(method=cpt trainable=full ctx_len=32768 batch_size=1 steps=130 stage2.steps=0 stage2.warmup_steps=0)
cpt_qkv=(method=cpt trainable=qkv ctx_len=32768 batch_size=1 steps=130 stage2.steps=0 stage2.warmup_steps=0)
longred=(method=longred trainable=full ctx_len=4096 batch_size=8 steps=130 longred.max_skip=4
         stage2.steps=0 stage2.warmup_steps=0)
# LinearARD and CPT of Q/K/V with a LoRA (r 64) on q/k/v instead of the full matrices (the best ablation
# at the chosen setting, and the same change for its strongest baseline); LinearARD's stage 2 at its own rate.
lora=(trainable=lora_qkv lora.rank=64 lora.alpha=128)
ard_lora=("${ard[@]}" "${lora[@]}")
cpt_qkv_lora=("${cpt_qkv[@]}" "${lora[@]}")
# The ablations (Appendix A/E): LinearARD's setting with one change each.
declare -A ablation=([abl_attention]="objective.relations=attention" [abl_no_vv]="lambda_v=0"
  [abl_logit]="objective.logit_kl=1" [abl_all_layers]="layers=all"
  [abl_lora]="trainable=lora_qkv lora.rank=64 lora.alpha=128" [abl_full]="trainable=full"
  [abl_stage1_only]="stage2.steps=0 stage2.warmup_steps=0")
# The settings search: variant -> its method and overrides (each at the method's chosen rates).
declare -A variant=([ard_ctx2048]="ard ctx_len=2048 batch_size=16" [ard_lv2]="ard lambda_v=2"
  [ard_lqk2]="ard lambda_q=2 lambda_k=2" [ard_last2]="ard layers=last:2"
  [cpt_qkv_ctx8192]="cpt_qkv ctx_len=8192 batch_size=4" [cpt_qkv_ctx16384]="cpt_qkv ctx_len=16384 batch_size=2"
  [cpt_ctx8192]="cpt ctx_len=8192 batch_size=4" [longred_ctx2048]="longred ctx_len=2048 batch_size=16"
  [longred_ctx8192]="longred ctx_len=8192 batch_size=4")
# Learning-rate grids; GRID_<method> replaces one (e.g. GRID_ard="3e-3 1e-2" extends a search upward),
# METHODS limits the search to some methods.
declare -A grid=([ard]="${GRID_ard:-3e-4 1e-3 3e-3}" [cpt]="${GRID_cpt:-3e-5 1e-4 3e-4}"
                 [cpt_qkv]="${GRID_cpt_qkv:-3e-4 1e-3 3e-3}" [longred]="${GRID_longred:-3e-5 1e-4 3e-4}"
                 [stage2]="${GRID_stage2:-3e-4 1e-3 3e-3 1e-2}"  # LinearARD stage 2 beside the recipe's 2e-5
                 [ard_lora]="${GRID_ard_lora:-1e-3 3e-3 1e-2}" [cpt_qkv_lora]="${GRID_cpt_qkv_lora:-1e-3 3e-3 1e-2}")
methods=(${METHODS:-ard cpt cpt_qkv longred})  # or ard_lora, cpt_qkv_lora

# The evaluation's arguments, on the test sources (never trained on): perplexity at 2K and 8K,
# last-word cloze and next-sentence choice (experiments/make_choice.py: a second short-text task, so that
# Avg. and Rec. average two tasks as the paper's do), passkey to 32K
# (`common`); RULER at 8-32K (`ruler`); both at once (`both`).
common=(--text "$data/test.jsonl" --ctx 2048 8192 --tasks "$data/cloze.jsonl,$data/choice.jsonl" --limit 500 --quiet
        --passkey-lengths 4096 8192 16384 32768 --passkey-samples "${PASSKEY_SAMPLES:-2}")
ruler=(--quiet --ruler-lengths 8192 16384 32768 --ruler-tasks ${RULER_TASKS:-niah_single_1 niah_multikey_1 vt}
       --ruler-samples "${RULER_SAMPLES:-5}")
both=("${common[@]}" "${ruler[@]:1}")
# RULER's synthetic tasks of the paper's Appendix G (qa_1/qa_2 need SQuAD / HotpotQA, which we may not use).
ruler_full=(--quiet --ruler-lengths 8192 16384 32768 --ruler-samples "${RULER_FINAL_SAMPLES:-3}" --ruler-tasks
            ${RULER_FINAL_TASKS:-niah_single_1 niah_single_2 niah_single_3 niah_multikey_1 niah_multikey_2
            niah_multikey_3 niah_multivalue niah_multiquery vt cwe fwe})
both_full=("${common[@]}" "${ruler_full[@]:1}")
running=()
declare -A card_of=()  # pid of a background job -> its card
# card: waits until fewer than $J jobs run, then sets `picked` to the card running the fewest of
# them (not in a subshell: `wait -n` must see this shell's jobs).
card() {
  while (( $(jobs -rp | wc -l) >= J )); do wait -n; done
  local g p n best="${gpus[0]}" least=1000000
  for g in "${gpus[@]}"; do
    n=0
    for p in "${!card_of[@]}"; do
      kill -0 "$p" 2>/dev/null || { unset "card_of[$p]"; continue; }
      [[ ${card_of[$p]} == "$g" ]] && n=$((n + 1))
    done
    (( n < least )) && { least=$n; best=$g; }
  done
  picked="$best"
}
# run NAME KEY=VALUE...: one `linear-ard restore` in the background, at most $J at once.
run() {
  local name="$1"; shift
  [[ -f "$E/runs/$name/training_summary.json" ]] && return
  card
  CUDA_VISIBLE_DEVICES="$picked" "$cli" restore configs/smollm2_pi4.yaml "${base[@]}" output="$E/runs/$name" "$@" \
    >"$E/logs/$name.log" 2>&1 &
  card_of[$!]="$picked"
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
# existing WHAT LABEL=PATH...: sets found_names / found_paths to the models whose folder holds a
# config.json (a run that did not finish, e.g. cut off or out of memory, is left out of WHAT, named).
existing() {
  local what="$1" spec; shift
  found_names=() found_paths=()
  for spec in "$@"; do
    [[ -f "${spec#*=}/config.json" ]] || { echo "experiment_real: no ${spec%%=*}; left out of $what"; continue; }
    found_names+=("${spec%%=*}"); found_paths+=("${spec#*=}")
  done
}
# choose KEY LABEL=PATH...: the candidate with the lowest perplexity at 2K on the validation split,
# written to search/best_KEY (the label after its "lr": lr3e-3 or s2lr3e-3 -> 3e-3).
choose() {
  local key="$1"; shift
  [[ -n "$(best "$key")" ]] && return
  existing "the $key search" "$@"
  (( ${#found_names[@]} )) || { echo "experiment_real: nothing to choose from for $key"; return; }
  CUDA_VISIBLE_DEVICES="${gpus[0]}" "$cli" eval compare "${found_paths[@]}" --names "${found_names[@]}" \
    --text "$data/val.jsonl" --ctx 2048 --quiet -o "$out/search_$key" >"$E/logs/search_$key.log" 2>&1 \
    || { tail -3 "$E/logs/search_$key.log"; return; }
  python3 -c "import json,sys; m=json.load(open(sys.argv[1]))['models']; print(min(m, key=lambda x: x['ppl'][0]['ppl'])['name'].split('lr', 1)[1])" \
    "$out/search_$key.json" >"$E/search/best_$key"
  echo "experiment_real: $key: best $(best "$key") (validation PPL @2K)"
}
# report NAME ARGS_ARRAY LABEL=PATH...: one `linear-ard eval compare` in the background over the
# models that exist (`existing`); skipped when its report exists.
report() {
  local name="$1"; declare -n extra="$2"; shift 2
  [[ -f "$out/$name.json" ]] && return
  existing "$name" "$@"
  (( ${#found_names[@]} )) || return 0
  # With the perplexity and the native model in the report: each model's KL from native's next-token
  # distributions on the same test windows.
  local kl=()
  [[ " ${found_names[*]} " == *" native "* && " ${extra[*]} " == *" --text "* ]] && kl=(--kl-to native)
  card
  OMP_NUM_THREADS="${REPORT_THREADS:-4}" CUDA_VISIBLE_DEVICES="$picked" "$cli" eval compare "${found_paths[@]}" --names "${found_names[@]}" "${extra[@]}" \
    "${kl[@]}" -o "$out/$name" >"$E/logs/eval_$name.log" 2>&1 &
  card_of[$!]="$picked"
}

# seed_suffix SEED: the name suffix of a seed's run ("" for seed 0, _s<k> otherwise).
seed_suffix() { (( $1 > 0 )) && echo "_s$1"; }
# final_name METHOD SEED [TAG]: the run of a main row at its chosen setting (TAG: a variant of it, e.g.
# _yarn4; the names of the seeds and stage2 phases, so that runs they made are reused); final_model: its
# model folder.
final_name() {
  local method="$1" seed="$2" tag="${3:-}"
  if [[ $method == ard ]]; then echo "ard_s2lr$(best stage2)$tag$(seed_suffix "$seed")"
  else echo "${method}_lr$(best "$method")$tag$(seed_suffix "$seed")"; fi
}
final_model() { m "$(final_name "$@")"; }
# chosen_args METHOD: sets `chosen` to the method's settings at its chosen learning rates (search/best_*).
chosen_args() {
  local method="$1"
  declare -n settings="$method"
  chosen=()
  [[ -n "$(best "$method")" && ( $method != ard || -n "$(best stage2)" ) ]] \
    || { echo "experiment_real: no search result for $method; run search (and stage2) first"; return 1; }
  chosen=("${settings[@]}" lr="$(best "$method")")
  [[ $method == ard ]] && chosen+=(stage2.lr="$(best stage2)")
  [[ $method == ard_lora ]] && chosen+=(stage2.lr="$(best ard_lora)")
  return 0
}
# final_run METHOD SEED [TAG OVERRIDE...]: trains it (TAG and the overrides: a variant of the setting).
final_run() {
  local method="$1" seed="$2" tag="${3:-}"
  shift $(( $# < 3 ? $# : 3 ))
  chosen_args "$method" || return
  run "$(final_name "$method" "$seed" "$tag")" "${chosen[@]}" seed="$seed" "$@"
}
# seeded_specs LABEL NAME: LABEL=model, LABEL_s1=..., LABEL_s2=... of run NAME's seeds (SEEDS).
seeded_specs() {
  local seed; specs=()
  for seed in ${SEEDS:-0 1 2}; do specs+=("$1$(seed_suffix "$seed")=$(m "$2$(seed_suffix "$seed")")"); done
}

# The teacher under PI x4 and YaRN x4, untrained (rows of every report); under the data lock, since
# four drivers started together once made the same folders at once (one removed another's model.tmp).
flock "$data_lock" || exit 1
scaled pi4 '{"rope_type": "linear", "factor": 4.0}'
scaled yarn4 '{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}'
flock -u "$data_lock"
for phase in "$@"; do
  start=$(date +%s)
  case $phase in
  search)
    for method in "${methods[@]}"; do
      declare -n settings="$method"
      for lr in ${grid[$method]}; do
        s2=(); [[ $method == ard_lora ]] && s2=(stage2.lr="$lr")  # both stages at the searched rate
        run "${method}_lr${lr}" "${settings[@]}" lr="$lr" "${s2[@]}"
      done
    done
    settle
    for method in "${methods[@]}"; do
      specs=()
      for lr in ${grid[$method]}; do specs+=("lr$lr=$(m "${method}_lr${lr}")"); done
      choose "$method" "${specs[@]}"
    done ;;
  seeds)
    for method in "${methods[@]}"; do
      declare -n settings="$method"
      lr="$(best "$method")"; [[ -n "$lr" ]] || { echo "experiment_real: no search result for $method"; continue; }
      for seed in 1 2; do run "${method}_lr${lr}_s$seed" "${settings[@]}" lr="$lr" seed="$seed"; done
    done
    settle ;;
  ablations)
    # ABLATIONS (default all) names the ones to train, SEEDS (default 0) their seeds: LinearARD's
    # chosen setting (stage 2 at its chosen rate) with one change each.
    chosen_args ard || continue
    for seed in ${SEEDS:-0}; do
      for a in ${ABLATIONS:-${!ablation[@]}}; do run "$a$(seed_suffix "$seed")" "${chosen[@]}" seed="$seed" ${ablation[$a]}; done
    done
    settle ;;
  eval)
    main=("native=$teacher" "pi4=$(m pi4)" "yarn4=$(m yarn4)")
    for method in ard cpt cpt_qkv longred; do
      for s in "" ${EVAL_SEEDS-_s1 _s2}; do main+=("$method$s=$(m "${method}_lr$(best "$method")$s")"); done
    done
    report main common "${main[@]}"
    # RULER on the seed-0 model of each row (generation at 32K is the costly part of the evaluation).
    rows=("native=$teacher" "pi4=$(m pi4)" "yarn4=$(m yarn4)")
    for method in ard cpt cpt_qkv longred; do rows+=("$method=$(m "${method}_lr$(best "$method")")"); done
    report ruler ruler "${rows[@]}"
    abl=("native=$teacher" "pi4=$(m pi4)" "ard=$(m "ard_lr$(best ard)")")
    for a in abl_attention abl_no_vv abl_logit abl_all_layers abl_lora abl_full abl_stage1_only; do abl+=("$a=$(m "$a")"); done  # table order
    [[ -z "${SKIP_ABLATIONS:-}" ]] && report ablations common "${abl[@]}"
    wait
    tail -n 3 "$E"/logs/eval_*.log ;;
  stage2)
    lr="$(best ard)"
    run "ard_lr$lr" "${ard[@]}" lr="$lr"  # the main row: stage 2 at the recipe's 2e-5
    specs=("s2lr2e-5=$(m "ard_lr$lr")")
    for s2 in ${grid[stage2]}; do
      run "ard_s2lr$s2" "${ard[@]}" lr="$lr" stage2.lr="$s2"; specs+=("s2lr$s2=$(m "ard_s2lr$s2")")
    done
    settle
    choose stage2 "${specs[@]}"
    # LinearARD's row at the chosen stage-2 rate: seeds 1 and 2 beside seed 0 (ard_s2lr<best>).
    s2="$(best stage2)"
    if [[ -n "$s2" && "$s2" != 2e-5 ]]; then
      for seed in 1 2; do run "ard_s2lr${s2}_s$seed" "${ard[@]}" lr="$lr" stage2.lr="$s2" seed="$seed"; done
    fi
    settle ;;
  yarn)  # every method's chosen setting with the student scaled YaRN x4, SEEDS (default 0)
    for seed in ${SEEDS:-0}; do
      for method in "${methods[@]}"; do
        final_run "$method" "$seed" _yarn4 student_rope.rope_type=yarn student_rope.original_max_position_embeddings=8192
      done
    done
    settle ;;
  budget)
    # k x 4.26M tokens: CPT / CPT-QKV / LongReD take k x 130 steps; LinearARD keeps stage 1 (69 x 8 x
    # 4096) and gives stage 2 the rest (k x 130 - 69 steps of 32768) at its chosen stage-2 rate.
    # BUDGET_METHODS (default all four) names the methods to train, SEEDS (default 0) their seeds
    # (runs <method>_x<k>[_s<seed>]).
    for k in ${BUDGETS:-4}; do
      for seed in ${SEEDS:-0}; do
        for method in ${BUDGET_METHODS:-ard cpt cpt_qkv longred}; do
          declare -n settings="$method"
          if [[ $method == ard ]]; then
            run "ard_x$k$(seed_suffix "$seed")" "${ard[@]}" lr="$(best ard)" stage2.lr="$(best stage2 || echo 2.0e-5)" \
              stage2.steps=$((k * 130 - 69)) seed="$seed"
          else
            run "${method}_x$k$(seed_suffix "$seed")" "${settings[@]}" lr="$(best "$method")" steps=$((k * 130)) seed="$seed"
          fi
        done
      done
    done
    settle ;;
  reports)  # REPORTS (default all five; ablations_seeds and budget_split too) names the reports to write; REPORT_JOBS as below
    J="${REPORT_JOBS:-$(( 4 * ${#gpus[@]} ))}"
    lr="$(best ard)" want=" ${REPORTS:-stage2 stage2_seeds yarn budget ablations_late} "
    s2=("native=$teacher" "pi4=$(m pi4)" "s2lr2e-5=$(m "ard_lr$lr")")
    for s in ${grid[stage2]}; do s2+=("s2lr$s=$(m "ard_s2lr$s")"); done
    [[ $want == *" stage2 "* ]] && report stage2 both "${s2[@]}"
    # YaRN x4 students: one report a method (native for the KL, its seeds as <method>_yarn4[_s<k>]), so
    # that they run at once; YaRN x4 unrestored is in final_ref.
    if [[ $want == *" yarn "* ]]; then
      for method in "${methods[@]}"; do
        seeded_specs "${method}_yarn4" "$(final_name "$method" 0 _yarn4)"
        report "yarn_$method" both "native=$teacher" "${specs[@]}"
      done
    fi
    # One budget report per multiple (budget_x4, budget_x16), so that each starts once its runs exist.
    for k in ${BUDGETS:-4}; do
      b=("native=$teacher" "pi4=$(m pi4)")
      for method in ard cpt cpt_qkv longred; do b+=("${method}_x$k=$(m "${method}_x$k")"); done
      [[ $want == *" budget "* ]] && report "budget_x$k" both "${b[@]}"
    done
    # budget_split: per method of BUDGET_METHODS and multiple k a short-text report of its seeds
    # (SEEDS, default 0) beside native (budget_x<k>_<method>) and a RULER report a model
    # (ruler_<method>_x<k>[_s<seed>]), so that a driver of one method on its own card reports its
    # runs as soon as they exist (the large corpus's 16x).
    if [[ $want == *" budget_split "* ]]; then
      for k in ${BUDGETS:-4}; do
        for method in ${BUDGET_METHODS:-ard cpt cpt_qkv longred}; do
          SEEDS="${SEEDS:-0}" seeded_specs "${method}_x$k" "${method}_x$k"
          report "budget_x${k}_$method" common "native=$teacher" "${specs[@]}"
          for r in "${specs[@]}"; do report "ruler_${r%%=*}" ruler "$r"; done
        done
      done
    fi
    s2="$(best stage2)"
    [[ $want == *" stage2_seeds "* && -n "$s2" ]] && report stage2_seeds both "native=$teacher" "pi4=$(m pi4)" \
      "ard=$(m "ard_s2lr$s2")" "ard_s1=$(m "ard_s2lr${s2}_s1")" "ard_s2=$(m "ard_s2lr${s2}_s2")"
    [[ $want == *" ablations_late "* ]] && report ablations_late common "native=$teacher" "pi4=$(m pi4)" "ard=$(m "ard_lr$lr")" \
      "abl_full=$(m abl_full)" "abl_stage1_only=$(m abl_stage1_only)"
    # The ablations at LinearARD's chosen setting with seeds (SEEDS, default 0 1 2): one short-text
    # report each beside native (the KL), and with ABLATION_RULER=1 RULER's full task set one report a
    # model (ruler_<ablation>[_s<k>], as final_reports writes them for the main rows).
    if [[ $want == *" ablations_seeds "* ]]; then
      for a in ${ABLATIONS:-${!ablation[@]}}; do
        seeded_specs "$a" "$a"
        report "ablation_$a" common "native=$teacher" "${specs[@]}"
        if [[ -n "${ABLATION_RULER:-}" ]]; then
          for r in "${specs[@]}"; do report "ruler_${r%%=*}" ruler_full "$r"; done
        fi
      done
    fi
    wait
    J="${JOBS:-${#gpus[@]}}"
    tail -n 3 "$E"/logs/eval_*.log ;;
  settings)
    names=(${SETTINGS:-ard_ctx2048 ard_lv2 ard_lqk2 ard_last2 cpt_qkv_ctx8192 cpt_qkv_ctx16384 cpt_ctx8192
           longred_ctx2048 longred_ctx8192})
    for v in "${names[@]}"; do
      read -r method overrides <<<"${variant[$v]}"
      chosen_args "$method" || continue
      run "set_$v" "${chosen[@]}" $overrides
    done
    settle
    val=(--text "$data/val.jsonl" --ctx 2048 --quiet)
    for method in ard cpt_qkv cpt longred; do
      specs=("chosen=$(final_model "$method" 0)")
      for v in "${names[@]}"; do [[ ${variant[$v]%% *} == "$method" ]] && specs+=("${v#"$method"_}=$(m "set_$v")"); done
      (( ${#specs[@]} > 1 )) && report "settings_$method" val "${specs[@]}"
    done
    wait ;;
  final)
    for method in ${FINAL_METHODS:-ard cpt_qkv cpt longred}; do
      [[ $method == ref ]] && continue
      for seed in 0 1 2; do final_run "$method" "$seed"; done
    done
    settle ;;
  final_reports)
    # Per method (FINAL_METHODS, and `ref`): the short-text report of its seeds beside native (the KL
    # to native; final_<method>), and RULER's full task set (RULER_FINAL_TASKS, RULER_FINAL_SAMPLES a
    # cell) one report per model (ruler_<model>), so that they run side by side: generation at batch 1
    # is bound by the host, not the card. REPORT_JOBS: reports at once (default four a card).
    # Every short-text report is queued before the first RULER report: when a call's time runs out,
    # the reports left undone are RULER's, not a method's whole row (a call once ended with LongReD's row missing).
    J="${REPORT_JOBS:-$(( 4 * ${#gpus[@]} ))}"
    rulers=()
    for method in ${FINAL_METHODS:-ard cpt_qkv cpt longred ref}; do
      if [[ $method == ref ]]; then
        report final_ref common "native=$teacher" "pi4=$(m pi4)" "yarn4=$(m yarn4)"
        rulers+=("native=$teacher" "yarn4=$(m yarn4)")
        continue
      fi
      specs=()
      for seed in 0 1 2; do specs+=("$method$(seed_suffix "$seed")=$(final_model "$method" "$seed")"); done
      report "final_$method" common "native=$teacher" "${specs[@]}"
      rulers+=("${specs[@]}")
    done
    for r in "${rulers[@]}"; do report "ruler_${r%%=*}" ruler_full "$r"; done
    wait
    J="${JOBS:-${#gpus[@]}}"
    tail -n 2 "$E"/logs/eval_final*.log "$E"/logs/eval_ruler_*.log ;;
  *) echo "experiment_real: unknown phase $phase (search, seeds, ablations, eval, stage2, yarn, budget, reports, final, final_reports)"; exit 2 ;;
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
