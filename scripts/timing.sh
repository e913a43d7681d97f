# Sourced by the scripts: how long each part of a run took, printed as
#   time: LABEL: W s wall, C s CPU
# C is the CPU time of the processes the part ran, all cores together: on a machine shared with
# other work the wall time grows, the CPU time much less. With LINEAR_ARD_TIMES naming a file
# (.ci/run sets it), each line is appended there too, for a summary of every part at the end.
#   linear_ard_timed LABEL COMMAND...       runs COMMAND (a program, not a shell function: set -e
#                                           does not reach inside one here) and returns its status
#   mark=$(linear_ard_mark) ... linear_ard_report LABEL "$mark"     the time since the mark

# The CPU time (user + system, in clock ticks) of this shell's finished child processes.
_linear_ard_child_ticks() {
  local stat
  read -r -a stat </proc/$$/stat
  echo $((stat[15] + stat[16]))
}

linear_ard_mark() {
  echo "$SECONDS $(_linear_ard_child_ticks)"
}

linear_ard_report() {
  local label="$1" seconds ticks line
  read -r seconds ticks <<<"$2"
  line="time: $label: $((SECONDS - seconds)) s wall, $((($(_linear_ard_child_ticks) - ticks) / $(getconf CLK_TCK))) s CPU"
  echo "$line"
  if [[ -n "${LINEAR_ARD_TIMES:-}" ]]; then echo "$line" >>"$LINEAR_ARD_TIMES"; fi
}

linear_ard_timed() {
  local label="$1" mark rc=0
  shift
  mark=$(linear_ard_mark)
  "$@" || rc=$?
  linear_ard_report "$label" "$mark"
  return "$rc"
}
