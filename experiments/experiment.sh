#!/usr/bin/env bash
# The paper's experiment at small scale (docs/results-small.md), on the GPU machine:
#   1. tokenizer (SentencePiece BPE, 8K) and a 32M-parameter LLaMA-architecture teacher pretrained at
#      native context 512 on the Debian-package corpus (experiments/configs/pretrain_experiment.yaml): the
#      candidates of $TEACHERS side by side, and the one that retrieves the passkey best at 512 (ties:
#      lower held-out perplexity) is the teacher (report: teachers.md);
#   2. the teacher scaled PI x8 (and YaRN x8), unrestored; budget-matched CPT and LongReD-style
#      hidden-state distillation; LinearARD (final layer, QKV) without and with the light CPT stage;
#      CPT at 1/8, 1/4, 1/2, 1 and 8x the budget (the token-efficiency curve); ablations (attention
#      map, w/o V/V, + logit KL, all layers); extra seeds;
#   3. `linear-ard eval compare`: held-out perplexity and last-word cloze accuracy (short context,
#      Rec. vs native), passkey at the native length, passkey and RULER at 2x / 4x / 8x the native
#      length.
# Runs that do not depend on each other share the GPU (the models are small). Every stage is skipped
# when its output exists, so a second call on a still-warm machine continues. Needs build/corpus
# (scripts/make_corpus.sh, carried) and builds linear-ard with dev/gpu/gpu_build.sh (or takes
# PREBUILT=DIR binaries: dev/gpu/gpu_binaries.sh).
#   experiments/experiment.sh [train|eval|all]        EXPERIMENT_TINY=1: a minutes-long CPU smoke run
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
what="${1:-all}"
out="${OUT:-$root/build/experiment/out}"
E="${EXPERIMENT_DIR:-$root/build/experiment}"
mkdir -p "$out" "$E/runs" "$E/logs"
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}"
py="$(command -v python3)"  # the project's .venv where scripts/setup.sh made one (not on the GPU machine)
[[ -x "$root/.venv/bin/python" ]] && py="$root/.venv/bin/python"
[[ -f build/corpus/train.jsonl && -f build/corpus/heldout.jsonl ]] || { echo "experiment: build/corpus missing (scripts/make_corpus.sh)"; exit 1; }

if [[ -n "${EXPERIMENT_TINY:-}" ]]; then
  cli="${CLI:-$root/build/src/cli/linear-ard}"
  N=128 vocab=1024 dev=cpu
  pre=(pretrain.model.hidden_size=64 pretrain.model.intermediate_size=128 pretrain.model.num_hidden_layers=2
       pretrain.model.num_attention_heads=4 pretrain.model.num_key_value_heads=2 pretrain.model.max_position_embeddings=128
       ctx_len=128 batch_size=4 steps=30 warmup_steps=5 eval_every=0 checkpoint_every=0 device=cpu)
  S1=4 S2=2 SC=4 SBIG=8 B1=2 B2=1 limit=20 samples=1 rsamples=1 rtasks="niah_single_1 vt"
  tok_args=(--max-sentences 20000) W=1
  TEACHERS="${TEACHERS:-base}"
else
  source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries (PREBUILT=DIR: carried binaries, no build)
  LOG_DIR="$E/logs" gpu_binaries linear_ard_cli || exit 1
  cli="$build/src/cli/linear-ard"
  N=512 vocab=8192 dev=auto
  pre=() tok_args=() W=20
  # Stage 1: 250 x 8 x 512 = 1.02M tokens; stage 2 (CPT at 8x = 4096): 125 x 2 x 4096 = 1.02M.
  S1=250 S2=125 SC=250 SBIG=2000 B1=8 B2=2 limit=500 samples=2 rsamples=3
  rtasks="niah_single_1 niah_multikey_1 niah_multivalue vt fwe"
  # Candidate teachers, NAME[:key=value,...] (overrides of experiments/configs/pretrain_experiment.yaml), e.g.
  # TEACHERS="base w300:pretrain.answer_weight=300 lr2e-3:lr=2.0e-3 short:steps=5000" (docs/results-small.md).
  TEACHERS="${TEACHERS:-base}"
fi
L8=$((8 * N))
teacher="$E/pretrain/model"

# ---- 1. tokenizer and teacher
if [[ "$what" != eval ]]; then
  if [[ ! -f "$E/tokenizer/tokenizer.json" ]]; then
    "$cli" tokenizer-train --data build/corpus/train.jsonl --vocab-size "$vocab" --output "$E/tokenizer" --overwrite "${tok_args[@]}" \
      >"$E/logs/tokenizer.log" 2>&1 || { tail "$E/logs/tokenizer.log"; exit 1; }
  fi
  if [[ ! -f "$teacher/config.json" ]]; then
    start=$(date +%s)
    cands=() tpids=()
    for t in $TEACHERS; do
      name="${t%%:*}" overrides=()
      [[ "$t" == *:* ]] && IFS=, read -ra overrides <<<"${t#*:}"
      cands+=("$name")
      [[ -f "$E/teachers/$name/model/config.json" ]] && continue
      "$cli" pretrain experiments/configs/pretrain_experiment.yaml pretrain.tokenizer="$E/tokenizer" output="$E/teachers/$name" \
        "${pre[@]}" "${overrides[@]}" >"$E/logs/pretrain_$name.log" 2>&1 &
      tpids+=("$!:$name")
    done
    for p in "${tpids[@]}"; do
      wait "${p%%:*}" || { echo "experiment: pretraining ${p#*:} failed:"; tail -5 "$E/logs/pretrain_${p#*:}.log"; exit 1; }
      grep -E "^eval" "$E/logs/pretrain_${p#*:}.log" | tail -1 | sed "s/^/${p#*:}: /"
    done
    echo "experiment: pretraining ${#cands[@]} candidate teacher(s) side by side took $(( $(date +%s) - start )) s"
    # Native-length passkey (every depth) and held-out perplexity of each candidate.
    paths=()
    for c in "${cands[@]}"; do paths+=("$E/teachers/$c/model"); done
    "$cli" eval compare "${paths[@]}" --names "${cands[@]}" --text build/corpus/heldout.jsonl --ctx "$N" \
      --passkey-lengths $((N - 8)) --passkey-samples $((2 * samples)) --device "$dev" --quiet -o "$out/teachers" \
      >"$E/logs/eval_teachers.log" 2>&1 || { tail -5 "$E/logs/eval_teachers.log"; exit 1; }
    cat "$out/teachers.md"
    best="$("$py" - "$out/teachers.json" <<'PY'
import json, sys
models = json.load(open(sys.argv[1]))["models"]
def score(m):
    rows = m["passkey"]["rows"]
    return (-sum(r["accuracy"] for r in rows) / len(rows), m["ppl"][0]["ppl"])
print(min(models, key=score)["name"])
PY
)" || exit 1
    echo "experiment: teacher = $best (best native passkey, then perplexity)"
    rm -rf "$E/pretrain" && ln -s "teachers/$best" "$E/pretrain"
  fi
  cp "$E/pretrain/"*.jsonl "$E/pretrain/"*.svg "$out/" 2>/dev/null
fi

# ---- 2. scaled students and restoration runs
# scaled NAME ROPE_JSON: the teacher with another RoPE in config.json (no training).
scaled() {
  [[ -f "$E/runs/$1/model/config.json" ]] && return
  mkdir -p "$E/runs/$1" && rm -rf "$E/runs/$1/model.tmp" && cp -r "$teacher" "$E/runs/$1/model.tmp"
  "$py" - "$E/runs/$1/model.tmp/config.json" "$2" "$L8" <<'PY'
import json, sys
path, rope, length = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
c = json.load(open(path))
c["rope_parameters"] = {**c.get("rope_parameters", {}), **rope}
c.pop("rope_scaling", None)
c["max_position_embeddings"] = length
json.dump(c, open(path, "w"), indent=2)
PY
  mv "$E/runs/$1/model.tmp" "$E/runs/$1/model"
}
# run NAME KEY=VALUE...: one `linear-ard restore` on the shared base config, in the background.
pids=()
run() {
  local name="$1"; shift
  [[ -f "$E/runs/$name/model/config.json" ]] && return
  "$cli" restore experiments/configs/experiment_restore.yaml teacher="$teacher" output="$E/runs/$name" device="$dev" \
    steps="$S1" batch_size="$B1" ctx_len="$N" warmup_steps="$W" "$@" >"$E/logs/$name.log" 2>&1 &
  pids+=("$!:$name")
}
if [[ "$what" != eval ]]; then
  scaled pi8 '{"rope_type": "linear", "factor": 8.0}'
  scaled yarn8 "{\"rope_type\": \"yarn\", \"factor\": 8.0, \"original_max_position_embeddings\": $N}"
  start=$(date +%s)
  # The long one first. CPT trains at the extended length, full model (its usual form).
  run cpt_x8 method=cpt trainable=full ctx_len="$L8" batch_size="$B2" steps="$SBIG"
  run cpt method=cpt trainable=full ctx_len="$L8" batch_size="$B2" steps="$SC"
  run longred method=longred trainable=full steps="$((2 * S1))" longred.max_skip=8
  run ard
  run ard_cpt stage2.steps="$S2" stage2.ctx_len="$L8" stage2.batch_size="$B2" stage2.lr=5.0e-4
  run abl_attention objective.relations=attention
  run abl_no_vv lambda_v=0
  run abl_logit objective.logit_kl=1
  run abl_all_layers layers=all
  run ard_seed1 seed=1
  run ard_seed2 seed=2
  run cpt_seed1 method=cpt trainable=full ctx_len="$L8" batch_size="$B2" steps="$SC" seed=1
  # CPT below the matched budget: where its short-context recovery meets LinearARD's (token efficiency).
  for q in 8 4 2; do
    run "cpt_1_$q" method=cpt trainable=full ctx_len="$L8" batch_size="$B2" steps="$(( SC / q > 1 ? SC / q : 1 ))"
  done
  failed=0
  for p in "${pids[@]}"; do
    wait "${p%%:*}" || { echo "experiment: run ${p#*:} failed:"; tail -5 "$E/logs/${p#*:}.log"; failed=1; }
  done
  echo "experiment: restoration runs took $(( $(date +%s) - start )) s"
  for d in "$E"/runs/*/; do
    n="$(basename "$d")"
    mkdir -p "$out/runs/$n"
    cp "$d"/*.json "$d"/*.jsonl "$d"/*.svg "$d"/*.yaml "$out/runs/$n/" 2>/dev/null
  done
  [[ $failed == 0 ]] || exit 1
fi
[[ "$what" == train ]] && exit 0

# ---- 3. evaluation
"$py" experiments/make_cloze.py build/corpus/heldout.jsonl -o "$E/cloze.jsonl" --count "$limit"
"$py" - "$E/essay.txt" <<'PY'
import json, sys
docs = [json.loads(l)["text"] for l in open("build/corpus/heldout.jsonl") if l.strip()]
open(sys.argv[1], "w").write("\n\n".join(docs))
PY
m() { echo "$E/runs/$1/model"; }
common=(--text build/corpus/heldout.jsonl --ctx "$N" --tasks "$E/cloze.jsonl" --limit "$limit" --device "$dev" --quiet)
start=$(date +%s)
long=(--passkey-lengths $((2 * N)) $((4 * N)) $L8 --passkey-samples "$samples"
      --ruler-lengths $((2 * N)) $((4 * N)) $L8 --ruler-tasks $rtasks --ruler-samples "$rsamples" --haystack "$E/essay.txt")
# Three reports side by side on the GPU (native is the Rec. reference of each).
"$cli" eval compare "$teacher" $(m pi8) $(m yarn8) $(m cpt) --names native pi8 yarn8 cpt "${common[@]}" "${long[@]}" \
  -o "$out/main_a" >"$E/logs/eval_main_a.log" 2>&1 &
p1=$!
"$cli" eval compare "$teacher" $(m longred) $(m ard) $(m ard_cpt) $(m cpt_x8) --names native longred ard ard_cpt cpt_x8 \
  "${common[@]}" "${long[@]}" -o "$out/main_b" >"$E/logs/eval_main_b.log" 2>&1 &
p2=$!
"$cli" eval compare "$teacher" $(m pi8) $(m ard) $(m ard_seed1) $(m ard_seed2) $(m abl_attention) $(m abl_no_vv) \
  $(m abl_logit) $(m abl_all_layers) $(m cpt) $(m cpt_seed1) \
  --names native pi8 ard ard_seed1 ard_seed2 attention no_vv logit_kl all_layers cpt cpt_seed1 "${common[@]}" \
  -o "$out/ablations" >"$E/logs/eval_ablations.log" 2>&1 &
p3=$!
# Token efficiency: short-context quality of CPT at 1/8 .. 8x the matched budget beside LinearARD's.
"$cli" eval compare "$teacher" $(m pi8) $(m ard) $(m ard_cpt) $(m cpt_1_8) $(m cpt_1_4) $(m cpt_1_2) $(m cpt) $(m cpt_x8) \
  --names native pi8 ard ard_cpt cpt_1_8 cpt_1_4 cpt_1_2 cpt cpt_x8 "${common[@]}" \
  -o "$out/budget" >"$E/logs/eval_budget.log" 2>&1 &
p4=$!
# Retrieval at the native length (short context): does restoration bring back what PI x 8 broke?
"$cli" eval compare "$teacher" $(m pi8) $(m yarn8) $(m ard) $(m ard_cpt) $(m cpt) $(m longred) $(m cpt_x8) \
  $(m abl_attention) $(m abl_logit) --names native pi8 yarn8 ard ard_cpt cpt longred cpt_x8 attention logit_kl \
  --passkey-lengths $((N - 8)) --passkey-samples $((2 * samples)) --device "$dev" --quiet \
  -o "$out/native_passkey" >"$E/logs/eval_native_passkey.log" 2>&1 &
p5=$!
r=0
for p in $p1 $p2 $p3 $p4 $p5; do wait $p || r=1; done
echo "experiment: evaluation took $(( $(date +%s) - start )) s"
[[ $r == 0 ]] || tail -n 5 "$E"/logs/eval_*.log
cp "$E"/logs/eval_*.log "$out/" 2>/dev/null
cat "$out/main_a.md" "$out/main_b.md" "$out/ablations.md" "$out/budget.md" "$out/native_passkey.md" 2>/dev/null
[[ -f "$out/budget.json" ]] && "$py" experiments/token_efficiency.py "$out/budget.json" "$E/runs" --svg "$out/token_efficiency.svg" | tee "$out/token_efficiency.md"
exit $r
