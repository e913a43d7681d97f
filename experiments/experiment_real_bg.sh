#!/usr/bin/env bash
# On the GPU machine: runs experiments/experiment_real.sh drivers (or DRIVER's, e.g.
# DRIVER=experiments/transfer.sh) in their own process sessions, so they go on between device calls
# (a call's own processes end with it), and collects what they wrote.
# Each driver runs from its own copy of the repo (~/lard/repo-NAME: the next call's fresh working
# tree must not change a script bash is still reading) and logs to ~/lard/NAME.log.
#   experiments/experiment_real_bg.sh start NAME [VAR=VALUE ...] -- PHASE ...
#       e.g. start long GPUS="0 1" BUDGETS=16 BUDGET_METHODS="ard cpt_qkv" -- budget reports
#   experiments/experiment_real_bg.sh wait SECONDS
#       waits until every started driver has ended (or SECONDS pass), then writes to $OUT the
#       drivers' logs, the runs' summaries, configs and metrics, the searches and tunes, and the
#       reports (real.tgz, small files only), and prints each driver's last lines.
# A driver's environment: PREBUILT, DATA, EXPERIMENT_DIR as for experiment_real.sh; OUT is always
# $EXPERIMENT_DIR/out (a call's $OUT is emptied before the next call).
set -uo pipefail
shopt -s nullglob
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lard="${LARD_DIR:-$HOME/lard}"
E="${EXPERIMENT_DIR:-$HOME/real_experiment}"
mkdir -p "$lard"

start() {
  local name="$1" vars=(); shift
  while [[ $# -gt 0 && "$1" != "--" ]]; do vars+=("$1"); shift; done
  [[ "${1:-}" == "--" ]] || { echo "experiment_real_bg: start NAME [VAR=VALUE ...] -- PHASE ..." >&2; exit 2; }
  shift
  [[ -f "$lard/$name.log" && ! -f "$lard/$name.rc" ]] && { echo "experiment_real_bg: $name is running" >&2; exit 1; }
  rm -rf "$lard/repo-$name" "$lard/$name.rc" && cp -r "$root" "$lard/repo-$name" || exit 1
  # Python's Popen starts it in a new session with every descriptor but 0-2 closed: a driver that kept
  # one the caller inherited (the device call's output pipe) would hold the call open until it ends.
  # shellcheck disable=SC2016  # "$@" and "$0" are the inner shell's
  (cd "$lard/repo-$name" && python3 -c 'import subprocess, sys
with open(sys.argv[1], "w") as log:
    subprocess.Popen(sys.argv[2:], stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)' \
    "$lard/$name.log" env "${vars[@]}" DRIVER="${DRIVER:-experiments/experiment_real.sh}" EXPERIMENT_DIR="$E" OUT="$E/out" bash -c \
    '"$DRIVER" "$@"; echo $? >"$0"' "$lard/$name.rc" "$@") || exit 1
  echo "experiment_real_bg: started $name (${vars[*]}) $*"
}

collect() {
  local d n
  mkdir -p "${OUT:?}/bg" "$E/out"
  cp "$lard"/*.log "$OUT/bg/" 2>/dev/null
  for d in "$E"/runs/*/; do
    n="$(basename "$d")"; [[ -f "$d/training_summary.json" ]] || continue
    mkdir -p "$E/out/runs/$n" && cp "$d"/training_summary.json "$d"/resolved_config.yaml "$d"/metrics.jsonl \
      "$E/out/runs/$n/" 2>/dev/null
  done
  for d in "$E"/tune/*/; do
    n="$(basename "$d")"; mkdir -p "$E/out/tune/$n" && cp "$d"/tune.json "$d"/tune.md "$E/out/tune/$n/" 2>/dev/null
  done
  # copies of the live folders, refreshed: a marker of a run that has ended since the last call must go
  rm -rf "$E/out/search" "$E/out/logs"
  cp -r "$E/search" "$E/logs" "$E"/*.md "$E"/*.png "$E/out/" 2>/dev/null
  (cd "$E/out" && find . -type f -size -2M | tar -czf "$OUT/bg/real.tgz" -T -)
}

wait_all() {
  local end=$(( $(date +%s) + ${1:?seconds} )) f running
  while (( $(date +%s) < end )); do
    running=0
    for f in "$lard"/*.log; do [[ -f "${f%.log}.rc" ]] || running=$((running + 1)); done
    (( running == 0 )) && break
    sleep 10
  done
  collect
  for f in "$lard"/*.log; do
    echo "== $(basename "${f%.log}") (exit: $(cat "${f%.log}.rc" 2>/dev/null || echo running))"
    grep -v "warning" "$f" | tail -n 4
  done
  nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader 2>/dev/null
}

case "${1:-}" in
  start) shift; start "$@" ;;
  wait) shift; wait_all "$@" ;;
  *) echo "usage: experiments/experiment_real_bg.sh start NAME [VAR=VALUE ...] -- PHASE ... | wait SECONDS" >&2; exit 2 ;;
esac
