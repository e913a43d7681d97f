// tune: the recipe search of `linear-ard tune` (docs/tune.md). Short trials of a restore config over
// a declared grid of settings (objective, trainable set, learning rate, ...), each on a fraction of
// the full run's steps (the config's, or those that train a token budget) and scored on the run's own
// validation split (KL to the native model with the config's retrieval rule), then the full run of
// the winner. Every trial and the final run are
// restore runs in folders of their own, resumed where an earlier attempt stopped.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// One axis of the grid: a restore config key, or several joined by commas that take the same value
// ("lr,stage2.lr": both stages' learning rate), and the values the trials give it (as YAML, the way
// a key=value override reads them).
struct TuneAxis {
  std::string key;
  std::vector<std::string> values;
};

// "KEY=V1,V2,..." (a list in brackets stays one value: "data=[a.jsonl,b.jsonl]" is not split)
// -> an axis; "K1,K2=V1,V2" sets K1 and K2 to each value together. Throws std::invalid_argument
// naming the spec: no '=', an empty key or value, a key given twice across `specs`, or a key the
// trials set themselves (steps, output, resume, overwrite, ...).
std::vector<TuneAxis> tune_grid_parse(const std::vector<std::string>& specs);

// Every combination of the axes' values, in order (the last axis varies fastest), as key=value
// overrides; one empty combination for an empty grid.
std::vector<std::vector<std::string>> tune_grid_expand(const std::vector<TuneAxis>& grid);

// `--budget`'s text -> tokens: a whole positive number, plain ("4260000") or with a decimal K, M or
// G suffix in either case ("4.26M" = 4260000), below 10^18. Throws std::invalid_argument naming --budget and the
// text otherwise (0, negative, a fraction of a token, another suffix, not a number, too large).
int64_t tune_budget_parse(const std::string& text);

struct TuneOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // key=value for every trial and the final run
  std::vector<TuneAxis> grid;
  double trial_fraction = 0.25;        // of each stage's steps (at least 1 a stage that has steps)
  // The full run's tokens: each stage's steps (warm-up, eval_every) scaled by the one factor that
  // makes the run train about this many (each combination of the grid its own factor); 0: the
  // config's steps.
  int64_t budget = 0;
  bool final_run = true;               // run the winner at the full steps
  // Runs one restore (the CLI's: the run, its TensorBoard follower and its plots).
  std::function<void(const RestoreConfig&)> restore;
};

// Runs (or resumes) the trials in OUTPUT/trials/, chooses the winner and runs it in OUTPUT/restored/
// (OUTPUT: the config's `output`), writing OUTPUT/tune.json and OUTPUT/tune.md as it goes. A trial
// that fails (diverges, runs out of memory) is reported and left out of the choice; a signal stops
// the tune (rerunning the command resumes it). Returns tune.json's content. Throws
// std::invalid_argument for a bad grid or config (before any trial runs) and std::runtime_error when
// every trial failed.
nlohmann::json tune_run(const TuneOptions& options);

}  // namespace linear_ard::train
