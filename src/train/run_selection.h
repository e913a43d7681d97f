// RunSelection: which validated weights of a run become its model (config `select`): the
// validation records, the criterion's choice and why, and the weights of every record that may
// still be chosen, kept as files in <output>/selection/ until the run writes its model. Private to
// src/train.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/train/restore_config.h"
#include "linear_ard/train/trainable_set.h"

namespace linear_ard::train {

class RunSelection {
 public:
  // `output`: the run's folder; `active`: this rank writes (rank 0). A criterion other than `last`
  // reads each record's val_kl (and passkey_mean), which restore's validation gives.
  RunSelection(const SelectConfig& config, std::string output, bool active);

  // A resumed run: its validation records up to the checkpoint at `step` (metrics.jsonl's eval
  // lines); the weight files of later validations, which the resumed run repeats, are removed.
  void resume(const std::vector<nlohmann::json>& records, int64_t step);
  // A finite validation record of the current weights, `trainables`: kept when it may be chosen.
  void observe(const nlohmann::json& record, const TrainableSet& trainables);

  // The chosen record's index in records(), if any.
  std::optional<size_t> chosen() const;
  const std::vector<nlohmann::json>& records() const { return records_; }
  // training_summary.json's "validation": criterion, passkey_margin, chosen_step, chosen, why, records.
  nlohmann::json summary() const;
  // Loads the chosen weights into `trainables` (rank 0, at the end of a run); false when there is
  // no validation to choose from, leaving them as they are.
  bool chosen_load(TrainableSet& trainables) const;
  // Whether the chosen record's weight file is on disk (false when nothing is chosen).
  bool chosen_kept() const;
  // Removes the weight files (after the model is written).
  void files_remove() const;

 private:
  // Whether record i may still be chosen, whatever validations follow.
  bool candidate(size_t i) const;
  std::string file(int64_t step) const;

  SelectConfig config_;
  std::string folder_;
  bool active_;
  std::vector<nlohmann::json> records_;
  std::vector<bool> kept_;  // records_[i]'s weights are on disk
};

}  // namespace linear_ard::train
