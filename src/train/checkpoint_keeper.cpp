// checkpoint_keeper: pruning checkpoints once a newer one is known good, removing the one a
// divergence came from.
#include "checkpoint_keeper.h"

#include <filesystem>

#include "linear_ard/train/checkpoint.h"  // defines: checkpoint_prune, checkpoint_remove, checkpoint_latest

namespace linear_ard::train {

CheckpointKeeper::CheckpointKeeper(std::string output, bool active, std::optional<int64_t> resumed_step)
    : output_(std::move(output)), active_(active), unchecked_(resumed_step) {}

void CheckpointKeeper::saved(int64_t step, bool checked) {
  unchecked_ = step;
  if (checked) passed();
}

void CheckpointKeeper::passed() {
  if (active_ && unchecked_) checkpoint_prune(output_, *unchecked_);
  unchecked_.reset();
}

std::string CheckpointKeeper::diverged() {
  if (active_ && unchecked_) checkpoint_remove(output_, *unchecked_);
  const std::optional<std::string> kept = active_ ? checkpoint_latest(output_) : std::nullopt;
  return std::string("; the run diverged: no model is written") +
         (kept ? "; " + std::filesystem::path(*kept).filename().string() +
                     ", the last good checkpoint, is kept (resume=true continues from it)"
               : "");
}

}  // namespace linear_ard::train
