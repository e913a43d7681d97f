// CheckpointKeeper: which of a run's checkpoints stay on disk. A checkpoint counts as good once a
// later loss or held-out evaluation computed from its weights passed the divergence rule; until
// then the previous good one stays. Private to src/train.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace linear_ard::train {

class CheckpointKeeper {
 public:
  // `active`: this rank writes (rank 0); `resumed_step`: the checkpoint a resumed run started from,
  // unchecked until its first step passes.
  CheckpointKeeper(std::string output, bool active, std::optional<int64_t> resumed_step);
  // checkpoint-<step> was written; `checked`: an evaluation of its weights already passed.
  void saved(int64_t step, bool checked);
  // The unchecked checkpoint is good: the older ones go.
  void passed();
  // Removes the unchecked checkpoint (its weights led to the divergence); returns the end of the
  // error message, saying what is left.
  std::string diverged();

 private:
  std::string output_;
  bool active_;
  std::optional<int64_t> unchecked_;
};

}  // namespace linear_ard::train
