// plot_run: draws a command's figures with scripts/plot.py (matplotlib, PNG + SVG) once its JSONL /
// JSON files are written, so users can restyle them by editing or re-running the script.
#pragma once

#include <string>
#include <vector>

namespace linear_ard::cli {

// Runs `<python> <plot.py> <args...>` and waits for it (python_run.h: which Python). plot.py:
// $LINEAR_ARD_PLOT_SCRIPT, else python_script("plot.py"). A plot that cannot be drawn (no matplotlib, no script) is a warning
// on stderr naming the command to run by hand, never a failure of the command that asked for it.
// `quiet`: no "[plot]" line on success. With LINEAR_ARD_NO_PLOT=1 in the environment nothing runs
// (the test suites set it; they draw the plots they check themselves).
void plot_run(const std::vector<std::string>& args, bool quiet);

// After a restore / pretrain run into `output`: training_curves.png / .svg from its metrics.jsonl,
// on the main process only (RANK unset or 0).
void plot_training_curves(const std::string& output);

}  // namespace linear_ard::cli
