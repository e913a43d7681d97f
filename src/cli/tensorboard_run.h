// tensorboard_run: TensorBoard event files of a restore / pretrain run, written while it runs by
// scripts/tensorboard_follow.py (torch.utils.tensorboard's SummaryWriter) from OUT/metrics.jsonl.
#pragma once

#include <memory>
#include <string>

#include "python_run.h"  // defines: PythonFollower

namespace linear_ard::cli {

// Starts the follower on `output` (OUT/tensorboard/), on the main process only (RANK unset or 0),
// unless `enabled` is false (config key `tensorboard`) or LINEAR_ARD_NO_TENSORBOARD=1; null when
// not started. It ends when the returned follower finishes or is destroyed (the run's end, however
// it ends). A follower that cannot start or fails is a warning, never the run's failure.
std::unique_ptr<PythonFollower> tensorboard_follow_start(const std::string& output, bool enabled);

}  // namespace linear_ard::cli
