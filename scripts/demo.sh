#!/usr/bin/env bash
# The README's main command: restores a PI x8 RoPE-scaled copy of the bundled demo model
# (models/demo: a tiny LLaMA-architecture model pretrained by `linear-ard pretrain`, native context
# 256, see docs/pretrain.md) with LinearARD stage 1 on the bundled KJV sample (data/demo), then
# compares the native, the scaled-but-unrestored and the restored model: short-context perplexity
# on held-out text (data/demo/heldout.jsonl) and passkey retrieval at the scaled length (2048).
# On a fresh Debian 12 machine it installs what is needed (scripts/setup.sh) and builds only the
# `linear-ard` binary; a GPU is used when present.
#   scripts/demo.sh                      BUILD_DIR=build-x scripts/demo.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build_dir="${BUILD_DIR:-build}"

"$root/scripts/setup.sh"
source "$root/scripts/env.sh"

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$LINEAR_ARD_PYTHON" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target linear_ard_cli
cli="$build_dir/src/cli/linear-ard"

start=$(date +%s)
"$cli" inspect models/demo
"$cli" restore configs/demo_cpu.yaml
echo "demo: restore took $(( $(date +%s) - start )) s"

# The scaled, unrestored model: the restored folder's config.json (PI x8) over the native weights.
out=build/demo
rm -rf "$out/scaled"
mkdir -p "$out/scaled" "$out/eval"
cp models/demo/* "$out/scaled/"
cp "$out/restored/model/config.json" "$out/scaled/config.json"

# Passkey prompts of 2040 tokens + 8 generated = the scaled context (8 x 256); the native model is
# also asked at its own length (248 + 8 = 256) for reference.
for m in native scaled restored; do
  case $m in native) dir=models/demo ;; scaled) dir=$out/scaled ;; restored) dir=$out/restored/model ;; esac
  "$cli" eval ppl "$dir" --text data/demo/heldout.jsonl --ctx 256 -o "$out/eval/ppl_$m" >/dev/null
  "$cli" eval passkey "$dir" --lengths 2040 --samples 2 --max-new-tokens 8 -o "$out/eval/passkey_$m" >/dev/null
done
"$cli" eval passkey models/demo --lengths 248 --samples 2 --max-new-tokens 8 -o "$out/eval/passkey_native_256" >/dev/null
echo "demo: restore + evaluation took $(( $(date +%s) - start )) s"

"$LINEAR_ARD_PYTHON" - <<'PY'
import json
out = "build/demo"
s = json.load(open(f"{out}/restored/training_summary.json"))
b, a = s["eval_before"], s["eval_after"]
print(f"demo: restored with {s['tokens_trained']} tokens in {s['train_time_s']:.1f} s on {s['device']}; "
      f"held-out relation loss {b['relation_loss']:.3f} -> {a['relation_loss']:.3f}, "
      f"logit KL {b['logit_kl']:.3f} -> {a['logit_kl']:.3f}")
def acc(name):
    rows = json.load(open(f"{out}/eval/{name}.json"))["rows"]
    return 100 * sum(r["accuracy"] * r["samples"] for r in rows) / sum(r["samples"] for r in rows)
print("demo: data/demo/heldout.jsonl (KJV chapters held out of pretraining), PI x8 = 2048 positions")
print(f"demo: {'model':28s} {'PPL @ 256':>10s} {'passkey @ 2048':>15s}")
for m, label in (("native", "native (RoPE of 256)"), ("scaled", "PI x8, not restored"), ("restored", "PI x8, restored (LinearARD)")):
    ppl = json.load(open(f"{out}/eval/ppl_{m}.json"))["results"][0]["ppl"]
    print(f"demo: {label:28s} {ppl:10.2f} {acc('passkey_' + m):14.0f}%")
print(f"demo: native model's passkey accuracy at its own 256: {acc('passkey_native_256'):.0f}%")
PY
