#!/usr/bin/env bash
# The large budget on the large corpus (docs/results.md, "A budget sixteen times larger"), on the GPU
# machine: one experiments/experiment_real.sh driver a card, each one method at BUDGETS x the paper's
# 4.26M tokens (default "1 16"), then that method's reports (REPORTS=budget_split: short text beside
# native, RULER's 3-task set), at the learning rates of the 1x search.
#   experiments/experiment_real_large.sh start
#       joins the data carried in parts (dev/gpu/device_parts.sh split real_data_large.tar.xz
#       .devdata/large, one part a call; exits 3 naming what is missing) and starts the drivers
#   experiments/experiment_real_large.sh wait SECONDS
#       experiments/experiment_real_bg.sh wait for them (their logs, summaries and reports to $OUT)
# METHODS (default ard cpt cpt_qkv longred) one a card of GPUS (default 0 1 2 ...: a 32K run needs
# a card of its own); RATES (default the 1x choices) METHOD=LR pairs, stage2= LinearARD's stage 2;
# EXPERIMENT_DIR (default ~/real_large); PREBUILT, SEEDS (default 0) and DATA_SHUFFLE (default 0; with
# seeds, e.g. 64, so that they vary the data order) as for experiment_real.sh. The model comes from
# dev/gpu/device_model.sh (its parts carried in the same calls).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
export EXPERIMENT_DIR="${EXPERIMENT_DIR:-$HOME/real_large}"
methods=(${METHODS:-ard cpt cpt_qkv longred})

start() {
  local data cards i kv
  data="$(dev/gpu/device_parts.sh join .devdata/large "${PARTS_STORE:-$HOME/linear-ard-parts}" | grep '/real_data_large.tar.xz$')"
  [[ -f "$data" ]] || { echo "experiment_real_large: real_data_large.tar.xz has not come whole (above)" >&2; exit 3; }
  cards=(${GPUS:-$(seq 0 $(( ${#methods[@]} - 1 )))})
  if (( ${#cards[@]} < ${#methods[@]} )); then
    echo "experiment_real_large: ${#methods[@]} methods need as many cards (GPUS=${cards[*]})" >&2
    exit 2
  fi
  mkdir -p "$EXPERIMENT_DIR/search"
  for kv in ${RATES:-ard=3e-3 cpt=1e-3 cpt_qkv=3e-3 longred=1e-3 stage2=3e-3}; do
    echo "${kv#*=}" >"$EXPERIMENT_DIR/search/best_${kv%%=*}"
  done
  for i in "${!methods[@]}"; do
    experiments/experiment_real_bg.sh start "large_${methods[$i]}" PREBUILT="${PREBUILT:-.devpack/devbin.tar.xz}" \
      DATA="$data" PASSKEY_SAMPLES=4 RULER_SAMPLES=10 JOBS=1 REPORT_JOBS=4 BUDGETS="${BUDGETS:-1 16}" \
      REPORTS=budget_split GPUS="${cards[$i]}" BUDGET_METHODS="${methods[$i]}" SEEDS="${SEEDS:-0}" \
      DATA_SHUFFLE="${DATA_SHUFFLE:-0}" -- budget reports || exit 1
  done
}

case "${1:-}" in
  start) start ;;
  wait) experiments/experiment_real_bg.sh wait "${2:?usage: experiment_real_large.sh wait SECONDS}" ;;
  *) echo "usage: experiments/experiment_real_large.sh start | wait SECONDS" >&2; exit 2 ;;
esac
