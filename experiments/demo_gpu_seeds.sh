#!/usr/bin/env bash
# The README's main command on one GPU, once a seed (SEEDS, default "0 1 2"; the seed sets the data
# order and the initialisation), the runs sharing the card, then the figures over the seeds
# (experiments/demo_seeds.py: mean ± 95 % interval and each run's row; a plot). For a GPU machine
# without network access: the binaries of dev/gpu/prebuilt_pack.sh, the model of
# dev/gpu/device_model.sh and the split of scripts/corpus_split.py packed as .devdata/real_data.tar.xz.
#   PREBUILT=.devpack/devbin.tar.xz experiments/demo_gpu_seeds.sh [OUT]
# COPY_TO: a folder each finished seed's compare.json and training_summary.json are copied into.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
E="${1:-$HOME/demo_seeds}"
export PYTORCH_CUDA_ALLOC_CONF="${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}"
mkdir -p "$E"
source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries
LOG_DIR="$E" gpu_binaries linear_ard_cli || exit 1
teacher="$(dev/gpu/device_model.sh)" || exit 3
data="$(dev/gpu/device_data.sh "$E/data")" || exit 1
outs=()
J="${JOBS:-2}"  # runs sharing the card at once: a restore with its 32K validation peaks near 46 GiB
for s in ${SEEDS:-0 1 2}; do
  outs+=("$E/seed$s")
  [[ -f "$E/seed$s/eval/compare.json" ]] && continue
  while (( $(jobs -rp | wc -l) >= J )); do wait -n; done
  ( start=$SECONDS
    LINEAR_ARD_CLI="$build/src/cli/linear-ard" DEMO_TEACHER="$teacher" DEMO_DATA="$data" DEMO_SEED="$s" \
      DEMO_OUT="$E/seed$s" scripts/demo.sh >"$E/seed$s.log" 2>&1
    echo "demo_gpu_seeds: seed $s exit $? after $((SECONDS - start)) s"; grep '^demo:' "$E/seed$s.log"
    [[ -n "${COPY_TO:-}" ]] && cp "$E/seed$s/eval/compare.json" "$COPY_TO/compare_seed$s.json" \
      && cp "$E/seed$s/restored/training_summary.json" "$COPY_TO/summary_seed$s.json" ) &
done
wait
python3 experiments/demo_seeds.py "${outs[@]}" -o "$E/demo_seeds.md" --plot "$E/demo_seeds.png"
