#!/usr/bin/env bash
# Reproduces the bundled demo model models/demo (and the demo's text samples data/demo) exactly:
#   1. scripts/make_corpus.sh: the Debian-package English corpus in build/corpus (apt; cached)
#   2. linear-ard tokenizer-train: a 2048-piece SentencePiece BPE on its train split
#   3. linear-ard pretrain configs/pretrain_demo.yaml (CPU: ~15 min on 2 cores; `device: auto`
#      takes a GPU when present, in bf16, which gives a different model)
#   4. linear-ard eval ppl / passkey on the held-out split at the native length (256)
#   5. copies the model folder to models/demo and the KJV samples to data/demo (the lead commits them)
#   dev/make_demo_model.sh            BUILD_DIR=build-x dev/make_demo_model.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"

"$root/scripts/build.sh" "$build_dir" linear_ard_cli
source "$root/scripts/env.sh"
cli="$build_dir/src/cli/linear-ard"

"$root/scripts/make_corpus.sh"
work=build/demo_model
mkdir -p "$work"
"$cli" tokenizer-train --data build/corpus/train.jsonl --vocab-size 2048 --max-sentences 400000 --seed 0 \
  --output "$work/tokenizer" --overwrite
start=$(date +%s)
"$cli" pretrain configs/pretrain_demo.yaml
echo "make_demo_model: pretraining took $(( $(date +%s) - start )) s"
"$cli" eval ppl "$work/run/model" --text build/corpus/heldout.jsonl --ctx 256 -o "$work/eval_ppl"
"$cli" eval passkey "$work/run/model" --lengths 248 --samples 4 --max-new-tokens 8 -o "$work/eval_passkey"

rm -rf models/demo
mkdir -p models/demo data/demo
cp "$work/run/model/"* models/demo/
cp "$work/run/resolved_config.yaml" models/demo/pretrain_config.yaml
cp "$work/run/training_summary.json" models/demo/training_summary.json
cp build/corpus/demo/restore.jsonl build/corpus/demo/heldout.jsonl data/demo/
du -sh models/demo data/demo
"$cli" inspect models/demo
