#!/usr/bin/env bash
# The README's main command: restores a PI x8 RoPE-scaled copy of the bundled tiny teacher with
# LinearARD stage 1 and shows what changed. On a fresh Debian 12 machine it installs what is needed
# (scripts/setup.sh), builds only the `linear-ard` binary, creates the teacher if absent
# (scripts/make_demo_teacher.py, pretrained for ~1-2 min on CPU, see docs/restore.md), runs
#   linear-ard restore configs/demo_cpu.yaml
# (a GPU is used when present), inspects the result and prints the held-out metrics before/after.
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

# The teacher is pretrained for a few seconds (a random one shows the pipeline, not restoration).
# It is cached in build/demo; its marker must record these settings, else (e.g. a random teacher
# from an older demo) it is rebuilt.
pretrain_steps=1000 pretrain_batch=4 pretrain_lr=0.003
if ! "$LINEAR_ARD_PYTHON" - "$pretrain_steps" "$pretrain_batch" "$pretrain_lr" <<'PY'
import json, sys
from pathlib import Path
t = Path("build/demo/teacher")
try:
    m = json.loads((t / "demo_teacher.json").read_text())
    ok = ((t / "config.json").is_file() and (t / "model.safetensors").is_file()
          and Path("build/demo/data.jsonl").is_file()
          and m.get("pretrain_steps") == int(sys.argv[1]) and m.get("pretrain_batch") == int(sys.argv[2])
          and m.get("pretrain_lr") == float(sys.argv[3]))
except (OSError, ValueError):
    ok = False
sys.exit(0 if ok else 1)
PY
then
  echo "demo: building and pretraining the demo teacher in build/demo (cached for later runs)"
  rm -rf build/demo/teacher build/demo/data.jsonl
  tstart=$(date +%s)
  "$LINEAR_ARD_PYTHON" scripts/make_demo_teacher.py build/demo/teacher --data build/demo/data.jsonl \
    --pretrain-steps "$pretrain_steps" --pretrain-batch "$pretrain_batch" --pretrain-lr "$pretrain_lr"
  echo "demo: teacher took $(( $(date +%s) - tstart )) s"
fi

start=$(date +%s)
"$cli" restore configs/demo_cpu.yaml
echo "demo: restore took $(( $(date +%s) - start )) s"
"$cli" inspect build/demo/restored/model
"$LINEAR_ARD_PYTHON" - <<'PY'
import json
s = json.load(open("build/demo/restored/training_summary.json"))
b, a = s["eval_before"], s["eval_after"]
print(f"demo: {s['tokens_trained']} tokens (N_tok = L*B*A*U*G = {s['token_budget']['tokens']}), "
      f"{s['train_time_s']:.1f} s of training on {s['device']} ({s['mean_tokens_per_s']:.0f} tok/s)")
print("demo: held-out block     before    after")
for key, name in (("relation_loss", "relation loss (optimised)"), ("logit_kl", "logit KL (monitored)"),
                  ("attention_kl", "attention KL (monitored)")):
    print(f"demo: {name:26s} {b[key]:.4f} -> {a[key]:.4f}")
PY
